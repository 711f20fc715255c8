"""The requests of the skills extension on the SDK's session (imports ``mcp``: imported when a
ready server declares the extension)."""

from __future__ import annotations

from typing import Any, Literal, cast

import mcp.types as types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from kairox.errors import ToolError

__all__ = ["list_page"]

#: a page as the server sent it: kairox checks it entry by entry (kairox_mcp.skills), so that
#: one bad entry is reported and the others load (a model of the whole would fail them all)
_RAW = TypeAdapter(dict[str, Any])


class _ListSkillsParams(types.RequestParams):
    cursor: str | None = None


class _ListSkillsRequest(types.Request[_ListSkillsParams, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"
    params: _ListSkillsParams


async def list_page(session: ClientSession, server: str, cursor: str | None, timeout: float) -> dict[str, Any]:
    """One page of ``skills/list``: the result as a plain mapping."""
    request = _ListSkillsRequest(params=_ListSkillsParams(cursor=cursor))
    try:
        # the SDK types the result as a model; a TypeAdapter of a mapping is what it also takes
        page: dict[str, Any] = await session.send_request(
            request, cast(Any, _RAW), request_read_timeout_seconds=timeout
        )
        return page
    except MCPError as exc:
        raise ToolError(f"skills/list failed (MCP server {server}): {exc.message} (code {exc.code})") from exc
    except ValueError as exc:  # pydantic's ValidationError: the result is not an object
        raise ToolError(f"skills/list failed (MCP server {server}): the result is not an object") from exc

"""Helpers for the stdio transport tests (tests/stdio and tests/reliability).

``open_session`` runs the SDK's ``ClientSession`` directly over a
:class:`StdioTransport` connection, as kairox-mcp's client does.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from peers import fixture_server

from kairox_mcp.config import McpServerConfig
from kairox_mcp.transport import ConnectContext
from kairox_stdio import StdioTransport

#: short grace periods: the fault tests stop many servers
FAST = StdioTransport(shutdown_grace=0.5, term_grace=0.5, kill_wait=2.0)


def server(name: str, *args: str, **fields: Any) -> McpServerConfig:
    """A stdio entry running ``tests/fixtures/mcp_servers/<name>.py``."""
    argv = fixture_server(name)
    return McpServerConfig(command=argv[0], args=[*argv[1:], *args], **fields)


def context(workspace: Path, name: str = "test", **kwargs: Any) -> ConnectContext:
    kwargs.setdefault("env", dict(os.environ))
    return ConnectContext(server_name=name, workspace=workspace, **kwargs)


@asynccontextmanager
async def open_session(
    config: Any,
    ctx: ConnectContext,
    *,
    transport: StdioTransport = FAST,
    read_timeout: float | None = 10.0,
    message_handler: Any = None,
    initialize: bool = True,
) -> AsyncIterator[Any]:
    from mcp import ClientSession

    async with (
        transport.connect(config, ctx) as (read, write),
        ClientSession(read, write, read_timeout_seconds=read_timeout, message_handler=message_handler) as session,
    ):
        if initialize:
            await session.initialize()
        yield session


class Recorder:
    """A ``message_handler`` that keeps what it is given (notifications and transport errors)."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    async def __call__(self, item: Any) -> None:
        self.items.append(item)

    def errors(self) -> list[Exception]:
        return [i for i in self.items if isinstance(i, Exception)]

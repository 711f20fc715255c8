"""Claude Code's ``http`` and ``mcp_tool`` hook handlers.

Both answer what a command hook's stdout would, read by :func:`~.hookscripts.parse_answer`:

- ``http``: the hook's payload is POSTed as JSON to the handler's ``url`` (as the
  manifest wrote it: nothing expands in it, so a workspace bundle's trust covers the URL
  it contacts), with its ``headers`` (``$VAR``/``${VAR}`` expand, from the runtime's
  environment, only for the names in ``allowedEnvVars``; others become ""). Redirects are
  not followed; the whole exchange is bounded by the hook's timeout and the body by
  :data:`~.hookscripts.MAX_STDOUT`. A 2xx body is the answer (empty: nothing to say); any
  other status, a refused connection or a timeout is a failed hook.
- ``mcp_tool``: ``tool`` of MCP server ``server`` (the plugin's own ``<plugin>:<server>``
  when it has one by that name, else the runtime's) is called through the runtime's call
  pipeline, so the policy, the approver and the other guards decide on it as on any call;
  ``input``'s strings expand ``${path.in.payload}`` (``${tool_input.file_path}``). The
  tool's text is the answer; an error result is a failed hook. A call the policy (or the
  user) refuses is a failed hook that, for a ``pre_tool_call`` guard, blocks the call it
  guards: a guard the user's policy keeps from running has not said yes.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from .hookscripts import HookAnswer, ScriptHook

__all__ = ["expand_input", "header_values", "run_http", "run_mcp_tool"]

_ENV_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_PAYLOAD_REF = re.compile(r"\$\{([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)\}")
#: the ``mcp_tool`` hooks whose tool call is under way in this context: a hook never runs for its own call
_RUNNING: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar("kairox_manifests_hook_calls")


def header_values(headers: Mapping[str, str], allowed: list[str], env: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with ``$VAR`` / ``${VAR}`` replaced by ``env``'s value when ``VAR`` is in
    ``allowed``, by "" otherwise (Claude Code's rule: a header never carries a variable the
    hook did not list)."""
    ok = set(allowed)

    def value(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return env.get(name, "") if name in ok else ""

    return {k: _ENV_REF.sub(value, v) for k, v in headers.items()}


def _lookup(payload: Mapping[str, Any], path: str) -> Any:
    value: Any = payload
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return ""
        value = value[part]
    return value


def expand_input(value: Any, payload: Mapping[str, Any]) -> Any:
    """``value`` with ``${path}`` replaced by the payload's value at ``path`` (missing: "").
    A string that is one reference alone takes the value as it is (an object stays one)."""
    import json

    if isinstance(value, str):
        whole = _PAYLOAD_REF.fullmatch(value)
        if whole:
            return _lookup(payload, whole.group(1))

        def text(m: re.Match[str]) -> str:
            found = _lookup(payload, m.group(1))
            return found if isinstance(found, str) else json.dumps(found)

        return _PAYLOAD_REF.sub(text, value)
    if isinstance(value, list):
        return [expand_input(v, payload) for v in value]
    if isinstance(value, dict):
        return {k: expand_input(v, payload) for k, v in value.items()}
    return value


async def run_http(hook: ScriptHook, payload: dict[str, Any]) -> HookAnswer:
    """POST ``payload`` to the hook's URL; its answer. Raises ``HookError`` when it fails."""
    import httpx2

    from kairox.ext import redact_url

    from .hookscripts import MAX_STDOUT, HookError, parse_answer

    target = hook.decl.target or {}
    url = str(target.get("url", ""))
    shown = redact_url(url)  # what errors and events say: no password, no secret query value
    headers = header_values(target.get("headers") or {}, target.get("allowedEnvVars") or [], hook.runtime.env)
    body = bytearray()
    status = 0
    try:
        with anyio.fail_after(hook.timeout):
            # trust_env=False: no proxy or netrc from this process's environment (the runtime's is the one of record)
            async with httpx2.AsyncClient(follow_redirects=False, trust_env=False, timeout=hook.timeout) as client:
                async with client.stream("POST", url, json=payload, headers=headers) as response:
                    status = response.status_code
                    async for chunk in response.aiter_bytes():
                        body.extend(chunk[: MAX_STDOUT + 1 - len(body)])
                        if len(body) > MAX_STDOUT:
                            raise HookError(f"{shown} answered more than {MAX_STDOUT} bytes")
    except TimeoutError:
        raise HookError(f"{shown} did not answer within {hook.timeout:g} s") from None
    except httpx2.HTTPError as exc:
        raise HookError(f"POST {shown} failed: {type(exc).__name__}: {exc}") from None
    if not 200 <= status < 300:
        raise HookError(f"POST {shown} answered HTTP {status}")
    text = body.decode("utf-8", "replace")
    try:
        return parse_answer(text, text_is_context=hook.decl.event in ("pre_turn", "session_start"))
    except ValueError as exc:
        raise HookError(str(exc), unreadable="{" in text) from None


def _tool_id(hook: ScriptHook, server: str, tool: str) -> str:
    if server in hook.mcp_servers:
        return f"{hook.plugin}.{server}.{tool}"
    return f"{server}.{tool}"


async def run_mcp_tool(hook: ScriptHook, payload: dict[str, Any], session: Any) -> HookAnswer | None:
    """Call the hook's MCP tool through the runtime; its answer (``None``: this hook's own
    call, which it does not guard). Raises ``HookError`` when it fails."""
    from kairox import PolicyDenied, ToolError

    from .hookscripts import HookAnswer, HookError, parse_answer

    running = _RUNNING.get(frozenset())
    if id(hook) in running:
        return None
    target = hook.decl.target or {}
    tool_id = _tool_id(hook, str(target.get("server", "")), str(target.get("tool", "")))
    arguments = expand_input(target.get("input") or {}, payload)
    token = _RUNNING.set(running | {id(hook)})
    try:
        with anyio.fail_after(hook.timeout):
            result = await hook.runtime.call_tool(tool_id, arguments, session=session, timeout=hook.timeout)
    except TimeoutError:
        raise HookError(f"{tool_id} did not answer within {hook.timeout:g} s") from None
    except PolicyDenied as exc:
        raise HookError(f"the call of {tool_id} was refused: {exc}", refused=True) from None
    except ToolError as exc:
        raise HookError(f"{tool_id} failed: {exc}") from None
    finally:
        _RUNNING.reset(token)
    if result.is_error:
        raise HookError(f"{tool_id} answered an error: {(result.text or '')[:200]}")
    text = result.text or ""
    if not text.strip():
        return HookAnswer()
    try:
        return parse_answer(text, text_is_context=hook.decl.event in ("pre_turn", "session_start"))
    except ValueError as exc:
        raise HookError(str(exc), unreadable="{" in text) from None

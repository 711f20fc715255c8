"""A server's failure, as the model reads it (``Session.call_tool(errors="result")``), the
event bus and ``kairox status``: the value of a secret-named variable its entry expanded
is never in it.

The attack: the user's own entry puts ``${SECRET_TOKEN}`` where kairox's errors quote it
(a URL query parameter whose name does not look secret, a command path). The server cannot
be reached, the model asks for its tool, and reads why it failed.
"""

from __future__ import annotations

import socket

import anyio
from security_helpers import SECRET, Clone, cli, output_of

from kairox import Event, ToolResult


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_secret_expanded_into_a_url_or_command_never_reaches_the_model(clone: Clone) -> None:
    clone.harness.write_config(
        f'[mcp_servers.web]\nurl = "http://127.0.0.1:{closed_port()}/mcp?q=${{SECRET_TOKEN}}"\n'
        '[mcp_servers.local]\ncommand = "/nonexistent/${SECRET_TOKEN}/server"\n',
        where="user",
    )
    seen: list[Event] = []

    async def model_calls() -> list[ToolResult]:
        async with clone.harness.open(load_entrypoints=True) as rt, rt.session() as session:
            rt.events.subscribe(seen.append)
            return [await session.call_tool(name, {}, errors="result") for name in ("web.search", "local.run")]

    results = anyio.run(model_calls)
    texts = [r.text or "" for r in results]
    assert all(r.is_error for r in results) and "web" in texts[0] and "local" in texts[1], texts
    status = output_of(cli(clone.harness, "status"))
    assert "/nonexistent/" in status, status
    assert SECRET not in "\n".join([*texts, *map(repr, seen), status])

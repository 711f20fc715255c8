"""The gateway passes its backends' log records and resource updates on to the clients that
asked, and to no one else (``kairox serve --http`` as a real process, two SDK clients of it on
the handshake revision, two ``tests/fixtures/mcp_servers/eventful.py`` backends ``ev`` and
``ok``): a record goes to a client that sent ``logging/setLevel``, at its level, under the
backend's name; an update of a resource to the clients subscribed to it until they
unsubscribe; nothing of a backend one of whose tools the policy denies.

Records and updates leave the gateway in the order they arrived, so "nothing came" is
checked behind a record that did come: ``ok``'s record, asked for after the call whose
record or update must not arrive."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import peers
import pytest
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from serve_helpers import TOKEN, Workspace, connect, serve_http, with_backend

pytestmark = [
    pytest.mark.anyio,
    # logging/setLevel and resources/subscribe are the handshake revisions' (deprecated by 2026-07-28)
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

EVENTFUL = peers.fixture_server("eventful")


def workspace(tmp_path: Path, user_config: str = "") -> Workspace:
    """The gateway's test workspace with two eventful backends, ``ev`` and ``ok``, both allowed."""
    from kairox_testing import trust_workspace

    ws = with_backend(tmp_path, "ev", *EVENTFUL, user_config='"ev.*" = "allow"\n"ok.*" = "allow"\n' + user_config)
    toml = ws.root / "kairox.toml"
    argv = ", ".join(repr(a) for a in EVENTFUL[1:])
    toml.write_text(toml.read_text() + f"\n[mcp_servers.ok]\ncommand = {EVENTFUL[0]!r}\nargs = [{argv}]\n")
    trust_workspace(ws.root, ws.home, env=ws.env())
    return ws


class Heard:
    """What one client was sent: log records, resource updates, list changes."""

    def __init__(self) -> None:
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.updates: list[str] = []
        self.changed: list[str] = []
        self.news = anyio.Event()

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self._news()

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updates.append(str(message.params.uri))
        elif str(getattr(message, "method", "")).endswith("/list_changed"):
            self.changed.append(message.method)
        self._news()

    def _news(self) -> None:
        self.news.set()
        self.news = anyio.Event()

    async def until(self, what: Any) -> None:
        with anyio.fail_after(30):
            while not what():
                await self.news.wait()

    def texts(self) -> list[tuple[str, str | None, Any]]:
        return [(r.level, r.logger, r.data) for r in self.logs]


@asynccontextmanager
async def clients(ws: Workspace, n: int = 2) -> AsyncIterator[list[tuple[Client, Heard]]]:
    """``n`` handshake-era clients of one ``kairox serve --http``, once its backends are up."""
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        async with AsyncExitStack() as stack:
            out = []
            for _ in range(n):
                heard = Heard()
                client = await stack.enter_async_context(
                    connect(url, mode="legacy", logging_callback=heard.log, message_handler=heard.message)
                )
                out.append((client, heard))
            await listed(out[0][0], "ok_log")
            yield out


@asynccontextmanager
async def modern_client(ws: Workspace) -> AsyncIterator[Client]:
    """A 2026-07-28 client of one ``kairox serve --http``, once ``ev`` is up."""
    with serve_http(ws, "--token-env", "MCP_TOKEN", env=ws.env(MCP_TOKEN=TOKEN)) as (url, _proc):
        async with connect(url, mode="auto") as client:
            assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
            await listed(client, "ev_change")
            yield client


async def listed(client: Client, tool: str) -> None:
    """Return once ``client`` is offered ``tool`` (its backend is up)."""
    with anyio.fail_after(60):
        while tool not in {t.name for t in (await client.list_tools()).tools}:  # noqa: ASYNC110
            await anyio.sleep(0.1)


async def test_log_records_go_to_the_clients_that_set_a_level_at_their_level(tmp_path: Path) -> None:
    async with clients(workspace(tmp_path), 3) as [(ca, a), (cb, b), (cc, c)]:
        assert ca.server_capabilities.logging is not None
        await ca.set_logging_level("warning")
        await cc.set_logging_level("error")
        # b's calls: a is sent what it asked for, c less (a higher level), b nothing (it did not ask)
        await cb.call_tool("ev_log", {"text": "careful", "level": "warning"})
        await cb.call_tool("ev_log", {"text": "chatty", "level": "info"})
        await ca.call_tool("ok_log", {"text": "barrier", "level": "error"})
        await a.until(lambda: any(r.data == "barrier" for r in a.logs))
        await c.until(lambda: any(r.data == "barrier" for r in c.logs))
        assert a.texts() == [("warning", "ev.eventful", "careful"), ("error", "ok.eventful", "barrier")]
        assert c.texts() == [("error", "ok.eventful", "barrier")]
        assert b.logs == []


async def test_updates_go_to_subscribed_clients_until_they_unsubscribe(tmp_path: Path) -> None:
    # ok forwards nothing here (its noop is denied), so memo://note is ev's alone
    async with clients(workspace(tmp_path, '"ok.noop" = "deny"\n')) as [(ca, a), (cb, b)]:
        assert ca.server_capabilities.resources is not None and ca.server_capabilities.resources.subscribe
        await ca.subscribe_resource("memo://note")
        await cb.call_tool("ev_change", {})
        await a.until(lambda: a.updates == ["memo://note"])
        # the list changes reach both (every handshake client is told what it can see changed)
        await b.until(
            lambda: {"notifications/resources/list_changed", "notifications/prompts/list_changed"} <= set(b.changed)
        )

        await ca.unsubscribe_resource("memo://note")
        await cb.call_tool("ev_change", {})
        await ca.set_logging_level("info")
        await cb.call_tool("ev_log", {"text": "barrier"})
        await a.until(lambda: any(r.data == "barrier" for r in a.logs))
        assert a.updates == ["memo://note"]  # the second change came after the unsubscribe
        assert b.updates == []  # never subscribed


async def test_a_backend_with_a_denied_tool_has_its_records_and_updates_withheld(tmp_path: Path) -> None:
    async with clients(workspace(tmp_path, '"ev.noop" = "deny"\n')) as [(ca, a), (cb, _b)]:
        await ca.set_logging_level("debug")
        await ca.subscribe_resource("memo://note")  # ok's: ev forwards nothing
        assert (await cb.call_tool("ev_log", {"text": "secret", "level": "error"})).is_error is False
        assert (await cb.call_tool("ev_change", {})).is_error is False
        await cb.call_tool("ok_log", {"text": "barrier", "level": "error"})
        await a.until(lambda: any(r.data == "barrier" for r in a.logs))
        assert [r for r in a.logs if r.logger is None or r.logger.startswith("ev")] == []
        assert a.updates == []


async def test_a_principal_denied_a_tool_of_a_backend_hears_none_of_its_records(tmp_path: Path) -> None:
    """The attack: [serve.principals] denies the token's principal ev's tool ``noop`` (the
    policy allows it); ev's records may be about any of its tools, and about other
    principals' calls of them, so that principal is sent none of them, only ok's."""
    rule = '\n[serve.principals]\n[[serve.principals.rules]]\nsubjects = ["token"]\ndeny_tools = ["ev_noop"]\n'
    ws = workspace(tmp_path)
    (ws.home / "kairox.toml").write_text((ws.home / "kairox.toml").read_text() + rule)
    async with clients(ws, 1) as [(ca, a)]:
        await ca.set_logging_level("debug")
        assert (await ca.call_tool("ev_log", {"text": "about ev", "level": "error"})).is_error is False
        await ca.call_tool("ok_log", {"text": "barrier", "level": "error"})
        await a.until(lambda: any(r.data == "barrier" for r in a.logs))
        assert [r for r in a.logs if r.logger is None or r.logger.startswith("ev")] == []
        assert ("error", "ok.eventful", "barrier") in a.texts()


async def test_a_2026_listen_stream_gets_the_updates_of_the_resources_it_names(tmp_path: Path) -> None:
    """2026-07-28 has no ``resources/subscribe``: a ``subscriptions/listen`` stream names its
    URIs, the gateway subscribes them at their backend, and the updates ride that stream; a
    URI no exposed backend has is not honored."""
    ws = workspace(tmp_path, '"ok.noop" = "deny"\n')
    async with modern_client(ws) as client:
        async with client.listen(resource_subscriptions=["memo://note", "memo://nowhere"]) as sub:
            assert sub.honored.resource_subscriptions == ["memo://note"]
            await client.call_tool("ev_change", {})
            with anyio.fail_after(30):
                event = await sub.__anext__()
            assert isinstance(event, ResourceUpdated) and event.uri == "memo://note"


async def test_a_backend_that_restarts_is_asked_for_records_again(tmp_path: Path) -> None:
    """The level is a property of one connection to the backend: after a crash and restart
    the gateway asks the new one again, so the client's records keep coming."""
    async with clients(workspace(tmp_path), 1) as [(ca, a)]:
        await ca.set_logging_level("info")
        await ca.call_tool("ev_log", {"text": "before"})
        await a.until(lambda: any(r.data == "before" for r in a.logs))
        assert (await ca.call_tool("ev_crash", {})).is_error
        with anyio.fail_after(60):
            while not any(r.data == "after" for r in a.logs):
                await ca.call_tool("ev_log", {"text": "after"})  # an error until the backend is back
                with anyio.move_on_after(1):
                    await a.until(lambda: any(r.data == "after" for r in a.logs))


async def test_a_backend_that_restarts_is_subscribed_again(tmp_path: Path) -> None:
    async with clients(workspace(tmp_path, '"ok.noop" = "deny"\n'), 1) as [(ca, a)]:
        await ca.subscribe_resource("memo://note")
        assert (await ca.call_tool("ev_crash", {})).is_error
        with anyio.fail_after(60):
            while not a.updates:
                await ca.call_tool("ev_change", {})  # an error until the backend is back
                with anyio.move_on_after(1):
                    await a.until(lambda: bool(a.updates))
        assert set(a.updates) == {"memo://note"}


async def test_a_principal_denied_a_resource_cannot_subscribe_to_it(tmp_path: Path) -> None:
    """The attack: [serve.principals] hides ev's memo://note (resource "note", ev.note) from the
    token's principal; it reads as not found, and subscribing to it (handshake) or naming it on
    a listen stream (2026-07-28) must not bring its updates either."""
    rule = '\n[serve.principals]\n[[serve.principals.rules]]\nsubjects = ["token"]\ndeny_tools = ["ev.note"]\n'
    ws = workspace(tmp_path, '"ok.noop" = "deny"\n')
    (ws.home / "kairox.toml").write_text((ws.home / "kairox.toml").read_text() + rule)
    async with clients(ws, 1) as [(ca, a)]:
        with pytest.raises(MCPError, match="no MCP server"):
            await ca.subscribe_resource("memo://note")
        await ca.call_tool("ev_change", {})
        await ca.set_logging_level("info")
        await ca.call_tool("ev_log", {"text": "barrier"})  # ev's own record, after its update
        await a.until(lambda: any(r.data == "barrier" for r in a.logs))
        assert a.updates == []
    async with modern_client(ws) as client:
        async with client.listen(resource_subscriptions=["memo://note"]) as sub:
            assert not sub.honored.resource_subscriptions

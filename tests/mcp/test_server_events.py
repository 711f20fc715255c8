"""Server events reach the host: resource/prompt list changes, resource updates (with
subscribe), log records (events, ``kairox mcp logs``, ``log_level``), completions, and each
server's ``instructions`` in ``turn_context`` (labelled by server, bounded).

The SDK server tests/fixtures/mcp_servers/eventful.py over stdio and streamable HTTP, and
server-everything (subscriptions and ``logging/setLevel``, which it serves).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_helpers import open_runtime
from test_callbacks import TRANSPORTS, sdk_entry, yes

from kairox import Runtime
from kairox._context import MAX_PROVIDER_INSTRUCTIONS, MAX_SOURCE_INSTRUCTIONS
from kairox.errors import ConfigError, ToolError
from kairox_mcp import (
    McpLogMessage,
    McpPromptsChanged,
    McpResourcesChanged,
    McpResourceUpdated,
    McpServerConfig,
    manager_of,
)
from kairox_mcp.client import MAX_LOG_DATA, log_data_text

pytestmark = [pytest.mark.anyio]


async def wait_for(seen: list[Any], what: Callable[[Any], bool], timeout: float = 20) -> Any:
    with anyio.fail_after(timeout):
        while True:
            for event in seen:
                if what(event):
                    return event
            await anyio.sleep(0.02)


@pytest.mark.integration
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_list_changes_updates_and_log_records_are_events(
    tmp_path: Path, transport: str, events_of: Callable[[Runtime], list[Any]]
) -> None:
    with sdk_entry("eventful", transport) as entry:
        async with open_runtime(tmp_path, {"eventful": entry}) as rt:
            seen = events_of(rt)
            assert (await rt.call_tool("eventful.change", approver=yes)).text == "changed"
            await wait_for(seen, lambda e: isinstance(e, McpResourcesChanged) and e.server == "eventful")
            await wait_for(seen, lambda e: isinstance(e, McpPromptsChanged) and e.server == "eventful")
            updated = await wait_for(seen, lambda e: isinstance(e, McpResourceUpdated))
            await rt.call_tool("eventful.log", {"text": "hello there", "level": "warning"}, approver=yes)
            record = await wait_for(seen, lambda e: isinstance(e, McpLogMessage) and e.data == "hello there")
            structured = await wait_for(seen, lambda e: isinstance(e, McpLogMessage) and e.level == "debug")
            logs = manager_of(rt).logs("eventful")
    assert updated.server == "eventful" and updated.uri == "memo://note"
    assert (record.server, record.level, record.logger) == ("eventful", "warning", "eventful")
    assert '"n": 1' in structured.data and "sk-secretsecretsecret1234" not in structured.data  # redacted
    assert "[log warning eventful] hello there" in logs
    assert record.to_dict()["kind"] == "McpLogMessage"


@pytest.mark.integration
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_completions_of_a_prompt_argument(tmp_path: Path, transport: str) -> None:
    with sdk_entry("eventful", transport) as entry:
        async with open_runtime(tmp_path, {"eventful": entry}) as rt:
            mcp = manager_of(rt)
            assert await mcp.complete("eventful", prompt="visit", argument="city", value="Pa") == ["Paris", "Parma"]
            assert await mcp.complete("eventful", prompt="other", argument="x", value="") == []
            with pytest.raises(Exception, match="exactly one of"):
                await mcp.complete("eventful", argument="city", value="")


@pytest.mark.integration
async def test_server_instructions_are_in_turn_context_labelled_and_bounded(tmp_path: Path) -> None:
    with sdk_entry("eventful") as short, sdk_entry("eventful", env={"EVENTFUL_REPEAT": "1000"}) as long:
        async with open_runtime(tmp_path, {"eventful": short, "verbose": long}) as rt:
            async with rt.session() as s:
                tc = await s.turn_context("take a note")
    by_source = {i.source: i for i in tc.instructions}
    assert by_source["MCP server eventful"].text == "Keep notes with the memo tools."
    assert by_source["MCP server eventful"].scope == "provider"
    verbose = by_source["MCP server verbose"].text
    assert len(verbose) < MAX_SOURCE_INSTRUCTIONS + 100
    assert verbose.endswith("more characters of MCP server verbose's instructions left out]")
    assert "<!-- instructions from MCP server eventful -->\nKeep notes with the memo tools." in tc.render()


@pytest.mark.integration
async def test_subscribe_and_log_level_against_server_everything(
    tmp_path: Path, everything_js: Path, events_of: Callable[[Runtime], list[Any]]
) -> None:
    entry = {"command": "node", "args": [str(everything_js), "stdio"]}
    uri = "demo://resource/static/document/architecture.md"
    async with open_runtime(tmp_path, {"everything": entry, "quiet": {**entry, "log_level": "emergency"}}) as rt:
        seen = events_of(rt)
        mcp = manager_of(rt)
        await mcp.subscribe("everything", uri)  # server-everything logs the request (info)
        acked = await wait_for(seen, lambda e: isinstance(e, McpLogMessage) and "Subscribe" in e.data)
        assert acked.server == "everything" and acked.level == "info"
        await mcp.subscribe("quiet", uri)  # the same, below the level it was told
        await rt.call_tool("everything.toggle-subscriber-updates", approver=yes)  # an update every 5 s
        updated = await wait_for(seen, lambda e: isinstance(e, McpResourceUpdated) and e.server == "everything")
        assert updated.uri == uri
        assert not [e for e in seen if isinstance(e, McpLogMessage) and e.server == "quiet"]
        await mcp.unsubscribe("everything", uri)
        await mcp.set_log_level("everything", "debug")
        assert await mcp.complete("everything", prompt="completable-prompt", argument="department", value="E") == [
            "Engineering"
        ]
        named = await mcp.complete(
            "everything", prompt="completable-prompt", argument="name", value="", context={"department": "Support"}
        )
        assert named == ["John", "Kim", "Lee"]


@pytest.mark.integration
async def test_subscribe_to_a_server_that_cannot_says_so(tmp_path: Path) -> None:
    with sdk_entry("eventful") as entry:
        async with open_runtime(tmp_path, {"eventful": entry}) as rt:
            with pytest.raises(ToolError, match="does not support resource subscriptions"):
                await manager_of(rt).subscribe("eventful", "memo://note")


# -- parsers of server messages and config -------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


@given(JSON)
@settings(max_examples=300, deadline=None)
def test_any_log_data_becomes_one_bounded_text(data: Any) -> None:
    text = log_data_text(data)
    assert isinstance(text, str)
    assert len(text) <= MAX_LOG_DATA + 40
    if isinstance(data, str) and len(data) <= MAX_LOG_DATA and "=" not in data and ":" not in data:
        assert text == data or "*" in text  # as sent, unless something looked like a secret


def test_log_data_is_cut_before_it_is_read_and_never_shows_half_a_secret() -> None:
    """A server's megabyte of log data costs 4,000 characters of redaction, and the word the
    cut splits (``https://u:S3CR...``: not recognisable as a secret) is not shown."""
    prefix = "x " * ((MAX_LOG_DATA - 100) // 2)
    text = log_data_text(prefix + "https://u:" + "S3CRET" * 200_000 + "@h.example/ tail")
    assert "S3CRET" not in text
    assert text.startswith(prefix.rstrip()) and len(text) <= MAX_LOG_DATA + 40
    assert text.endswith("more characters]")


@given(st.text(max_size=12))
@settings(max_examples=200, deadline=None)
def test_log_level_and_sampling_settings_are_checked(value: str) -> None:
    for key, allowed in (
        ("log_level", ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")),
        ("sampling", ("ask", "allow", "deny")),
        ("elicitation", ("ask", "allow", "deny")),
    ):
        try:
            config = McpServerConfig(command="x", **{key: value})
        except ConfigError as exc:
            assert value not in allowed
            assert exc.path == key if hasattr(exc, "path") else key in str(exc)
        else:
            assert value in allowed and getattr(config, key) == value


class Talkative:
    name = "talkative"

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def instructions(self) -> list[tuple[str, str]]:
        return [(f"source {i}", t) for i, t in enumerate(self.texts)]


@given(st.lists(st.text(max_size=3) | st.integers(0, 12_000).map(lambda n: "x" * n), max_size=8))
@settings(max_examples=100, deadline=None)
def test_provider_instructions_stay_within_their_bounds(texts: list[str]) -> None:
    from types import SimpleNamespace

    from kairox._context import provider_instructions

    problems: list[str] = []
    runtime = SimpleNamespace(providers=[Talkative(texts)])
    out = provider_instructions(runtime, problems)  # type: ignore[arg-type]
    assert sum(len(i.text) for i in out) <= MAX_PROVIDER_INSTRUCTIONS
    for i in out:
        assert len(i.text) <= MAX_SOURCE_INSTRUCTIONS + 80 and i.text.strip()
    kept = {i.source for i in out}
    expected = {f"source {n}" for n, t in enumerate(texts) if t.strip()}
    assert kept | {p.split("instructions of ")[1].split(" left out")[0] for p in problems} == expected

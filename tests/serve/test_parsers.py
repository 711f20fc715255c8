"""Property tests of what the gateway reads from outside: the ``[serve]`` section, resource
URIs of ``resources/read``, the ``Authorization``, ``Host`` and ``Origin`` headers."""

from __future__ import annotations

import string
from typing import Any

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox import ApprovalAnswer, ConfigError
from kairox.ext import structure
from kairox_serve.approval import APPROVAL_SCHEMA, ONE_CALL_SCHEMA, UnofferedAnswer, answer_of
from kairox_serve.config import MAX_LISTENS, ServeConfig
from kairox_serve.convert import BadSkillUri, parse_skill_uri, skill_uri
from kairox_serve.http import bearer_token, host_allowed, is_loopback_host, origin_allowed

FIELDS = [
    "name",
    "version",
    "instructions",
    "tools",
    "deny_tools",
    "prompts",
    "resources",
    "skills",
    "deny_skills",
    "max_listens",
    "max_listens_per_session",
    "max_held_calls",
    "held_call_timeout",
    "header_timeout",
    "body_timeout",
    "max_connections",
    "max_sessions",
    "session_idle_timeout",
]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-2, 20), st.floats(allow_nan=False), st.text(max_size=20)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
tables = st.dictionaries(st.sampled_from([*FIELDS, "unknown", "tool"]), values, max_size=6)


@given(tables)
def test_serve_section_structures_or_names_the_field(raw: dict[str, Any]) -> None:
    try:
        config = structure(raw, ServeConfig, path="serve", file="kairox.toml")
    except ConfigError as exc:
        assert exc.file == "kairox.toml"
        assert exc.path.startswith("serve")
        assert str(exc).startswith("kairox.toml: serve")
        return
    assert isinstance(config, ServeConfig)
    assert config.name.strip() and isinstance(config.prompts, bool)
    for patterns in (config.tools, config.deny_tools, config.skills, config.deny_skills):
        assert all(isinstance(p, str) and p for p in patterns)
    counts = (config.max_listens, config.max_listens_per_session, config.max_held_calls)
    for limit in (*counts, config.max_connections, config.max_sessions):
        assert type(limit) is int and 1 <= limit <= MAX_LISTENS
    for seconds, most in (
        (config.held_call_timeout, 86_400),
        (config.session_idle_timeout, 86_400),
        (config.header_timeout, 3_600),
        (config.body_timeout, 3_600),
    ):
        assert not isinstance(seconds, bool) and isinstance(seconds, int | float) and 0 < seconds <= most


def test_serve_section_errors_by_example() -> None:
    with pytest.raises(ConfigError, match=r"kairox.toml: serve.tools\[1\]: expected a string"):
        structure({"tools": ["fs_*", 3]}, ServeConfig, path="serve", file="kairox.toml")
    with pytest.raises(ConfigError, match="serve"):
        structure({"name": "  "}, ServeConfig, path="serve", file="kairox.toml")
    with pytest.raises(ConfigError, match="tool"):
        structure({"tool": ["x"]}, ServeConfig, path="serve", file="kairox.toml")
    with pytest.raises(ConfigError, match=r"kairox.toml: serve.max_listens: must be between 1 and 100000 \(got 0\)"):
        structure({"max_listens": 0}, ServeConfig, path="serve", file="kairox.toml")
    with pytest.raises(ConfigError, match=r"kairox.toml: serve.max_listens_per_session: expected an integer"):
        structure({"max_listens_per_session": "8"}, ServeConfig, path="serve", file="kairox.toml")
    with pytest.raises(ConfigError, match=r"kairox.toml: serve.deny_skills\[0\]: an empty pattern"):
        structure({"deny_skills": [""]}, ServeConfig, path="serve", file="kairox.toml")
    limits = structure({"max_listens": 2, "max_listens_per_session": 1}, ServeConfig, path="serve")
    assert (limits.max_listens, limits.max_listens_per_session) == (2, 1)
    assert (ServeConfig().max_listens, ServeConfig().max_listens_per_session) == (1024, 8)
    assert (ServeConfig().max_held_calls, ServeConfig().held_call_timeout) == (64, 300)
    held = structure({"max_held_calls": 2, "held_call_timeout": 1.5}, ServeConfig, path="serve")
    assert (held.max_held_calls, held.held_call_timeout) == (2, 1.5)
    with pytest.raises(ConfigError, match=r"serve.held_call_timeout: must be more than 0 and at most 86400"):
        structure({"held_call_timeout": 0}, ServeConfig, path="serve", file="kairox.toml")
    with pytest.raises(ConfigError, match=r"serve.max_held_calls: must be between 1 and 100000 \(got 0\)"):
        structure({"max_held_calls": 0}, ServeConfig, path="serve", file="kairox.toml")
    front = ServeConfig()
    assert (front.header_timeout, front.body_timeout, front.max_connections) == (10, 30, 256)
    assert (front.max_sessions, front.session_idle_timeout) == (256, 1800)
    for field, value, error in (
        ("header_timeout", 0, "must be more than 0 and at most 3600 seconds (got 0)"),
        ("body_timeout", 7200, "must be more than 0 and at most 3600 seconds (got 7200)"),
        ("header_timeout", "10", "expected a number, got '10'"),
        ("body_timeout", True, "expected a number"),
        ("header_timeout", float("nan"), "must be more than 0"),
        ("session_idle_timeout", float("inf"), "must be more than 0 and at most 86400 seconds (got inf)"),
        ("max_connections", 0, "must be between 1 and 100000 (got 0)"),
        ("max_sessions", 1.5, "expected an integer"),
    ):
        with pytest.raises(ConfigError) as caught:
            structure({field: value}, ServeConfig, path="serve", file="kairox.toml")
        assert str(caught.value).startswith(f"kairox.toml: serve.{field}: "), str(caught.value)
        assert error in str(caught.value), str(caught.value)
    config = structure({"deny_tools": ["shell_*"], "prompts": False}, ServeConfig, path="serve")
    assert config.exposes_tool("fs_read", "fs.read") and not config.exposes_tool("shell_exec", "shell.exec")


names = st.text(alphabet=string.ascii_letters + string.digits + "._-", min_size=1, max_size=12)
globs = st.text(alphabet=string.ascii_letters + "._-*?", min_size=1, max_size=8)


@given(st.lists(globs, max_size=3), st.lists(globs, min_size=1, max_size=3), names, names)
def test_a_deny_wins(allow: list[str], deny: list[str], exported: str, tool_id: str) -> None:
    config = ServeConfig(tools=allow, deny_tools=deny)
    if config.exposes_tool(exported, tool_id):
        assert not ServeConfig(tools=allow, deny_tools=[*deny, exported]).exposes_tool(exported, tool_id)
    assert not ServeConfig(tools=["*"], deny_tools=["*"]).exposes_tool(exported, tool_id)
    assert ServeConfig().exposes_tool(exported, tool_id)


parts = st.text(
    alphabet=st.characters(blacklist_characters="/\\\x00", blacklist_categories=("Cs",)), min_size=1, max_size=8
)


@given(st.text(min_size=1, max_size=20).filter(lambda s: "\x00" not in s), st.lists(parts, min_size=1, max_size=4))
def test_skill_uris_round_trip(name: str, path_parts: list[str]) -> None:
    relative = "/".join(path_parts)
    uri = skill_uri(name, relative)
    if any(p in (".", "..") for p in path_parts):
        with pytest.raises(BadSkillUri):
            parse_skill_uri(uri)
    else:
        assert parse_skill_uri(uri) == (name, relative)


@given(st.text(max_size=60))
def test_any_uri_parses_to_a_relative_path_or_is_refused(uri: str) -> None:
    for candidate in (uri, "skill://" + uri):
        try:
            name, relative = parse_skill_uri(candidate)
        except BadSkillUri:
            continue
        assert name and relative and not relative.startswith("/")
        assert ".." not in relative.split("/") and "." not in relative.split("/") and "\\" not in relative


@given(st.text(alphabet=st.characters(blacklist_categories=("Zs", "Cc", "Cs")), min_size=1, max_size=40))
def test_bearer_tokens(token: str) -> None:
    assert bearer_token(f"Bearer {token}") == token
    assert bearer_token(f"bearer   {token}  ") == token
    assert bearer_token(f"Basic {token}") is None
    assert bearer_token(token) is None or token.lower().startswith("bearer")


@given(st.text(max_size=60))
def test_any_authorization_header(header: str) -> None:
    token = bearer_token(header)
    assert token is None or (token and not any(c.isspace() for c in token))


@given(st.text(max_size=60), st.lists(st.text(max_size=30), max_size=2))
def test_any_origin_or_host_header(header: str, allowed: list[str]) -> None:
    allowed_origin = origin_allowed(header, allowed)
    assert isinstance(allowed_origin, bool)
    if allowed_origin and header.strip() not in allowed:
        assert header.strip().startswith(("http://", "https://"))
    assert isinstance(host_allowed(header), bool)


@pytest.mark.parametrize(
    ("origin", "ok"),
    [
        (None, True),
        ("http://localhost:5173", True),
        ("http://127.0.0.1", True),
        ("http://[::1]:8000", True),
        ("https://evil.example", False),
        ("http://localhost.evil.example", False),
        ("http://127.0.0.1.nip.io", False),
        ("null", False),
        ("http://user@localhost", False),
        ("http://localhost:99999", False),
    ],
)
def test_origins(origin: str | None, ok: bool) -> None:
    assert origin_allowed(origin) is ok


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1:8000", True),
        ("localhost", True),
        ("[::1]:8000", True),
        ("attacker.example:8000", False),
        ("127.0.0.1.nip.io", False),
        ("localhost:abc", False),
        ("", False),
        ("user@localhost", False),
    ],
)
def test_hosts(host: str, ok: bool) -> None:
    assert host_allowed(host) is ok


def test_loopback_hosts() -> None:
    assert is_loopback_host("127.0.0.2") and is_loopback_host("::1") and is_loopback_host("[::1]")
    assert not is_loopback_host("0.0.0.0") and not is_loopback_host("10.0.0.1") and not is_loopback_host("example.com")


# -- results from backends: what a backend sent besides the content is kept, or dropped -----

extras = st.one_of(st.none(), st.dictionaries(st.sampled_from(["audience", "priority", "lastModified", "x"]), values))


@given(st.lists(st.tuples(st.text(max_size=10), extras, extras), max_size=4), extras)
def test_any_result_converts_and_keeps_its_text(blocks: list[tuple[str, Any, Any]], meta: Any) -> None:
    from kairox import TextContent, ToolResult
    from kairox_serve.convert import call_result

    result = ToolResult(
        content=tuple(TextContent(text, annotations=ann, meta=m) for text, ann, m in blocks), meta=meta or {}
    )
    converted = call_result(result)
    assert [b.text for b in converted.content] == [text for text, _, _ in blocks]  # type: ignore[union-attr]
    for block, (_, ann, m) in zip(converted.content, blocks, strict=True):
        if not ann:  # nothing that can be invalid: the block's _meta is kept as it came
            assert block.meta == (m or None)
        elif block.meta is not None:  # kept with valid annotations, or all extras dropped
            assert block.meta == m


def test_result_extras_pass_through_by_example() -> None:
    from kairox import ResourceContent, ResourceLink, TextContent, ToolResult
    from kairox_serve.convert import call_result

    result = ToolResult(
        content=(
            TextContent("a", annotations={"audience": ["user"], "priority": 0.5}, meta={"k": 1}),
            ResourceLink(uri="file:///x", name="x", title="X", size=3, icons=({"src": "https://e.example/i.png"},)),
            ResourceContent(uri="file:///y", text="t", meta={"m": 2}),
            TextContent("b", annotations={"priority": "high"}),  # not MCP: dropped, the text stays
        ),
        meta={"io.modelcontextprotocol/serverInfo": {"name": "backend"}, "trace": "t1"},
    )
    wire = call_result(result).model_dump(by_alias=True, exclude_none=True, mode="json")
    text, link, resource, bad = wire["content"]
    assert text == {
        "type": "text",
        "text": "a",
        "annotations": {"audience": ["user"], "priority": 0.5},
        "_meta": {"k": 1},
    }
    assert (link["title"], link["size"], link["icons"]) == ("X", 3, [{"src": "https://e.example/i.png"}])
    assert resource["resource"]["_meta"] == {"m": 2}
    assert bad == {"type": "text", "text": "b"}
    assert wire["_meta"] == {"trace": "t1"}  # the backend's serverInfo is not the gateway's


decisions = st.one_of(st.sampled_from(["once", "session", "deny", "Session", ""]), st.text(max_size=12), scalars)
replies = st.builds(
    lambda action, content: types.ElicitResult(action=action, content=content),
    st.sampled_from(["accept", "decline", "cancel"]),
    st.one_of(st.none(), st.dictionaries(st.sampled_from(["decision", "other"]), decisions, max_size=2)),
)


@given(replies | st.none() | scalars, st.sampled_from([APPROVAL_SCHEMA, ONE_CALL_SCHEMA]))
def test_an_answer_allows_only_what_the_form_offered(reply: Any, schema: dict[str, Any]) -> None:
    """Whatever the client sends back: only an accepted choice the form offered allows; an
    accepted choice it did not offer is refused saying so; a one-call form never allows
    for the session."""
    choices = [c["const"] for c in schema["properties"]["decision"]["oneOf"]]
    try:
        answer = answer_of(reply, schema)
    except UnofferedAnswer as exc:
        decision = reply.content["decision"]
        assert reply.action == "accept" and decision not in choices and "did not offer" in str(exc)
        return
    if answer is not ApprovalAnswer.DENY:
        assert reply.action == "accept" and reply.content["decision"] in choices
    if schema is ONE_CALL_SCHEMA:
        assert answer is not ApprovalAnswer.ALLOW_SESSION

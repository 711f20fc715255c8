"""The CLI's answer to a server's elicitation: a form on the terminal, declined without one.

The form parser (``kairox_cli._util.parse_form_schema`` / ``coerce_answer``) reads what a
server sends: property tests. The form itself runs in the real program on a pseudo-terminal
against the SDK server tests/fixtures/mcp_servers/asker.py.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import peers
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shared_helpers import on_pty, read_pty

from kairox_cli._util import FormField, coerce_answer, parse_form_schema
from kairox_testing import KairoxHarness

#: the kairox CLI as a real process, with test-sized stdio graces
KAIROX = peers.KAIROX_TEST_GRACES

# -- the form parser: property tests ---------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
KEYWORDS = st.sampled_from(
    ["type", "enum", "oneOf", "anyOf", "items", "minimum", "maximum", "minLength", "maxLength", "default", "title"]
)
PROPERTY_ISH = st.dictionaries(KEYWORDS, JSON | st.sampled_from(["string", "number", "integer", "boolean", "array"]))


@given(
    st.one_of(
        JSON,
        st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(st.text(max_size=6), PROPERTY_ISH, max_size=5)}
        ),
    )
)
@settings(max_examples=300, deadline=None)
def test_any_schema_parses_or_is_refused_with_a_value_error(schema: Any) -> None:
    try:
        fields = parse_form_schema(schema)
    except ValueError as exc:
        assert "requestedSchema" in str(exc)  # names where
        return
    assert isinstance(schema, dict)
    assert [f.name for f in fields] == list(schema.get("properties", {}))
    for f in fields:
        assert f.kind in ("string", "number", "integer", "boolean", "enum", "multi")
        if f.kind in ("enum", "multi"):
            assert f.choices
        if f.default is not None and f.kind == "enum":
            assert f.default in [v for v, _ in f.choices]


CHOICES = st.lists(
    st.text(st.characters(blacklist_characters=",", blacklist_categories=("Cs",)), min_size=1, max_size=6).filter(
        lambda t: t.strip() == t and not t.isdigit()
    ),
    min_size=1,
    max_size=5,
    unique=True,
)


@st.composite
def field_and_value(draw: st.DrawFn) -> tuple[FormField, Any]:
    kind = draw(st.sampled_from(["string", "number", "integer", "boolean", "enum", "multi"]))
    if kind == "string":
        value = draw(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20))
        lo = draw(st.none() | st.integers(0, len(value)))
        hi = draw(st.none() | st.integers(len(value), 30))
        return FormField("f", "string", min_length=lo, max_length=hi), value
    if kind in ("number", "integer"):
        num: float | int = (
            draw(st.integers(-(10**12), 10**12))
            if kind == "integer"
            else draw(st.floats(allow_nan=False, allow_infinity=False, width=64))
        )
        lo = draw(st.none() | st.just(float(num) - 1))
        hi = draw(st.none() | st.just(float(num) + 1))
        return FormField("f", kind, minimum=lo, maximum=hi), num
    if kind == "boolean":
        return FormField("f", "boolean"), draw(st.booleans())
    values = draw(CHOICES)
    choices = tuple((v, v.upper() if v.upper() not in values else v) for v in values)
    if kind == "enum":
        return FormField("f", "enum", choices=choices), draw(st.sampled_from(values))
    picked = draw(st.lists(st.sampled_from(values), unique=True))
    return FormField("f", "multi", choices=choices, min_items=len(picked), max_items=len(picked)), picked


def typed(field: FormField, value: Any) -> str:
    """What a user types for ``value``."""
    if field.kind == "boolean":
        return "yes" if value else "no"
    if field.kind == "multi":
        return ",".join(value)
    return repr(value) if isinstance(value, float) else str(value)


@given(field_and_value())
@settings(max_examples=400, deadline=None)
def test_what_the_user_types_for_a_valid_value_gives_that_value(case: tuple[FormField, Any]) -> None:
    field, value = case
    assert coerce_answer(field, typed(field, value)) == value


@given(field_and_value(), st.text(max_size=30))
@settings(max_examples=400, deadline=None)
def test_any_answer_is_a_value_within_the_constraints_or_a_value_error(case: tuple[FormField, Any], text: str) -> None:
    field, _ = case
    try:
        value = coerce_answer(field, text)
    except ValueError:
        return
    if field.kind == "string":
        assert (field.min_length or 0) <= len(value) <= (field.max_length if field.max_length is not None else math.inf)
    elif field.kind in ("number", "integer"):
        assert math.isfinite(value)
        assert (field.minimum if field.minimum is not None else -math.inf) <= value
        assert value <= (field.maximum if field.maximum is not None else math.inf)
        assert isinstance(value, int) if field.kind == "integer" else isinstance(value, float)
    elif field.kind == "boolean":
        assert isinstance(value, bool)
    elif field.kind == "enum":
        assert value in [v for v, _ in field.choices]
    else:
        assert set(value) <= {v for v, _ in field.choices} and len(set(value)) == len(value)


def test_the_schema_kinds_a_server_may_ask_for() -> None:
    fields = parse_form_schema(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "minLength": 1, "format": "email"},
                "n": {"type": "integer", "minimum": 1, "maximum": 9, "default": 3},
                "x": {"type": "number", "default": 2.5},
                "ok": {"type": "boolean", "default": True},
                "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Apple", "Banana"]},
                "titled": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}], "default": "s"},
                "many": {"type": "array", "items": {"anyOf": [{"const": "p", "title": "P"}]}, "maxItems": 1},
            },
            "required": ["name", "nope"],
        }
    )
    by = {f.name: f for f in fields}
    assert by["name"] == FormField("name", "string", title="Name", required=True, min_length=1, format="email")
    assert (by["n"].kind, by["n"].default, by["n"].minimum, by["n"].maximum) == ("integer", 3, 1.0, 9.0)
    assert by["legacy"].choices == (("a", "Apple"), ("b", "Banana"))
    assert coerce_answer(by["legacy"], "Banana") == "b" and coerce_answer(by["legacy"], "1") == "a"
    assert by["titled"].default == "s" and by["many"].choices == (("p", "P"),)
    with pytest.raises(ValueError, match="at most 9"):
        coerce_answer(by["n"], "10")
    with pytest.raises(
        ValueError, match=r"requestedSchema\.properties\.deep: cannot ask for a field of type \"object\""
    ):
        parse_form_schema({"type": "object", "properties": {"deep": {"type": "object"}}})


# -- the form on a terminal ----------------------------------------------------------------------


@pytest.fixture
def cli_home(tmp_path: Path) -> Path:
    """A KAIROX_HOME whose own kairox.toml declares the asker server (elicitation allowed:
    the user's own config, so the form comes without an approval first)."""
    home = tmp_path / "home"
    home.mkdir()
    command, *args = peers.fixture_server("asker")
    (home / "kairox.toml").write_text(
        f'[mcp_servers.asker]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\nelicitation = "allow"\nprotocol = "2025-11-25"\n'
    )
    (tmp_path / "ws").mkdir()
    return home


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    env.update({"KAIROX_HOME": str(home), "KAIROX_LOAD_PLUGINS": "mcp,stdio"})
    return env


def converse(args: list[str], home: Path, ws: Path, script: list[tuple[bytes, bytes]]) -> tuple[int, str, str]:
    """Run kairox with stdin and stderr on a pty; for each (expected, answer) in order, wait
    for ``expected`` after the last one and type ``answer``. Returns (exit code, stdout, tty)."""
    step = 0
    with on_pty([*KAIROX, *args], cwd=ws, env=_env(home), start_new_session=True) as (proc, master):
        at = 0

        def answer(seen: bytes) -> None:
            nonlocal step, at
            while step < len(script) and (found := seen.find(script[step][0], at)) >= 0:
                at = found + len(script[step][0])
                os.write(master, script[step][1])
                step += 1

        seen = read_pty(master, proc, timeout=90, poll=0.2, on_output=answer)
        out = proc.stdout.read().decode() if proc.stdout else ""
        code = proc.wait(timeout=30)
    assert step == len(script), (
        f"stuck waiting for {script[step][0]!r}; the terminal showed:\n{seen.decode(errors='replace')}"
    )
    return code, out, seen.decode(errors="replace")


@pytest.mark.integration
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pty")
def test_on_a_terminal_the_user_fills_in_the_form(tmp_path: Path, cli_home: Path, no_leftovers: None) -> None:
    question = "Who are you?\x1b]0;pwned\x07"  # a server's text must not drive the terminal
    args = ["--json", "tools", "call", "asker.ask_user", "--yes", "--args", json.dumps({"question": question})]
    script = [
        (b"[a]nswer, [d]ecline, or [c]ancel?", b"a\n"),
        (b"Name:", b"Ada\n"),
        (b"age (optional", b"old\n"),
        (b"expected an integer", b""),
        (b"age (optional", b"42\n"),
        (b"height (optional", b"\n"),
        (b"agree (yes/no)", b"y\n"),
        (b"color (optional", b"2\n"),
        (b"size (optional", b"Large\n"),
        (b"tags (numbers or values, comma-separated)", b"a,c\n"),
    ]
    code, out, tty = converse(args, cli_home, tmp_path / "ws", script)
    assert code == 0, (out, tty)
    assert "an MCP server asks you: Who are you?\\x1b]0;pwned\\x07" in tty
    assert "\x1b]0;pwned" not in tty
    answer = json.loads(json.loads(out)["content"][0]["text"])
    assert answer == {
        "action": "accept",
        "content": {"name": "Ada", "age": 42, "agree": True, "color": "green", "size": "l", "tags": ["a", "c"]},
    }


@pytest.mark.integration
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pty")
def test_on_a_terminal_a_url_is_shown_and_the_user_answers(tmp_path: Path, cli_home: Path, no_leftovers: None) -> None:
    args = ["--json", "tools", "call", "asker.ask_url", "--yes"]
    script = [(b"will you open it?", b"a\n")]
    code, out, tty = converse(args, cli_home, tmp_path / "ws", script)
    assert code == 0, (out, tty)
    assert "https://example.com/login?flow=7" in tty and "Sign in to continue" in tty
    assert json.loads(out)["content"][0]["text"] == "accept"


@pytest.mark.integration
def test_without_a_terminal_elicitation_is_declined(tmp_path: Path, cli_home: Path, no_leftovers: None) -> None:
    """In process (``KairoxHarness.cli``: stdin is no terminal); the pty tests above run the program."""
    harness = KairoxHarness(tmp_path / "ws", cli_home, env=_env(cli_home))

    def run(*args: str) -> Any:
        return harness.cli(*args, load_entrypoints=True)

    form = run("--json", "tools", "call", "asker.ask_user", "--yes", "--args", '{"question": "q"}')
    assert form.exit_code == 0, form.stderr
    assert json.loads(json.loads(form.stdout)["content"][0]["text"])["action"] == "decline"
    assert "declined: no terminal" in form.stderr
    url = run("tools", "call", "asker.ask_url", "--yes")
    assert url.stdout.strip() == "decline"
    assert "asks you to open https://example.com/login?flow=7 (declined: no terminal)" in url.stderr
    # -32042: the message and the URL to open are in the error shown
    login = run("tools", "call", "asker.needs_login", "--yes")
    assert login.exit_code == 1
    assert (
        "Authorization required: open https://example.com/authorize?x=1 (Authorize access), then try again"
        in login.stderr
    )


def test_tools_list_names_the_tools_a_server_lists_but_that_are_not_offered(tmp_path: Path) -> None:
    """server-everything's task-only tool: not registered, and `kairox tools list` says why."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    js = peers.everything_server_js()
    (home / "kairox.toml").write_text(
        f'[mcp_servers.everything]\ncommand = "node"\nargs = [{json.dumps(str(js))}, "stdio"]\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    env.update(KAIROX_HOME=str(home), HOME=str(tmp_path))
    # in process (the console script's path is tests/tools/test_tools_cli.py's)
    harness = KairoxHarness(ws, home, env=env)
    out = harness.cli("--json", "tools", "list", load_entrypoints=True)
    assert out.exit_code == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["not_offered"] == [
        {
            "id": "everything.simulate-research-query",
            "provider": "mcp",
            "reason": 'it must run as a task (execution.taskSupport is "required"), which kairox does not do',
        }
    ]
    assert "everything.simulate-research-query" not in {t["id"] for t in data["tools"]}
    text = harness.cli("tools", "list", load_entrypoints=True)
    assert "everything.simulate-research-query  mcp  not offered: it must run as a task" in text.stdout

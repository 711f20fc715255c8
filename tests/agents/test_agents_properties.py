"""Property tests of the agent file parser (outside input: any bundle's or repository's ``agents/*.md``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairox_agents import AgentDef, AgentError, OutputStyle, OutputStyleError, parse_agent, parse_output_style

FILE = "/plugins/kit/agents/some-agent.md"
STYLE_FILE = "/work/.claude/output-styles/my-style.md"

names = st.from_regex(r"[a-z][a-z0-9]{0,10}(-[a-z0-9]{1,8}){0,3}", fullmatch=True)
tool_names = st.sampled_from(["Read", "Grep", "Glob", "Bash", "Edit", "WebFetch", "mcp__git__status", "fs.read"])
# texts that survive a YAML round trip as JSON strings (JSON is YAML): printable, no surrogates
texts = st.text(
    st.characters(min_codepoint=32, max_codepoint=0x2FFF, exclude_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1
)
models = st.one_of(st.none(), st.sampled_from(["sonnet", "opus", "haiku", "claude-sonnet-4-5", "inherit"]))


@st.composite
def agent_files(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    """A valid agent file (frontmatter written as JSON values, which YAML reads as written)."""
    fields: dict[str, object] = {"name": draw(names), "description": draw(texts.filter(lambda t: t.strip()))}
    tools = draw(st.one_of(st.none(), st.lists(tool_names, max_size=5, unique=True)))
    as_string = draw(st.booleans())
    if tools is not None:
        fields["tools"] = ", ".join(tools) if as_string else tools
    model = draw(models)
    if model is not None:
        fields["model"] = model
    extra = draw(st.dictionaries(st.sampled_from(["color", "permissionMode", "maxTurns"]), st.integers(0, 9)))
    fields.update(extra)
    body = draw(st.text(st.characters(codec="utf-8"), max_size=200))
    lines = ["---", *(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items()), "---", body]
    return "\n".join(lines), fields


@given(agent_files())
@settings(max_examples=300)
def test_a_valid_agent_file_reads_as_written(case: tuple[str, dict[str, object]]) -> None:
    text, fields = case
    agent = parse_agent(text, FILE, scope="plugin", source="plugin:kit", namespace="kit")
    assert agent.name == f"kit:{fields['name']}" and agent.own_name == fields["name"]
    assert agent.description == str(fields["description"]).strip()
    tools = fields.get("tools")
    if tools is None:
        assert agent.tools is None
    else:
        expected = [t for t in tools.split(", ") if t] if isinstance(tools, str) else list(tools)  # type: ignore[call-overload]
        assert agent.tools == tuple(expected)
    model = fields.get("model")
    assert agent.model == (None if model in (None, "inherit") else model)
    assert set(agent.extra) == set(fields) - {"name", "description", "tools", "model"}
    assert agent.warnings == ()


@pytest.mark.parametrize(
    ("parse", "error", "file"),
    [(parse_agent, AgentError, FILE), (parse_output_style, OutputStyleError, STYLE_FILE)],
    ids=["agent", "output_style"],
)
@given(text=st.text(max_size=400))
@settings(max_examples=400)
def test_any_text_is_a_definition_or_an_error_naming_the_file(
    parse: Callable[[str, str], AgentDef | OutputStyle], error: type[Exception], file: str, text: str
) -> None:
    try:
        definition = parse(text, file)
    except error as exc:
        assert getattr(exc, "file", None) == file
        assert str(exc).startswith(file)
        return
    assert definition.own_name and ":" not in definition.own_name and "/" not in definition.own_name
    if isinstance(definition, AgentDef):
        assert definition.description
    else:
        assert isinstance(definition, OutputStyle) and definition.text


def test_an_error_shows_its_line_only_after_its_file() -> None:
    text = "---\n- a\n---\nx\n"
    with pytest.raises(AgentError) as err:
        parse_agent(text, FILE)
    assert str(err.value) == f"{FILE}:2: the frontmatter must be a mapping of fields, got list"
    with pytest.raises(OutputStyleError) as no_file:
        parse_output_style(text)
    assert no_file.value.line == 2
    assert str(no_file.value) == "the frontmatter must be a mapping of fields, got list"  # no bare "line 2: "


frontmatter_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8,
)


@given(
    st.dictionaries(
        st.sampled_from(["name", "description", "tools", "disallowedTools", "model", "x"]), frontmatter_values
    )
)
@settings(max_examples=400)
def test_wrong_field_types_are_errors_naming_the_field(fields: dict[str, object]) -> None:
    text = "---\n" + "\n".join(f"{k}: {json.dumps(v)}" for k, v in fields.items()) + "\n---\nprompt\n"
    try:
        agent = parse_agent(text, FILE)
    except AgentError as exc:
        assert exc.file == FILE
        assert exc.field.split("[")[0] in {"name", "description", "tools", "disallowedTools", "model", ""}
        return
    assert agent.description
    assert agent.tools is None or all(isinstance(t, str) and t for t in agent.tools)


@given(st.text(max_size=300), st.text(max_size=100))
@settings(max_examples=400)
def test_any_frontmatter_is_an_agent_or_an_error_naming_the_file(frontmatter: str, body: str) -> None:
    text = f"---\n{frontmatter}\n---\n{body}"
    try:
        agent = parse_agent(text, FILE)
    except AgentError as exc:
        assert exc.file == FILE and str(exc).startswith(FILE)
        return
    assert agent.description and agent.file == FILE
    assert all(w.startswith(FILE) for w in agent.warnings)


@given(st.tuples(st.text(max_size=20), st.sampled_from(":/\\"), st.text(max_size=20)).map("".join))
def test_an_unusable_agent_name_is_a_warning_and_the_file_names_the_agent(name: str) -> None:
    """Claude Code names an agent after its file: ``name: vendor:reviewer`` loads as the
    file's name (``some-agent``), with a warning naming the file and field."""
    text = f"---\nname: {json.dumps(name)}\ndescription: d\n---\nprompt\n"
    agent = parse_agent(text, FILE)
    assert agent.name == "some-agent"
    assert any(w.startswith(f"{FILE}: name: ") and "using 'some-agent'" in w for w in agent.warnings)
    with pytest.raises(AgentError, match="':' is for plugins"):
        parse_agent(text, "/plugins/kit/agents/bad:file.md")


# -- a tool list as one string: cut where the old pattern cut it, in linear time --------------

_OLD_TOOL_SEPARATOR = re.compile(r"[,\s]+(?![^()]*\))")


def _tools_of(tools: str) -> tuple[str, ...] | None:
    return parse_agent(f"---\nname: a\ndescription: d\ntools: {json.dumps(tools)}\n---\n", FILE).tools


@settings(max_examples=500)
@given(st.text(st.sampled_from([*"ab(), \t\n:*"]), max_size=20))
def test_a_tool_string_is_cut_where_the_old_pattern_cut_it(tools: str) -> None:
    assert _tools_of(tools) == tuple(t for t in _OLD_TOOL_SEPARATOR.split(tools.strip()) if t)


@pytest.mark.timeout(10)
def test_a_tool_string_is_cut_in_linear_time() -> None:
    # the old lookahead read to the `)` from every blank of the run, for every start: 19 s at 4 KB
    assert _tools_of("a" + " " * 200_000 + "b)") == ("a" + " " * 200_000 + "b)",)
    assert _tools_of("a " * 100_000 + ")") == ("a " * 100_000 + ")",)
    assert _tools_of("Bash(git add, git commit)," + " " * 200_000 + "Read") == ("Bash(git add, git commit)", "Read")

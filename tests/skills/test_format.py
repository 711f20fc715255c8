"""The skill file format: parsing, leniency, errors with file/line/field, round trips."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kairox.ext import SkillArgument, SkillDef, SkillError, SkillFrontmatter, SkillScope, split_frontmatter
from kairox_skills import _format, _simpleyaml
from kairox_skills._format import (
    _quote_bad_values,
    dump_skill,
    load_yaml,
    parse_frontmatter,
    parse_skill,
)
from kairox_skills._structure import frontmatter_from_mapping, frontmatter_to_mapping, quick_from_mapping


def read_frontmatter(path: Path, chunk: int = 8192) -> tuple[str, list[Any]] | None:
    """The frontmatter reader over the file at ``path`` (it reads an open file)."""
    with path.open("rb") as fh:
        return _format.read_frontmatter(fh, file=str(path), chunk=chunk)


def canon(skill: SkillDef | SkillFrontmatter) -> str:
    fm = skill.frontmatter if isinstance(skill, SkillDef) else skill
    return json.dumps(frontmatter_to_mapping(fm), sort_keys=True, default=repr)


def fields(skill: SkillDef) -> set[str]:
    return {w.field for w in skill.warnings}


# -- parsing ------------------------------------------------------------------------------


def test_every_field() -> None:
    skill = parse_skill(
        """---
name: pr-review
description: Review a pull request
scope: workspace
keywords: [review, pull request]
tools: [fs.read, search.grep]
model: claude-sonnet
arguments:
  pr:
    type: integer
    description: The PR number
    required: true
  base:
    type: string
    default: main
    choices: [main, develop]
  draft: Whether it is a draft
license: MIT
compatibility: Needs git
metadata:
  owner: team
allowed-tools: Bash(git log:*) Read
version: 1.2.0
---
Review PR {{ pr }} against {{ base }}.
"""
    )
    fm = skill.frontmatter
    assert (fm.name, fm.description, fm.scope, fm.model) == (
        "pr-review",
        "Review a pull request",
        SkillScope.WORKSPACE,
        "claude-sonnet",
    )
    assert fm.keywords == ("review", "pull request")
    assert fm.tools == ("fs.read", "search.grep")
    assert fm.arguments == (
        SkillArgument("pr", "integer", "The PR number", required=True),
        SkillArgument("base", "string", default="main", choices=("main", "develop")),
        SkillArgument("draft", "string", "Whether it is a draft"),
    )
    assert (fm.license, fm.compatibility, dict(fm.metadata)) == ("MIT", "Needs git", {"owner": "team"})
    assert fm.allowed_tools == ("Bash(git log:*)", "Read")
    assert dict(fm.extra) == {"version": "1.2.0"}
    assert skill.body() == "Review PR {{ pr }} against {{ base }}.\n"
    assert skill.warnings == ()


def test_strings_for_lists_are_split() -> None:
    fm, warnings = parse_frontmatter("name: a\ndescription: d\nkeywords: pdf, forms , \ntools: fs.read shell.exec,x\n")
    assert fm.keywords == ("pdf", "forms")
    assert fm.tools == ("fs.read", "shell.exec", "x")
    assert warnings == []


def test_block_scalar_description_and_quoted_strings() -> None:
    fm, warnings = parse_frontmatter('name: "pdf"\ndescription: |-\n  Line one.\n  Line two: with a colon.\n')
    assert fm.name == "pdf"
    assert fm.description == "Line one.\nLine two: with a colon."
    assert warnings == []


def test_crlf_and_bom() -> None:
    skill = parse_skill("\ufeff---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n")
    assert (skill.name, skill.description, skill.body()) == ("a", "d", "body\r\n")


# -- leniency: load with a warning --------------------------------------------------------


def test_over_long_description_warns() -> None:
    fm, warnings = parse_frontmatter(f"name: a\ndescription: {'x' * 1100}\n", file="f.md")
    assert len(fm.description) == 1100
    assert [(w.field, w.line, w.file) for w in warnings] == [("description", 3, "f.md")]
    assert "1100 characters" in warnings[0].message


def test_name_not_matching_its_folder_warns(tmp_path: Path) -> None:
    path = tmp_path / "pdf-tools" / "SKILL.md"
    skill = parse_skill("---\nname: pdf\ndescription: d\n---\n", path=path)
    assert skill.name == "pdf"
    assert [(w.field, w.line) for w in skill.warnings] == [("name", 2)]
    assert "does not match its folder 'pdf-tools'" in skill.warnings[0].message


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("description: Use when: the user asks", "Use when: the user asks"),
        ("description: Note: works with C# too", "Note: works with C# too"),
        ("description: | Use when this capability is needed.", "| Use when this capability is needed."),
        ("description: @mention the bot", "@mention the bot"),
        ('description: Say "hi": then go', 'Say "hi": then go'),
    ],
)
def test_unquoted_colons_and_odd_values_load_with_a_warning(line: str, expected: str) -> None:
    fm, warnings = parse_frontmatter(f"name: a\n{line}\nkeywords: [x]\n", file="s.md")
    assert fm.description == expected
    assert fm.keywords == ("x",)
    assert [(w.field, w.line) for w in warnings] == [("description", 3)]
    assert "quoting the value on line(s) 3" in warnings[0].message


def test_missing_name_falls_back_with_a_warning() -> None:
    skill = parse_skill("---\ndescription: d\n---\n", path="/x/commit-helper.md")
    assert skill.name == "commit-helper"
    assert fields(skill) == {"name"}


def test_display_names_and_odd_types_warn() -> None:
    fm, warnings = parse_frontmatter(
        "name: Git Helper\ndescription: 42\nmodel: [a]\nkeywords: 7\ntools: [a, {b: c}]\nscope: global\n"
    )
    assert (fm.name, fm.description, fm.model, fm.keywords, fm.tools, fm.scope) == (
        "Git Helper",
        "42",
        None,
        (),
        ("a",),
        None,
    )
    assert {w.field for w in warnings} == {"name", "description", "model", "keywords", "tools[1]", "scope"}


def test_bad_argument_declarations_warn_and_fall_back() -> None:
    fm, warnings = parse_frontmatter(
        """name: a
description: d
arguments:
  n:
    type: integr
    default: 3
  m:
    type: integer
    default: lots
    required: maybe
  "bad name": {}
  c:
    type: string
    choices: [x, y]
    default: z
    colour: red
"""
    )
    assert fm.arguments == (
        SkillArgument("n", "string", default="3"),
        SkillArgument("m", "integer"),
        SkillArgument("c", "string", choices=("x", "y")),
    )
    assert {w.field for w in warnings} == {
        "arguments.n.type",
        "arguments.m.default",
        "arguments.m.required",
        "arguments.bad name",
        "arguments.c.default",
        "arguments.c.colour",
    }
    assert all(w.line == 4 for w in warnings)


def test_undecodable_bytes_warn(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_bytes(b"---\nname: a\ndescription: caf\xe9\n---\nbody \xff\n")
    block = read_frontmatter(path)
    assert block is not None
    text, warnings = block
    assert text == "name: a\ndescription: caf\ufffd\n"
    assert [(w.line, w.file) for w in warnings] == [(3, str(path))]


# -- errors: skipped, with file, line and field -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("---\nname: a\n---\nbody\n", 1, "description", "is missing"),
        ("---\nname: a\ndescription: ''\n---\n", 3, "description", "is empty"),
        ("---\nname: a\ndescription:\n---\n", 3, "description", "is empty"),
        ("---\nname: a\ndescription: [x]\n---\n", 3, "description", "got a list"),
        ("---\nname: a\ndescription: d\ntools: [a, b\nmodel: m\n---\n", 5, "tools", "not valid YAML"),
        ("---\nname: a\ndescription: d\n  bad: indent\n---\n", 4, "description", "not valid YAML"),
        ("---\n- a\n- b\n---\n", 2, "", "must be a mapping"),
        ("---\nname: a\ndescription: d\n", 1, "", "never closed"),
        ("# no frontmatter\n", 1, "", "no frontmatter"),
    ],
)
def test_errors_name_file_line_and_field(text: str, line: int, field: str, words: str) -> None:
    with pytest.raises(SkillError) as info:
        parse_skill(text, path="/skills/bad.md")
    err = info.value
    assert (err.file, err.line, err.field) == ("/skills/bad.md", line, field)
    assert words in err.message
    assert str(err).startswith(f"/skills/bad.md:{line}")


@pytest.mark.parametrize("name", ["vendor:deploy", "ui-toolkit/web", "a\\b"])
def test_an_unusable_name_is_a_warning_and_the_file_or_folder_names_the_skill(name: str) -> None:
    """Claude Code names a command after its file and a skill after its folder, so a plugin
    whose frontmatter says ``name: vendor:deploy`` works there: here too, with a warning."""
    text = f"---\nname: '{name}'\ndescription: d\n---\nbody\n"
    command = parse_skill(text, path="/plugin/commands/deploy.md")
    assert command.name == "deploy"
    [warning] = [w for w in command.warnings if w.field == "name"]
    assert repr(name) in warning.message and "using 'deploy'" in warning.message
    skill = parse_skill(text, path="/plugin/skills/web/SKILL.md")
    assert skill.name == "web" and any("using 'web'" in w.message for w in skill.warnings)


def test_an_unusable_name_with_no_usable_file_name_is_refused() -> None:
    with pytest.raises(SkillError, match="must not contain ':'"):
        parse_skill("---\nname: a:b\ndescription: d\n---\n", path="/skills/bad:name.md")


# -- reading only the frontmatter ---------------------------------------------------------------


def test_listing_never_decodes_or_parses_the_body(tmp_path: Path) -> None:
    path = tmp_path / "big.md"
    path.write_bytes(b"---\nname: a\ndescription: d\n---\n" + b"\xff\xfe not text, not yaml: [\n" * 50_000)
    assert read_frontmatter(path, chunk=64) == ("name: a\ndescription: d\n", [])


texts = st.text(alphabet=st.sampled_from(list("-\n \t\rab:\ufeffé")), max_size=60)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts, st.sampled_from([1, 3, 8, 8192]))
def test_chunked_reader_agrees_with_split_frontmatter(tmp_path: Path, text: str, chunk: int) -> None:
    path = tmp_path / "s.md"
    path.write_bytes(text.encode("utf-8"))
    try:
        expected = split_frontmatter(text)[0]
    except SkillError:
        with pytest.raises(SkillError):
            read_frontmatter(path, chunk=chunk)
        return
    block = read_frontmatter(path, chunk=chunk)
    assert (block[0] if block else None) == expected


# -- properties ------------------------------------------------------------------------------------

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.dates(),
    st.datetimes(),
)
json_tree = st.recursive(
    json_leaf,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=8), kids, max_size=3)),
    max_leaves=8,
)
FIELD_NAMES = ["name", "description", "scope", "keywords", "tools", "model", "arguments", "license"]
frontmatter_dicts = st.dictionaries(
    st.one_of(st.sampled_from([*FIELD_NAMES, "compatibility", "metadata", "allowed-tools"]), st.text(max_size=8)),
    json_tree,
    max_size=8,
)


def _yaml_text(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


arbitrary_frontmatter = st.one_of(
    st.text(max_size=200),
    frontmatter_dicts.map(_yaml_text),
    st.lists(
        st.tuples(st.sampled_from(FIELD_NAMES), st.text(max_size=30)),
        max_size=6,
    ).map(lambda pairs: "".join(f"{k}: {v}\n" for k, v in pairs)),
)


@given(arbitrary_frontmatter, st.text(max_size=30))
def test_arbitrary_frontmatter_gives_a_skill_or_a_skill_error(frontmatter: str, body: str) -> None:
    text = f"---\n{frontmatter}\n---\n{body}"
    try:
        skill = parse_skill(text, path="/s/x.md")
    except SkillError as exc:
        assert exc.file == "/s/x.md"
        assert exc.line is not None and exc.line >= 1
        return
    assert skill.description.strip()
    assert skill.name


described = st.text(min_size=1, max_size=40).filter(lambda s: bool(s.strip()))
parseable_frontmatter = st.one_of(
    st.tuples(frontmatter_dicts, described).map(lambda fd: _yaml_text({**fd[0], "description": fd[1]})),
    st.tuples(
        st.lists(st.tuples(st.sampled_from(FIELD_NAMES), st.text(max_size=30)), max_size=6),
        st.text(alphabet="abc :#'\"|@-", min_size=1, max_size=30),
    ).map(lambda p: f"description: {p[1]}\n" + "".join(f"{k}: {v}\n" for k, v in p[0] if k != "description")),
)


@settings(suppress_health_check=[HealthCheck.filter_too_much])
@given(parseable_frontmatter, st.text(max_size=30))
def test_parse_dump_parse_round_trips(frontmatter: str, body: str) -> None:
    try:
        first = parse_skill(f"---\n{frontmatter}\n---\n{body}", path="/s/fallback.md")
    except SkillError:
        assume(False)
        return
    second = parse_skill(dump_skill(first.frontmatter, first.body()))
    assert canon(second) == canon(first)
    assert second.body() == first.body()
    assert second.warnings == () or {w.field for w in second.warnings} <= {"name", "description", "compatibility"}


arguments = st.lists(
    st.builds(
        SkillArgument,
        name=st.from_regex(r"[a-z_][a-z0-9_-]{0,8}", fullmatch=True),
        type=st.just("string"),
        description=st.text(max_size=20),
        required=st.booleans(),
        default=st.one_of(st.none(), st.text(max_size=10)),
    ),
    max_size=3,
    unique_by=lambda a: a.name,
).map(tuple)
names = st.from_regex(r"[a-z0-9]+(-[a-z0-9]+)*", fullmatch=True).filter(lambda s: len(s) <= 64)
words = st.text(min_size=1, max_size=30).map(str.strip).filter(bool)
frontmatters = st.builds(
    SkillFrontmatter,
    name=names,
    description=words,
    scope=st.sampled_from([None, SkillScope.USER, SkillScope.WORKSPACE, SkillScope.SESSION]),
    keywords=st.lists(words, max_size=3, unique=True).map(tuple),
    tools=st.lists(st.from_regex(r"[a-z]+\.[a-z_]+", fullmatch=True), max_size=3, unique=True).map(tuple),
    model=st.one_of(st.none(), st.text(max_size=15)),
    arguments=arguments,
    license=st.one_of(st.none(), st.text(max_size=15)),
    metadata=st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=10), max_size=2),
    extra=st.dictionaries(st.sampled_from(["version", "author", "x-y"]), st.text(max_size=10), max_size=2),
)


@given(frontmatters, st.text(max_size=40))
def test_dump_then_parse_gives_the_same_skill(fm: SkillFrontmatter, body: str) -> None:
    skill = parse_skill(dump_skill(fm, body))
    assert skill.frontmatter == fm
    assert skill.body() == body
    assert skill.warnings == ()


def test_dates_and_sets_become_plain_data() -> None:
    fm, _ = parse_frontmatter("name: a\ndescription: d\nupdated: 2024-05-01\ntags: !!set {x: null}\n")
    assert dict(fm.extra) == {"updated": dt.date(2024, 5, 1).isoformat(), "tags": ["x"]}


quick_values = st.one_of(st.none(), st.text(max_size=12), st.integers(), st.booleans())
quick_mappings = st.fixed_dictionaries(
    {
        "name": st.one_of(names, names, st.sampled_from(["pdf", "a-b", "A", "-a", "a--b", " a"]), st.integers()),
        "description": st.one_of(words, words, st.text(max_size=1100), st.lists(st.text(max_size=3))),
    },
    optional={
        "scope": st.one_of(st.sampled_from(["user", "workspace", "session", "global"]), quick_values),
        "keywords": st.one_of(st.lists(st.text(max_size=6), max_size=3), quick_values),
        "tools": st.one_of(st.lists(st.sampled_from(["fs.read", " x", "x", ""]), max_size=3), quick_values),
        "model": quick_values,
        "license": quick_values,
        "metadata": st.dictionaries(st.text(max_size=3), quick_values, max_size=2),
    },
)


@given(quick_mappings, st.sampled_from([None, "pdf", "a-b"]))
def test_the_quick_path_agrees_with_the_full_one(data: dict[str, Any], folder: str | None) -> None:
    quick = quick_from_mapping(data, folder)
    try:
        full, warnings = frontmatter_from_mapping(data, folder=folder, fallback_name="fallback", quick=False)
    except SkillError:
        assert quick is None
        return
    if quick is not None:
        assert (quick, warnings) == (full, [])


colon_values = st.one_of(
    st.sampled_from(["Use when: x", "a: b: c", "ends with:", "C:\\path: x", 'say "hi": go', "x:y", "~: n", "1: 2"]),
    st.text(alphabet="ab :#'\"-\\", min_size=1, max_size=12).filter(lambda v: v.strip() == v and v[:1] not in "-#"),
)
flat_lines = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["name", "description", "license", "x-y"]), colon_values).map(
            lambda kv: f"{kv[0]}: {kv[1]}"
        ),
        st.just("tools:\n  - fs.read\n  - a b"),
        st.just("keywords: [a, b]"),
    ),
    min_size=1,
    max_size=5,
)


@given(flat_lines)
def test_the_lenient_fast_path_agrees_with_quoting(lines: list[str]) -> None:
    doc = "\n".join(lines) + "\n"
    try:
        data, fixed = _simpleyaml.load_lenient(doc)
    except _simpleyaml.Unsupported:
        return
    if not fixed:
        assert yaml.safe_load(doc) == data
        return
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(doc)
    quoted_text, slow_fixed = _quote_bad_values(doc)
    assert slow_fixed == fixed
    assert yaml.safe_load(quoted_text) == data


def test_unquoted_colons_take_the_fast_path_with_the_same_warning() -> None:
    doc = "name: a\ndescription: Use when: the user asks\nkeywords: [x]\n"
    assert _simpleyaml.load_lenient(doc)[1] == [1]
    fast = load_yaml(doc, file="s.md")
    slow_text = doc + "odd: [\n  x]\n"  # not flat: PyYAML and the quoting retry
    slow = load_yaml(slow_text, file="s.md")
    assert fast[1] == slow[1]
    assert fast[0]["description"] == slow[0]["description"] == "Use when: the user asks"

"""search.grep on real trees: the Python search, ripgrep (when ``rg`` is on PATH) and their agreement."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tools_helpers import NO_TEMP_DIR, open_tools_runtime

from kairox._tools import ToolContext, ToolResult
from kairox_tools import SearchGrep, ToolEnv, ToolsConfig
from kairox_tools._grep import GrepQuery, compile_pattern

pytestmark = pytest.mark.anyio

RG = shutil.which("rg")
needs_rg = pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not on PATH")
Engine = Literal["auto", "ripgrep", "python"]
ENGINES = ["python", pytest.param("ripgrep", marks=needs_rg)]


def env_for(ws: Path, engine: Engine, **config: Any) -> ToolEnv:
    return ToolEnv.create(ws, ToolsConfig(grep_engine=engine, **config), dict(os.environ))


async def grep(env: ToolEnv, **arguments: Any) -> ToolResult:
    result: ToolResult = await SearchGrep(env).call(arguments, ToolContext())
    return result


def make_tree(ws: Path) -> None:
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "main.py").write_text("import os\n\ndef main():\n    return TODO\n", encoding="utf-8")
    (ws / "src" / "pkg" / "util.py").write_text("# todo: tidy\nVALUE = 1\n", encoding="utf-8")
    (ws / "src" / "notes.txt").write_text("TODO in text\n", encoding="utf-8")
    (ws / "README.md").write_text("Nothing to do here.\nTODO: docs\n", encoding="utf-8")
    (ws / "image.bin").write_bytes(b"TODO\x00\x01\x02 binary")
    (ws / ".hidden.py").write_text("TODO hidden\n", encoding="utf-8")
    (ws / "node_modules" / "dep").mkdir(parents=True)
    (ws / "node_modules" / "dep" / "x.js").write_text("TODO dep\n", encoding="utf-8")
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("TODO git\n", encoding="utf-8")


def matches(r: ToolResult) -> list[tuple[str, int, str]]:
    assert r.structured is not None, r.text
    return [(m["path"], m["line"], m["text"]) for m in r.structured["matches"]]


@pytest.mark.parametrize("engine", ENGINES)
async def test_finds_matches_and_skips_binary_hidden_git_and_node_modules(ws: Path, engine: Engine) -> None:
    make_tree(ws)
    r = await grep(env_for(ws, engine), pattern="TODO")
    assert not r.is_error
    assert r.structured is not None and r.structured["engine"] == engine
    assert matches(r) == [
        ("README.md", 2, "TODO: docs"),
        ("src/main.py", 4, "    return TODO"),
        ("src/notes.txt", 1, "TODO in text"),
    ]
    assert r.text.splitlines() == [
        "README.md:2:TODO: docs",
        "src/main.py:4:    return TODO",
        "src/notes.txt:1:TODO in text",
    ]


@pytest.mark.parametrize("engine", ENGINES)
async def test_options(ws: Path, engine: Engine) -> None:
    make_tree(ws)
    env = env_for(ws, engine)
    ci = await grep(env, pattern="todo", case_insensitive=True, glob="*.py")
    assert matches(ci) == [("src/main.py", 4, "    return TODO"), ("src/pkg/util.py", 1, "# todo: tidy")]
    hidden = await grep(env, pattern="hidden", include_hidden=True)
    assert matches(hidden) == [(".hidden.py", 1, "TODO hidden")]
    fixed = await grep(env, pattern="main()", fixed_strings=True)
    assert matches(fixed) == [("src/main.py", 3, "def main():")]
    regex = await grep(env, pattern=r"^\s+return \w+$")
    assert matches(regex) == [("src/main.py", 4, "    return TODO")]
    sub = await grep(env, pattern="VALUE", path="src/pkg")
    assert matches(sub) == [("src/pkg/util.py", 2, "VALUE = 1")]
    one_file = await grep(env, pattern="os", path="src/main.py")
    assert matches(one_file) == [("src/main.py", 1, "import os")]
    none = await grep(env, pattern="absent-string")
    assert matches(none) == [] and "[no matches for 'absent-string' in .]" in none.text


@pytest.mark.parametrize("engine", ENGINES)
async def test_context_lines(ws: Path, engine: Engine) -> None:
    (ws / "f.txt").write_text("a\nb\nMATCH 1\nc\nd\ne\nf\nMATCH 2\ng\n", encoding="utf-8")
    r = await grep(env_for(ws, engine), pattern="MATCH", context=1)
    assert r.text.splitlines() == [
        "f.txt-2-b",
        "f.txt:3:MATCH 1",
        "f.txt-4-c",
        "--",
        "f.txt-7-f",
        "f.txt:8:MATCH 2",
        "f.txt-9-g",
    ]


@pytest.mark.parametrize("engine", ENGINES)
async def test_max_results_stops_with_a_marker(ws: Path, engine: Engine) -> None:
    (ws / "many.txt").write_text("".join(f"hit {i}\n" for i in range(50)), encoding="utf-8")
    r = await grep(env_for(ws, engine), pattern="hit", max_results=5)
    assert [m[2] for m in matches(r)] == [f"hit {i}" for i in range(5)]
    assert r.text.splitlines()[-1] == "[... stopped after 5 matches (max_results); narrow the pattern or path ...]"
    assert r.structured is not None and r.structured["truncated"] is True
    capped = await grep(env_for(ws, engine, grep_max_results=3), pattern="hit")
    assert len(matches(capped)) == 3


@pytest.mark.parametrize("engine", ENGINES)
async def test_long_lines_are_cut(ws: Path, engine: Engine) -> None:
    (ws / "wide.txt").write_text("needle " + "x" * 5000 + "\n", encoding="utf-8")
    r = await grep(env_for(ws, engine, max_line_chars=100), pattern="needle")
    assert r.text.startswith("wide.txt:1:needle xxx") and r.text.endswith("[... line cut: 4907 more characters]")


@pytest.mark.parametrize("engine", ENGINES)
async def test_errors(ws: Path, engine: Engine) -> None:
    env = env_for(ws, engine)
    bad = await grep(env, pattern="(unclosed")
    assert bad.is_error and bad.text.startswith("search.grep: ")
    missing = await grep(env, pattern="x", path="nowhere")
    assert missing.is_error and "no such file or directory: nowhere" in missing.text


async def test_python_engine_is_used_when_rg_is_not_on_path(ws: Path) -> None:
    make_tree(ws)
    env = ToolEnv.create(ws, ToolsConfig(), {"PATH": str(ws / "no-bin-here")})
    r = await grep(env, pattern="VALUE")
    assert r.structured is not None and r.structured["engine"] == "python"
    forced = ToolEnv.create(ws, ToolsConfig(grep_engine="ripgrep"), {"PATH": str(ws / "no-bin-here")})
    err = await grep(forced, pattern="VALUE")
    assert err.is_error and "rg is not on PATH" in err.text


@needs_rg
async def test_auto_prefers_ripgrep(ws: Path) -> None:
    make_tree(ws)
    r = await grep(env_for(ws, "auto"), pattern="VALUE")
    assert r.structured is not None and r.structured["engine"] == "ripgrep"


LINES = st.lists(st.sampled_from(["alpha", "beta", "Alpha beta", "gamma", "", "al", "pha", "ALPHA"]), max_size=8)
FILES = st.dictionaries(st.sampled_from(["a.txt", "b.py", "sub/c.txt", "sub/deeper/d.md", "z.txt"]), LINES, max_size=5)


@needs_rg
@settings(max_examples=40, deadline=None)
@given(
    FILES,
    st.sampled_from(["alpha", "beta", "al", "a", "gamma"]),
    st.booleans(),
    st.integers(0, 2),
    st.sampled_from([None, "*.txt", "sub/**"]),
)
def test_python_and_ripgrep_agree(
    files: dict[str, list[str]], pattern: str, ci: bool, context: int, glob: str | None
) -> None:
    base = Path(tempfile.mkdtemp(prefix="kairox-grep-")).resolve()
    try:
        for name, lines in files.items():
            (base / name).parent.mkdir(parents=True, exist_ok=True)
            (base / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        args: dict[str, Any] = {"pattern": pattern, "case_insensitive": ci, "context": context}
        if glob:
            args["glob"] = glob

        async def both() -> tuple[ToolResult, ToolResult]:
            return await grep(env_for(base, "python"), **args), await grep(env_for(base, "ripgrep"), **args)

        py, rg = anyio.run(both)
        assert py.text == rg.text, (args, files)
        assert matches(py) == matches(rg)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- the model's pattern and glob cost one pass over each line and name -------------------------

PYTHON_ENGINE = ("python engine", {"tools": {"grep_engine": "python"}})


@pytest.mark.timeout(10)
async def test_a_catastrophic_pattern_costs_one_pass_over_a_long_line(ws: Path, home: Path) -> None:
    # Python's re tries every split of the line among the alternatives (hours at 48 a's), holding
    # the GIL: the runtime stalled, and neither grep_timeout nor this test's timeout could fire
    (ws / "long.txt").write_text("a" * 100_000 + "\naab\n", encoding="utf-8")
    async with open_tools_runtime(ws, home, [NO_TEMP_DIR, PYTHON_ENGINE]) as rt:
        r = await rt.call_tool("search.grep", {"pattern": "(a|aa)+b"})
        assert matches(r) == [("long.txt", 2, "aab")]
        polynomial = await rt.call_tool("search.grep", {"pattern": r"\w*" * 8 + "x"})
        assert matches(polynomial) == []


@pytest.mark.timeout(10)
async def test_nested_repeats_over_a_line_that_almost_matches_finish_well_inside_grep_timeout(
    ws: Path, home: Path
) -> None:
    # review 38: with Python's re, ^(a+)+$ over 40 a's and a "!" ran past 60 s although
    # grep_timeout was 5 (the search thread could not be abandoned and held the GIL)
    (ws / "data.txt").write_text("a" * 40 + "!\n", encoding="utf-8")
    timeout = ("grep timeout", {"tools": {"grep_timeout": 5}})
    async with open_tools_runtime(ws, home, [NO_TEMP_DIR, PYTHON_ENGINE, timeout]) as rt:
        r = await rt.call_tool("search.grep", {"pattern": "^(a+)+$"})
        assert not r.is_error and matches(r) == [], r.text


@pytest.mark.timeout(10)
async def test_a_glob_of_unclosed_brackets_is_read_once(ws: Path, home: Path) -> None:
    # fnmatch read each `[` with no `]` after it to the pattern's end: minutes at 64 KB
    make_tree(ws)
    opens = "[" * 65_536
    async with open_tools_runtime(ws, home, [NO_TEMP_DIR, PYTHON_ENGINE]) as rt:
        for glob in (opens, "src/" + opens):
            r = await rt.call_tool("search.grep", {"pattern": "TODO", "glob": glob})
            assert not r.is_error and matches(r) == []
        py = await rt.call_tool("search.grep", {"pattern": "TODO", "glob": "src/**/[m]*.py"})
        assert matches(py) == [("src/main.py", 4, "    return TODO")]


@pytest.mark.parametrize("pattern", ["(?=TODO)TODO", r"(T)\1", "TODO\\Z", "\ud800"])
async def test_a_pattern_re2_cannot_run_is_an_error_naming_it(ws: Path, pattern: str) -> None:
    make_tree(ws)
    r = await grep(env_for(ws, "python"), pattern=pattern)
    assert r.is_error and r.text.startswith(f"search.grep: invalid regular expression {pattern!r}: ")
    assert "no look-around or backreferences" in r.text


_ATOM = st.sampled_from(["a", "b", "T", " ", ".", r"\.", "[ab]", "[^a]", r"\d", r"\w", r"\s", "(a|b)", "(?:ab|a)"])
_PIECE = st.tuples(_ATOM, st.sampled_from(["", "*", "+", "?", "{1,2}"])).map("".join)
_BRANCH = st.tuples(
    st.sampled_from(["", "^"]), st.lists(_PIECE, min_size=1, max_size=4).map("".join), st.sampled_from(["", "$"])
).map("".join)
_PATTERN = st.lists(_BRANCH, min_size=1, max_size=3).map("|".join)
_LINE = st.text(st.sampled_from("abAT 1._\t"), max_size=12)


@settings(max_examples=500)
@given(_PATTERN, st.lists(_LINE, max_size=6), st.booleans(), st.booleans())
def test_ordinary_patterns_find_the_lines_python_re_found(
    pattern: str, lines: list[str], case_insensitive: bool, fixed_strings: bool
) -> None:
    query = GrepQuery(pattern, Path("."), case_insensitive=case_insensitive, fixed_strings=fixed_strings)
    old = re.compile(re.escape(pattern) if fixed_strings else pattern, re.IGNORECASE if case_insensitive else 0)
    new = compile_pattern(query)
    assert [bool(new.search(line)) for line in lines] == [bool(old.search(line)) for line in lines]

"""Skill parsing is bounded (hardening issue 13, item 7), written as the attacks.

- A 400-byte YAML alias bomb (the "billion laughs") in one skill file of a
  workspace is one skill error naming that file; the other skills of the same
  source are listed. It runs in a child process under a 1 GiB address-space
  limit and a CPU limit, so code that expands the bomb fails the test instead
  of taking the machine's memory.
- Recursive aliases, 100,000-deep nesting and deeply indented mappings are
  one error each, never a ``RecursionError`` out of the scan.
- Eight symbolic links to ``.`` (and links to an ancestor and to a sibling
  folder) are walked once: the scan is fast and names each skill and each
  error once.
- The bounded loader gives what PyYAML gives, or its own error, for
  arbitrary YAML-ish text and generated anchor/alias structures, quickly.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import kairox_skills.hooks
from kairox.ext import SkillDef, SkillError
from kairox_skills import DirectorySkillSource, parse_skill
from kairox_skills._cache import ScanCache
from kairox_testing import KairoxHarness


@pytest.fixture
def kairox_plugins() -> list[object]:
    return [kairox_skills.hooks]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def md(name: str, description: str = "does things", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\nbody\n"


def billion_laughs(levels: int = 9, width: int = 9) -> str:
    """``levels`` anchors, each a list of ``width`` aliases of the one before: width**levels strings."""
    names = [f"l{i}" for i in range(levels)]
    lines = [f"{names[0]}: &{names[0]} [{', '.join(['lol'] * width)}]"]
    lines += [f"{n}: &{n} [{', '.join([f'*{p}'] * width)}]" for p, n in itertools.pairwise(names)]
    return "\n".join(lines) + "\n"


BOMB = "---\nname: bomb\ndescription: A skill that expands to a billion strings\n" + billion_laughs() + "---\nboom\n"


# -- in a child process under a memory and CPU limit ------------------------------------------
# Code that expands a bomb or walks a link loop fails these tests instead of taking
# the machine: 1 GiB of address space (expanding the bomb needs tens of GiB), 60 s of CPU.

LIMITED = textwrap.dedent(
    """
    import json, resource, sys, time
    from pathlib import Path

    limit = 1 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, (60, 60))

    import kairox_skills.hooks
    from kairox_testing import KairoxHarness
    from kairox_skills import parse_skill

    out = {}
    if sys.argv[1] == "cli":
        harness = KairoxHarness(Path(sys.argv[2]), Path(sys.argv[3]), plugins=[kairox_skills.hooks])
        for key, args in (("list", ("skills", "list", "--json")), ("status", ("status", "--json"))):
            started = time.monotonic()
            result = harness.cli(*args, catch_exceptions=True)
            crash = None if isinstance(result.exception, (SystemExit, type(None))) else repr(result.exception)
            out[key] = {"stdout": result.stdout, "exit_code": result.exit_code, "crash": crash,
                        "seconds": time.monotonic() - started}
    else:
        path = Path(sys.argv[2])
        try:
            parse_skill(path.read_text(), path=path)
        except Exception as exc:
            out = {"type": type(exc).__name__, "message": str(exc), "file": getattr(exc, "file", None),
                   "line": getattr(exc, "line", None)}
    print(json.dumps(out))
    """
)


def run_limited(*args: str, timeout: float = 120) -> dict[str, Any]:
    """Run LIMITED with ``args``; its JSON answer."""
    proc = subprocess.Popen(
        [sys.executable, "-c", LIMITED, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{args[0]} did not finish in {timeout} s")
    assert proc.returncode == 0, err[-3000:]
    return dict(json.loads(out.strip().splitlines()[-1]))


def run_cli(harness: KairoxHarness, timeout: float = 120) -> tuple[dict[str, Any], dict[str, Any]]:
    """``kairox skills list --json`` and ``kairox status --json`` in a limited child process."""
    result = run_limited("cli", str(harness.workspace), str(harness.home), timeout=timeout)
    for run in result.values():
        assert run["crash"] is None, run
    return result["list"], result["status"]


posix_only = pytest.mark.skipif(sys.platform == "win32", reason="resource.setrlimit is POSIX")


@posix_only
def test_a_billion_laughs_skill_is_one_error_and_the_others_load(kairox_harness: KairoxHarness) -> None:
    skills = kairox_harness.workspace / ".kairox" / "skills"
    write(skills / "alpha.md", md("alpha", "First ordinary skill"))
    write(skills / "bomb.md", BOMB)
    write(skills / "zulu.md", md("zulu", "Last ordinary skill", "keywords: [z]\n"))
    write(skills / "notes" / "SKILL.md", md("notes", "A folder skill with anchors", "metadata: &m {a: 1}\nextra: *m\n"))
    assert len(BOMB.encode()) < 700
    listed, status = run_cli(kairox_harness)
    assert listed["seconds"] < 10
    data = json.loads(listed["stdout"])
    assert [s["name"] for s in data["skills"]] == ["alpha", "notes", "zulu"]
    [error] = data["errors"]
    assert Path(error["file"]).name == "bomb.md"
    assert "alias" in error["message"]
    summary = json.loads(status["stdout"])
    assert summary["skills"] == 3
    assert len(summary["skill_errors"]) == 1 and "bomb.md" in summary["skill_errors"][0]


@posix_only
def test_parse_skill_refuses_the_bomb(tmp_path: Path) -> None:
    bomb = write(tmp_path / "bomb.md", BOMB)
    error = run_limited("parse", str(bomb))
    assert error["type"] == "SkillError", error
    assert "refused" in error["message"] and "alias" in error["message"]
    assert error["file"] == str(bomb) and error["line"] > 3


# -- the loader itself (never expands a bomb: safe in process) ---------------------------------


def _peak_bytes(fn: Any) -> int:
    """The most memory ``fn()`` had allocated at once (work measured, not wall time:
    a timed assertion fails on a loaded machine; an expanded bomb costs gigabytes)."""
    tracemalloc.start()
    try:
        fn()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


def test_the_billion_laughs_is_refused_before_it_expands() -> None:
    from kairox_skills import YamlLimitError, safe_load_bounded

    for levels, width in [(9, 9), (4, 1000), (30, 2)]:

        def load(text: str = billion_laughs(levels, width)) -> None:
            with pytest.raises(YamlLimitError, match="alias"):
                safe_load_bounded(text)

        assert _peak_bytes(load) < 16 * 1024 * 1024


def test_merge_key_bombs_and_recursive_aliases_are_refused() -> None:
    from kairox_skills import YamlLimitError, safe_load_bounded

    merges = "a0: &a0 {" + ", ".join(f"k{i}: v" for i in range(9)) + "}\n"
    merges += "".join(f"a{n}: &a{n} {{<<: [{', '.join([f'*a{n - 1}'] * 9)}]}}\n" for n in range(1, 9))
    with pytest.raises(YamlLimitError):
        safe_load_bounded(merges)
    for doc in ["a: &a [*a]", "a: &a {b: *a}", "- &x\n  - [1, *x]"]:
        with pytest.raises(YamlLimitError, match="recursive"):
            safe_load_bounded(doc)


def test_deep_nesting_and_long_input_are_refused() -> None:
    from kairox_skills import YamlLimitError, safe_load_bounded

    for doc in [
        "k: " + "[" * 100 + "]" * 100,
        "k:\n " + "- " * 100 + "x\n",
        "a: &a [[[[[[[[1]]]]]]]]\n" + "b: " + "[" * 60 + "*a" + "]" * 60,
    ]:
        with pytest.raises(YamlLimitError, match="nest deeper"):
            safe_load_bounded(doc)
    with pytest.raises((YamlLimitError, yaml.YAMLError)):
        safe_load_bounded("k: " + "[" * 100_000 + "]" * 100_000)
    with pytest.raises(YamlLimitError, match="longer than"):
        safe_load_bounded("k: v\n" * 300_000)
    with pytest.raises(YamlLimitError, match="integer"):  # refused by its length, before int() runs
        safe_load_bounded("k: 1" + ":00" * 300_000, max_length=1 << 21)


def test_ordinary_anchors_still_load() -> None:
    from kairox_skills import safe_load_bounded

    doc = textwrap.dedent(
        """\
        defaults: &defaults {type: string, required: false}
        arguments:
          base: *defaults
          head:
            <<: *defaults
            required: true
        tags: &tags [a, b, c]
        more: *tags
        """
    )
    assert safe_load_bounded(doc) == yaml.safe_load(doc)
    assert safe_load_bounded("") is None
    assert safe_load_bounded(billion_laughs(3, 9)) == yaml.safe_load(billion_laughs(3, 9))


# -- one file, one error; the rest of the source loads ----------------------------------------


DEEP_FLOW = "---\nname: deep\ndescription: d\nx: " + "[" * 100_000 + "]" * 100_000 + "\n---\n"
DEEP_BLOCK = "---\nname: indented\ndescription: d\n" + "".join(" " * i + f"k{i}:\n" for i in range(1200)) + "---\n"
NESTED = "---\nname: nested\ndescription: d\n" + "".join(" " * i + f"k{i}:\n" for i in range(200)) + "---\n"
RECURSIVE = "---\nname: loop\ndescription: d\nx: &x [*x]\n---\n"


def test_each_hostile_file_is_one_error_naming_it(tmp_path: Path) -> None:
    write(tmp_path / "a.md", md("a"))
    write(tmp_path / "deep.md", DEEP_FLOW)
    write(tmp_path / "indented.md", DEEP_BLOCK)
    write(tmp_path / "loop.md", RECURSIVE)
    write(tmp_path / "nested.md", NESTED)
    write(tmp_path / "z.md", md("z"))
    started = time.monotonic()
    items = list(DirectorySkillSource("t", "user", [tmp_path], cache=ScanCache()).scan())
    assert time.monotonic() - started < 10
    assert sorted(i.name for i in items if isinstance(i, SkillDef)) == ["a", "z"]
    errors = [i for i in items if isinstance(i, SkillError)]
    assert sorted(Path(e.file or "").name for e in errors) == ["deep.md", "indented.md", "loop.md", "nested.md"]
    for name in ("deep.md", "indented.md", "loop.md", "nested.md"):
        with pytest.raises(SkillError) as info:
            parse_skill((tmp_path / name).read_text(), path=tmp_path / name)
        assert info.value.file == str(tmp_path / name)


def test_parse_skill_refuses_an_oversized_frontmatter() -> None:
    with pytest.raises(SkillError, match="larger than"):
        parse_skill("---\nname: big\ndescription: d\nx: '" + "a" * (1 << 20) + "'\n---\n")


# -- symbolic link loops ------------------------------------------------------------------------


def symlinks_work(tmp_path: Path) -> bool:
    try:
        (tmp_path / "probe").symlink_to(tmp_path, target_is_directory=True)
    except (OSError, NotImplementedError):
        return False
    (tmp_path / "probe").unlink()
    return True


@posix_only
def test_symlink_loops_are_walked_once(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    if not symlinks_work(tmp_path):
        pytest.skip("symbolic links are not available")
    skills = kairox_harness.workspace / ".kairox" / "skills"
    write(skills / "good.md", md("good"))
    write(skills / "bad.md", "---\nname: bad\n---\n")
    write(skills / "pdf" / "SKILL.md", md("pdf"))
    for i in range(8):
        (skills / f"l{i}").symlink_to(".", target_is_directory=True)
    (skills / "nested").mkdir()
    (skills / "nested" / "up").symlink_to("..", target_is_directory=True)
    (skills / "twin").symlink_to("pdf", target_is_directory=True)

    listed, status = run_cli(kairox_harness, timeout=60)
    assert listed["seconds"] < 5 and status["seconds"] < 5
    data = json.loads(listed["stdout"])
    assert [(s["name"], Path(s["path"]).relative_to(skills).as_posix()) for s in data["skills"]] == [
        ("good", "good.md"),
        ("pdf", "pdf/SKILL.md"),
    ]
    assert [Path(e["file"]).name for e in data["errors"]] == ["bad.md"]
    assert data["warnings"] == []
    assert all(s["shadows"] == [] and s["warnings"] == [] for s in data["skills"])
    assert len(json.loads(status["stdout"])["skill_errors"]) == 1


# -- property: bounded or identical ---------------------------------------------------------------

YAMLISH = st.text(alphabet=st.sampled_from(list("ab1 :-[]{},&*!|>'\"#?<\n\t.")), max_size=120)


@st.composite
def anchored(draw: st.DrawFn) -> str:
    """Documents of anchors, each a flow or block collection of scalars and aliases of
    earlier anchors (mostly the latest: that is how a bomb grows), with merge keys."""
    lines: list[str] = []
    anchors: list[str] = []
    mappings: list[str] = []
    for i in range(draw(st.integers(1, 12))):
        aliases = st.sampled_from([anchors[-1]] * 3 + anchors).map(lambda a: f"*{a}") if anchors else st.just("x")
        items = draw(st.lists(aliases, max_size=draw(st.integers(0, 12))))
        items += draw(st.lists(st.sampled_from(["x", "1", "true", "~", "'q'"]), max_size=3))
        name = f"a{i}"
        shape = draw(st.sampled_from(["flow", "mapping", "block"]))
        if shape == "flow":
            body = f"[{', '.join(items)}]"
        elif shape == "mapping":
            pairs = [f"k{j}: {v}" for j, v in enumerate(items)]
            merge: bool = draw(st.booleans())
            if mappings and merge:
                merged = draw(st.lists(st.sampled_from([mappings[-1], *mappings]), min_size=1, max_size=9))
                pairs.insert(0, f"<<: [{', '.join('*' + m for m in merged)}]")
            body = "{" + ", ".join(pairs) + "}"
            mappings.append(name)
        else:
            body = "".join(f"\n  - {v}" for v in items) or "[]"
        lines.append(f"k{i}: &{name} {body}")
        anchors.append(name)
    if draw(st.integers(0, 4)) == 0:
        lines.append(f"self: &s [{draw(st.sampled_from(['*s', 'x']))}]")
    return "\n".join(lines) + "\n"


def reference(loader: Any, text: str) -> tuple[str, Any]:
    try:
        return "ok", yaml.load(text, Loader=loader)
    except Exception as exc:
        return type(exc).__name__, None


def check_bounded(text: str) -> None:
    from kairox_skills._yaml import MAX_LENGTH, YamlLimitError, _Limits, _load, _loader_classes

    python, c, c_events = _loader_classes()
    pairs = [(python, yaml.SafeLoader), (c, yaml.CSafeLoader), (c_events, yaml.CSafeLoader)]
    for bounded, plain in pairs:
        limits = _Limits(100, 10_000, 1 << 20, 64)
        try:
            got: tuple[str, Any] = ("ok", _load(text, bounded, limits, MAX_LENGTH))
        except YamlLimitError:
            continue  # refused: the unbounded loader is not run (it may build a bomb)
        except Exception as exc:
            got = (type(exc).__name__, None)
        # accepted: within the limits (at most 10,000 nodes), so the reference load is bounded too
        assert got == reference(plain, text), (bounded.__name__, text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(YAMLISH)
def test_bounded_loader_matches_pyyaml_on_yamlish_text(text: str) -> None:
    check_bounded(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(anchored())
@example(billion_laughs())
@example(billion_laughs(3, 9))
def test_bounded_loader_matches_pyyaml_or_refuses_alias_structures(text: str) -> None:
    check_bounded(text)


def test_a_huge_integer_is_one_skill_error_and_the_others_load(tmp_path: Path) -> None:
    """A 5,000-digit keyword is an error of its skill alone: the fast reader calling int()
    on it raises ValueError (3.11+: the digit limit), which must not fail the whole
    workspace source."""
    from kairox_testing import KairoxHarness

    ws, home = tmp_path / "ws", tmp_path / "home"
    skills = ws / ".kairox" / "skills"
    skills.mkdir(parents=True)
    home.mkdir()
    (skills / "good.md").write_text("---\nname: good\ndescription: a good skill\n---\nbody\n")
    (skills / "huge.md").write_text(f"---\nname: huge\ndescription: x\nkeywords: [{'1' * 5000}]\n---\nbody\n")
    harness = KairoxHarness(ws, home, plugins=[kairox_skills.hooks])
    result = harness.cli("--json", "skills", "list")
    data = json.loads(result.stdout)
    names = [s["name"] for s in data["skills"]]
    assert names == ["good"], result.stdout
    errors = json.dumps(data)
    assert "huge.md" in errors and "skill source" not in errors

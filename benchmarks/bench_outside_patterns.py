"""Patterns over outside text, on adversarial inputs of 1 to 64 KB, against the patterns before issue
"Trust by construction" item 4.

    uv run python benchmarks/bench_outside_patterns.py [--sizes 1,4,16,64] [--reps 3] [--old-budget 2]

Each row is one pattern kairox applies to outside text (a bundle's rule and a tool
call's command or path, a remote catalog's version spec, a config value, another
client's config, an agent file, a watched line, a policy rule, a bundle's hook
matcher, a TOML key, a glob, search.grep's pattern), on the input built to make the old pattern backtrack. The
baseline is the pattern as it was (kept below, only for this comparison; a rule's globs in
``tests/old_patterns.py``, where the tests use them as the oracle). Columns:
the median time now, the old time, and old / now. The old one is run at a size only
while its previous size took less than ``--old-budget`` seconds (most grow as n**2
or n**3); "-" marks a size it was not run at. ``bench_redaction.py`` does the same
for redaction.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import sys
from pathlib import Path

from _common import Fn, Row, parse_options, print_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from old_patterns import old_glob, old_path_matches  # the oracles of tests/plugins/test_rules.py

from kairox._compat import tomllib
from kairox._policy import _specificity
from kairox._text import _Glob
from kairox.ext import expand_env
from kairox.files import loads_toml
from kairox_agents._parse import _split_tool_names
from kairox_catalog.requirements import version_satisfies
from kairox_manifests._matcher import compile_matcher
from kairox_manifests.rules import command_matches, path_matches
from kairox_mcp.importer import escape_literal
from kairox_tools._grep import GrepQuery, compile_pattern
from kairox_ui.watch import _var_references

# -- the patterns before, for comparison only ---------------------------------------------------


_OLD_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|~=|>|<|\^)?\s*v?(\d+(?:\.\d+){0,2})(?:\.\*)?\s*$")
_OLD_VAR = re.compile(r"\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_OLD_KAIROX_VAR = re.compile(r"\$(?=\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\})")
_OLD_TOOL_SPLIT = re.compile(r"[,\s]+(?![^()]*\))")
_OLD_VAR_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}\s]*))?\}")
_OLD_GLOB_PART = re.compile(r"\*|\?|\[[^\]]*\]")


def _old_fnmatch(pattern: str, name: str) -> bool:
    re.purge()  # fnmatchcase's translation and compilation, uncached
    return re.compile(fnmatch.translate(pattern)).match(name) is not None


def _wide_ranges(text: str) -> str:
    """A set of distinct ranges spanning most of the BMP, one per 3 characters of ``text``."""
    return "[" + "".join(chr(0x100 + i) + "-" + chr(0xFFF0 - i) for i in range(len(text) // 3)) + "]"


def _old_toml(text: str) -> object:
    try:
        return tomllib.loads(text)
    except ValueError:
        return None


def _now_toml(text: str) -> object:
    try:
        return loads_toml(text)
    except ValueError:
        return None


def _refused(text: str) -> bool:
    try:
        version_satisfies((1,), text)
    except ValueError:
        return True
    return False


# -- the rows: name -> (what it stresses, the unit repeated to the size, now, old) --------------

SHAPES: dict[str, tuple[str, str, Fn, Fn]] = {
    "rule Bash(a*a*a*b)": (
        "a permission rule with 3 stars against a command that does not match",
        "a",
        lambda t: command_matches("a*a*a*b", t),
        lambda t: old_glob("a*a*a*b").fullmatch(t),
    ),
    "rule Read(**/a*a*b)": (
        "a path rule with stars against a deep path (every directory prefix tried)",
        "a/",
        lambda t: path_matches("**/a*a*b", "/w/" + t + "a", cwd="/w", project="/w", home="/h"),
        lambda t: old_path_matches("**/a*a*b", "/w/" + t + "a", cwd="/w", home="/h"),
    ),
    "version spec blanks": (
        "a catalog version clause of blanks",
        " ",
        lambda t: _refused(t + "x"),
        lambda t: _OLD_CLAUSE.match(t + "x"),
    ),
    "config ${A:-": (
        "a config value of unclosed `${A:-`",
        "${A:-",
        lambda t: expand_env(t, {}),
        lambda t: _OLD_VAR.sub("", t),
    ),
    "import ${A:-...}": (
        "another client's value `${A:-${A:-...}` escaped for kairox.toml",
        "${A:-",
        lambda t: escape_literal(t + "}"),
        lambda t: _OLD_KAIROX_VAR.sub("$$", t + "}"),
    ),
    "agent tools blanks": (
        "an agent's tool list: a run of blanks before a `)`",
        " ",
        lambda t: _split_tool_names("a" + t + "b)"),
        lambda t: _OLD_TOOL_SPLIT.split("a" + t + "b)"),
    ),
    "watch ${A:-": (
        "a watched line of unclosed `${A:-`",
        "${A:-",
        lambda t: list(_var_references(t + " ")),
        lambda t: list(_OLD_VAR_REFERENCE.finditer(t + " ")),
    ),
    "policy rule [[[": (
        "a policy rule key of unclosed `[`",
        "[",
        _specificity,
        lambda t: (_OLD_GLOB_PART.search(t), _OLD_GLOB_PART.sub("", t)),
    ),
    "hook matcher (a|aa)+b": (
        "a bundle's hook matcher against a tool name (size / 1024 characters: 1 to 64)",
        "a",
        lambda t: compile_matcher("(a|aa)+b").fullmatch(t[: max(1, len(t) // 1024) + 20]),
        lambda t: re.fullmatch("(a|aa)+b", t[: max(1, len(t) // 1024) + 20]),
    ),
    "glob [[[": (
        "a glob (policy rule, fs.list's or search.grep's glob) of unclosed `[`",
        "[",
        lambda t: _Glob(t).match("x"),
        lambda t: _old_fnmatch(t, "x"),
    ),
    "glob [wide ranges]": (
        "a glob of one set of distinct ranges over most of the BMP",
        "a",
        lambda t: _Glob(_wide_ranges(t)).match("x"),
        lambda t: _old_fnmatch(_wide_ranges(t), "x"),
    ),
    "grep (a|aa)+b": (
        "search.grep's pattern (Python search) on a line (size / 1024 characters + 20: 21 to 84)",
        "a",
        lambda t: compile_pattern(GrepQuery("(a|aa)+b", Path("."))).search(t[: len(t) // 1024 + 20]),
        lambda t: re.search("(a|aa)+b", t[: len(t) // 1024 + 20]),
    ),
    "toml a.a.a = 1": (
        "a kairox.toml key of many parts",
        "a.",
        lambda t: _now_toml(t + "a = 1\n"),
        lambda t: _old_toml(t + "a = 1\n"),
    ),
}


def main() -> None:
    opts = parse_options(__doc__, input_name="input", reps=3)
    rows = {
        name: Row(stresses, functools.partial(_repeat, unit), now, old)
        for name, (stresses, unit, now, old) in SHAPES.items()
    }
    print_table("Patterns over outside text: now vs the old patterns", rows, opts)


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


if __name__ == "__main__":
    main()

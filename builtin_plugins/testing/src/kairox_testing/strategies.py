"""Hypothesis strategies for plugin manifests (valid and invalid), for property tests.

Each ``*_manifests()`` strategy draws a JSON document that is a *valid*
manifest of its format: every path in it is relative (``./...``), stays inside
the plugin root and uses plain names, so a test can write the document into a
temporary plugin directory and load it. Referenced files need not exist (a
missing component directory is a warning, not an error), except a Philont
``main``, which a test must create (see :data:`PHILONT_MAIN`).

``invalid_manifests(fmt)`` draws ``(document, field_path)``: a valid document
with one known field replaced by a value of the wrong type, and the field path
the resulting error must name. ``json_documents()`` draws any JSON, biased
towards objects that use the format's own field names.

hypothesis comes with the ``strategies`` extra (``pip install "kairox-testing[strategies]"``);
the pytest plugin itself does not import it.

    from kairox_testing.strategies import kairox_manifests, MANIFEST_FILES

    @given(kairox_manifests())
    def test_loads(tmp_path_factory, doc): ...
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

from kairox_manifests.model import METADATA_FIELDS

__all__ = [
    "CLAUDE_FIELDS",
    "CODEX_FIELDS",
    "FORMATS",
    "KAIROX_FIELDS",
    "MANIFEST_FILES",
    "PHILONT_FIELDS",
    "PHILONT_MAIN",
    "claude_manifests",
    "codex_manifests",
    "escaping_paths",
    "invalid_manifests",
    "json_documents",
    "json_values",
    "kairox_manifests",
    "lsp_server_entries",
    "manifests",
    "mcp_server_entries",
    "philont_manifests",
    "plugin_names",
    "relative_paths",
]

#: where each format's manifest lives inside the plugin directory
MANIFEST_FILES = {
    "kairox": ".kairox-plugin/plugin.json",
    "codex": ".codex-plugin/plugin.json",
    "claude": ".claude-plugin/plugin.json",
    "philont": "plugin.json",
}
FORMATS = tuple(MANIFEST_FILES)
#: the entry file every generated Philont manifest names (a test creates it)
PHILONT_MAIN = "main.py"

KAIROX_FIELDS = (
    "name",
    "version",
    "description",
    "homepage",
    "license",
    "keywords",
    "skills",
    "commands",
    "agents",
    "mcpServers",
    "lspServers",
    "hooks",
    "permissions",
    "compatibility",
    "publisher",
    "trust",
    "defaultEnabled",
)
CODEX_FIELDS = (
    "name",
    *METADATA_FIELDS,
    "skills",
    "mcpServers",
    "apps",
    "interface",
)
CLAUDE_FIELDS = (
    "name",
    *METADATA_FIELDS,
    "displayName",
    "metadata",
    "defaultEnabled",
    "commands",
    "agents",
    "skills",
    "hooks",
    "mcpServers",
    "lspServers",
    "outputStyles",
)
PHILONT_FIELDS = (
    "id",
    "name",
    "version",
    "description",
    "author",
    "main",
    "requiresEnv",
    "providesTools",
    "sandbox",
    "permissions",
    "compatibility",
)
_FIELDS = {"kairox": KAIROX_FIELDS, "codex": CODEX_FIELDS, "claude": CLAUDE_FIELDS, "philont": PHILONT_FIELDS}

_LOWER = "abcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"
_WORD = st.builds(
    lambda head, tail: head + tail,
    st.sampled_from(_LOWER),
    st.text(_LOWER + _DIGITS + "_-", max_size=10),
)
_SEGMENT = st.text(_LOWER + _DIGITS, min_size=1, max_size=8)
_ENV_NAME = st.builds(
    lambda h, t: h + t, st.sampled_from(_LOWER.upper()), st.text(_LOWER.upper() + _DIGITS + "_", max_size=10)
)
_VERSION = st.tuples(st.integers(0, 20), st.integers(0, 20), st.integers(0, 20)).map(lambda v: f"{v[0]}.{v[1]}.{v[2]}")
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)


def plugin_names() -> st.SearchStrategy[str]:
    """kebab-case names (valid in every format)."""
    return st.builds(
        lambda head, rest, parts: "-".join([head + rest, *parts]),
        st.sampled_from(_LOWER),
        st.text(_LOWER + _DIGITS, max_size=10),
        st.lists(_SEGMENT, max_size=2),
    )


def relative_paths(*, max_parts: int = 3, suffix: str = "") -> st.SearchStrategy[str]:
    """``./a/b-c`` paths that stay inside the root (never ``.``, ``..``, absolute)."""
    return st.lists(_WORD, min_size=1, max_size=max_parts).map(lambda parts: "./" + "/".join(parts) + suffix)


def escaping_paths() -> st.SearchStrategy[str]:
    """Paths that leave the plugin root (or are absolute)."""
    return st.one_of(
        st.lists(_WORD, max_size=2).map(lambda p: "../" + "/".join(["x", *p])),
        st.lists(_WORD, min_size=1, max_size=2).map(lambda p: "./" + "/".join(p) + "/../../../outside"),
        st.lists(_WORD, min_size=1, max_size=2).map(lambda p: "/" + "/".join(p)),
        st.just("~/outside"),
    )


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**40), 2**40),
        st.floats(allow_nan=False, allow_infinity=False),
        _TEXT,
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
        max_leaves=max_leaves,
    )


def json_documents(fmt: str) -> st.SearchStrategy[Any]:
    """Any JSON, mostly objects whose keys are the format's field names (and a few others)."""
    keys = st.one_of(st.sampled_from(_FIELDS[fmt]), _TEXT)
    objects = st.dictionaries(keys, json_values(), max_size=8)
    return st.one_of(objects, objects, objects, json_values())


def _string_map(keys: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(keys, st.text(st.characters(codec="ascii", categories=("L", "N")), max_size=12), max_size=3)


def mcp_server_entries() -> st.SearchStrategy[dict[str, Any]]:
    """``.mcp.json`` server entries: stdio (command, args, env) or remote (type, url, headers)."""
    env_names = _ENV_NAME
    stdio = st.fixed_dictionaries(
        {"command": st.sampled_from(["npx", "uvx", "python", "${CLAUDE_PLUGIN_ROOT}/bin/server"])},
        optional={
            "args": st.lists(st.one_of(_WORD, st.just("${KAIROX_PLUGIN_ROOT}/server.js")), max_size=3),
            "env": _string_map(env_names),
            "type": st.just("stdio"),
        },
    )
    remote = st.fixed_dictionaries(
        {
            "type": st.sampled_from(["http", "sse", "streamable-http"]),
            "url": _WORD.map(lambda w: f"https://{w}.example.com/mcp"),
        },
        optional={"headers": _string_map(st.sampled_from(["Authorization", "X-Api-Key"]))},
    )
    return st.one_of(stdio, remote)


def lsp_server_entries() -> st.SearchStrategy[dict[str, Any]]:
    """Claude ``lspServers`` entries."""
    ext = st.sampled_from([".py", ".go", ".rs", ".ts"])
    return st.fixed_dictionaries(
        {
            "command": st.sampled_from(["pylsp", "gopls", "rust-analyzer"]),
            "extensionToLanguage": st.dictionaries(ext, _WORD, min_size=1, max_size=2),
        },
        optional={
            "args": st.lists(_WORD, max_size=2),
            "startupTimeout": st.integers(1, 60_000),
            "restartOnCrash": st.booleans(),
        },
    )


def _servers(entries: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(_WORD, entries, max_size=3)


def _paths_field() -> st.SearchStrategy[Any]:
    return st.one_of(relative_paths(), st.lists(relative_paths(), min_size=1, max_size=3))


def _person() -> st.SearchStrategy[Any]:
    return st.one_of(
        _WORD,
        st.fixed_dictionaries(
            {"name": _WORD},
            optional={"email": _WORD.map(lambda w: f"{w}@example.com"), "url": _WORD.map(lambda w: f"https://{w}.dev")},
        ),
    )


_KAIROX_EVENTS = ["session_start", "session_end", "pre_turn", "pre_tool_call", "post_tool_call"]


def _permissions() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "approvalPolicy": st.sampled_from(["untrusted", "on_request", "on_failure", "never"]),
            "sandboxPolicy": st.sampled_from(["read_only", "workspace_write", "danger_full_access"]),
            "tools": st.lists(_WORD.map(lambda w: f"{w}.*"), max_size=3),
        },
    )


def _compatibility() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "kairoxVersion": st.sampled_from([">=0.1", ">=0.1,<1", "^0.1", "~0.1", "*", ">=0.1 <2"]),
            "platforms": st.lists(st.sampled_from(["linux", "darwin", "win32", "macos", "windows"]), max_size=3),
            "requires": st.lists(st.sampled_from(["sh", "git", "node >=18", "python3 >=3.8"]), max_size=2),
        },
    )


def kairox_manifests() -> st.SearchStrategy[dict[str, Any]]:
    """Valid ``.kairox-plugin/plugin.json`` documents."""
    hook = st.fixed_dictionaries(
        {"event": st.sampled_from(_KAIROX_EVENTS), "script": relative_paths(suffix=".py")},
        optional={"timeout": st.integers(1, 120), "matcher": st.sampled_from(["fs\\..*", ".*", "weather\\.forecast"])},
    )
    return st.fixed_dictionaries(
        {"name": plugin_names()},
        optional={
            "version": _VERSION,
            "description": _TEXT,
            "homepage": _WORD.map(lambda w: f"https://{w}.example.com"),
            "license": st.sampled_from(["MIT", "Apache-2.0"]),
            "keywords": st.lists(_WORD, max_size=3),
            "skills": _paths_field(),
            "commands": _paths_field(),
            "hooks": st.lists(hook, max_size=3),
            "mcpServers": _servers(mcp_server_entries()),
            "lspServers": _servers(lsp_server_entries()),
            "permissions": _permissions(),
            "compatibility": _compatibility(),
            "publisher": _person(),
            "trust": st.sampled_from(["official", "verified", "community", "unknown"]),
            "defaultEnabled": st.booleans(),
        },
    )


def codex_manifests() -> st.SearchStrategy[dict[str, Any]]:
    """Valid ``.codex-plugin/plugin.json`` documents (``name`` may be empty: the directory name is used)."""
    interface = st.fixed_dictionaries(
        {},
        optional={
            "displayName": _TEXT,
            "shortDescription": _TEXT,
            "category": _WORD,
            "capabilities": st.lists(_WORD, max_size=3),
            "defaultPrompt": st.one_of(_TEXT, st.lists(_TEXT, max_size=3)),
        },
    )
    return st.fixed_dictionaries(
        {"name": st.one_of(plugin_names(), st.just(""))},
        optional={
            "version": _VERSION,
            "description": _TEXT,
            "author": _person(),
            "license": st.just("MIT"),
            "keywords": st.lists(_WORD, max_size=3),
            "skills": relative_paths(),
            "mcpServers": relative_paths(suffix=".json"),
            "apps": relative_paths(suffix=".json"),
            "interface": interface,
        },
    )


_CLAUDE_EVENTS = ["SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]


def _claude_hooks() -> st.SearchStrategy[dict[str, Any]]:
    handler = st.fixed_dictionaries(
        {
            "type": st.just("command"),
            "command": relative_paths(suffix=".sh").map(lambda p: "${CLAUDE_PLUGIN_ROOT}" + p[1:]),
        },
        optional={"timeout": st.integers(1, 600)},
    )
    group = st.fixed_dictionaries(
        {"hooks": st.lists(handler, min_size=1, max_size=2)},
        optional={"matcher": st.sampled_from(["Bash", "Write|Edit", "*", "", "mcp__.*"])},
    )
    return st.dictionaries(st.sampled_from(_CLAUDE_EVENTS), st.lists(group, max_size=2), max_size=3).map(
        lambda events: {"hooks": events}
    )


def claude_manifests() -> st.SearchStrategy[dict[str, Any]]:
    """Valid ``.claude-plugin/plugin.json`` documents."""
    return st.fixed_dictionaries(
        {"name": plugin_names()},
        optional={
            "version": _VERSION,
            "description": _TEXT,
            "displayName": _TEXT,
            "author": _person(),
            "homepage": _WORD.map(lambda w: f"https://{w}.example.com"),
            "repository": _WORD.map(lambda w: f"https://github.com/example/{w}"),
            "license": st.just("MIT"),
            "keywords": st.lists(_WORD, max_size=3),
            "defaultEnabled": st.booleans(),
            "skills": _paths_field(),
            "commands": _paths_field(),
            "agents": _paths_field(),
            "outputStyles": _paths_field(),
            "hooks": st.one_of(relative_paths(suffix=".json"), _claude_hooks()),
            "mcpServers": st.one_of(relative_paths(suffix=".json"), _servers(mcp_server_entries())),
            "lspServers": st.one_of(relative_paths(suffix=".json"), _servers(lsp_server_entries())),
        },
    )


def philont_manifests() -> st.SearchStrategy[dict[str, Any]]:
    """Valid Philont ``plugin.json`` documents; ``main`` is :data:`PHILONT_MAIN` (create it)."""
    return st.fixed_dictionaries(
        {"id": plugin_names(), "main": st.just(PHILONT_MAIN)},
        optional={
            "name": _TEXT,
            "version": _VERSION,
            "description": _TEXT,
            "requiresEnv": st.lists(_ENV_NAME, max_size=2),
            "providesTools": st.lists(_WORD, max_size=3, unique=True),
            "sandbox": st.sampled_from(["direct", "worker"]),
            "permissions": _permissions(),
            "compatibility": _compatibility(),
        },
    )


_VALID = {
    "kairox": kairox_manifests,
    "codex": codex_manifests,
    "claude": claude_manifests,
    "philont": philont_manifests,
}


def manifests(fmt: str) -> st.SearchStrategy[dict[str, Any]]:
    """The valid-manifest strategy of ``fmt`` (``kairox``, ``codex``, ``claude``, ``philont``)."""
    return _VALID[fmt]()


_NOT_A_STRING = st.one_of(st.integers(), st.booleans(), st.lists(st.integers(), max_size=2), st.just({"a": 1}))
_NOT_A_LIST = st.one_of(st.integers(), st.booleans(), st.just({"a": 1}))
_NOT_A_PATH = st.one_of(st.integers(), st.booleans(), st.just({"a": 1}), st.just([1]))
_NOT_A_TABLE_OR_PATH = st.one_of(st.integers(), st.booleans(), st.just([1]))

#: per format: (field path, how to set it on a document, wrong values)
_BREAKERS: dict[str, list[tuple[str, Any, st.SearchStrategy[Any]]]] = {
    "kairox": [
        ("name", ["name"], _NOT_A_STRING),
        ("version", ["version"], _NOT_A_STRING.filter(lambda v: v is not None)),
        ("hooks", ["hooks"], st.one_of(st.integers(), st.just({"event": "pre_turn"}), _TEXT)),
        ("hooks[0].event", ["hooks", 0, "event"], st.one_of(st.integers(), st.just("not_an_event"))),
        ("hooks[0].script", ["hooks", 0, "script"], st.one_of(st.integers(), escaping_paths())),
        ("permissions.approvalPolicy", ["permissions", "approvalPolicy"], st.sampled_from(["sometimes", 3, True])),
        ("compatibility.requires[0]", ["compatibility", "requires", 0], st.one_of(st.integers(), st.just("no!pe"))),
        ("compatibility.kairoxVersion", ["compatibility", "kairoxVersion"], st.sampled_from(["garbage", ">>1"])),
        ("trust", ["trust"], st.sampled_from(["very", 1, None])),
        ("skills", ["skills"], st.one_of(_NOT_A_PATH, escaping_paths())),
        ("defaultEnabled", ["defaultEnabled"], st.sampled_from(["yes", 1, []])),
    ],
    "codex": [
        ("name", ["name"], _NOT_A_STRING),
        ("skills", ["skills"], _NOT_A_PATH),
        ("mcpServers", ["mcpServers"], _NOT_A_PATH),
        ("keywords", ["keywords"], _NOT_A_LIST),
        ("interface", ["interface"], st.one_of(st.integers(), _TEXT, st.just([1]))),
    ],
    "claude": [
        ("name", ["name"], st.one_of(_NOT_A_STRING, st.just("has space"), st.just(""))),
        ("keywords", ["keywords"], _NOT_A_LIST),
        ("skills", ["skills"], st.one_of(_NOT_A_PATH, escaping_paths())),
        ("hooks", ["hooks"], st.one_of(st.integers(), st.booleans(), escaping_paths())),
        ("mcpServers", ["mcpServers"], st.one_of(_NOT_A_TABLE_OR_PATH, escaping_paths())),
        ("defaultEnabled", ["defaultEnabled"], st.sampled_from(["no", 0])),
    ],
    "philont": [
        ("id", ["id"], st.one_of(_NOT_A_STRING, st.just("bad id"))),
        ("main", ["main"], st.one_of(st.integers(), escaping_paths(), st.just("index.js"))),
        ("sandbox", ["sandbox"], st.sampled_from(["vm", 1, True])),
        ("requiresEnv", ["requiresEnv"], st.one_of(st.integers(), st.just(["1BAD"]), st.just([3]))),
        ("providesTools", ["providesTools"], st.one_of(st.integers(), st.just(["has space"]))),
    ],
}


#: what a list must hold before one of its items is broken
_LIST_SEEDS: dict[str, Any] = {"hooks": {"event": "pre_turn", "script": "./hooks/h.py"}, "requires": "git"}


def _set(doc: dict[str, Any], where: list[Any], value: Any) -> dict[str, Any]:
    """A copy of ``doc`` with the value at ``where`` replaced (containers created on the way)."""
    out = dict(doc)
    node: Any = out
    for key, nxt in itertools.pairwise(where):
        current = node.get(key) if isinstance(node, dict) else node[key]
        if isinstance(nxt, int):
            child: Any = list(current) if isinstance(current, list) and current else [_LIST_SEEDS[key]]
            child[nxt] = dict(child[nxt]) if isinstance(child[nxt], dict) else child[nxt]
        else:
            child = dict(current) if isinstance(current, dict) else {}
        node[key] = child
        node = child
    node[where[-1]] = value
    return out


def invalid_manifests(fmt: str) -> st.SearchStrategy[tuple[dict[str, Any], str]]:
    """``(document, field path)``: a valid ``fmt`` manifest with one known field of the wrong type/value."""

    @st.composite
    def build(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
        doc = draw(_VALID[fmt]())
        path, where, values = draw(st.sampled_from(_BREAKERS[fmt]))
        return _set(doc, where, draw(values)), path

    return build()

"""The Codex plugin format as Codex's own reader takes it: hooks (a path, a list, inline, or the default
hooks/hooks.json), skills as a list, inline mcpServers; bad paths warn and the default is read."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plugin_helpers import real, write_plugin

from kairox_manifests.errors import ManifestError
from kairox_manifests.formats import CodexFormat
from kairox_manifests.model import BundleManifest
from kairox_manifests.paths import is_inside
from kairox_testing.strategies import codex_manifests, json_values, mcp_server_entries

BUNDLES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles"
PROPS = settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60, deadline=None)


def keys(m: BundleManifest) -> list[str]:
    return [c.key for c in m.contributions]


def test_hooks_as_a_path_skills_as_a_list_inline_mcp_servers() -> None:
    root = BUNDLES / "codex" / "ship-it"
    m = CodexFormat().probe(root)
    assert m is not None
    assert keys(m) == ["skill/tagging", "skill/announce", "mcp_server/releases", "hook/pre_tool_call.check"]
    releases = m.contribution("mcp_server/releases")
    assert releases is not None and releases.config["args"] == [f"{real(root)}/server.js"]  # ${PLUGIN_ROOT}
    check = m.contribution("hook/pre_tool_call.check")
    assert check is not None
    assert (check.config.matcher, check.config.timeout) == ("Bash", 5.0)
    assert check.config.command == f"{real(root)}/config/check.py"
    assert check.source == real(root) / "config" / "hooks.json"
    # a declared hooks path replaces hooks/hooks.json (whose SessionStart is never read)
    assert m.by_kind("hook") == [check]
    assert m.problems == ()


def test_hooks_as_a_list_of_paths_with_a_bad_one() -> None:
    m = CodexFormat().probe(BUNDLES / "codex" / "hook-list")
    assert m is not None
    assert [(c.config.source_event, c.config.run_async) for c in m.by_kind("hook")] == [
        ("SessionStart", False),
        ("PostToolUse", True),
    ]
    [bad] = m.problems
    assert bad.path == "hooks[2]" and "must start with ./" in bad.message


def test_inline_hooks_tables() -> None:
    root = BUNDLES / "codex" / "hook-inline"
    m = CodexFormat().probe(root)
    assert m is not None
    assert [(c.config.event, c.config.condition) for c in m.by_kind("hook")] == [
        ("pre_turn", None),
        ("pre_tool_call", "Bash(rm *)"),
    ]
    [warning] = m.problems
    assert warning.kind == "hook-event:PreCompact" and warning.path == "hooks[1].hooks.PreCompact"
    assert warning.file == str(root / ".codex-plugin" / "plugin.json")


def test_defaults_without_declarations() -> None:
    m = CodexFormat().probe(BUNDLES / "codex" / "defaults")
    assert m is not None
    assert keys(m) == ["skill/lint", "mcp_server/docs", "hook/session_start.echo"]


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("hooks", 3, "hooks"),
        ("hooks", [3], "hooks[0]"),
        ("skills", {"a": 1}, "skills"),
        ("skills", ["./ok", 1], "skills[1]"),
        ("mcpServers", [1], "mcpServers"),
        ("mcpServers", {"x": {"args": ["no command"]}}, "mcpServers.x"),
        (
            "hooks",
            {"hooks": {"PreToolUse": [{"hooks": [{"command": "x", "if": "Bash(git"}]}]}},
            "hooks.hooks.PreToolUse[0].hooks[0].if",
        ),
        (
            "hooks",
            {"hooks": {"PreToolUse": [{"hooks": [{"command": "x", "async": "yes"}]}]}},
            "hooks.hooks.PreToolUse[0].hooks[0].async",
        ),
    ],
)
def test_wrong_types_fail_with_the_field(tmp_path: Path, field: str, value: Any, path: str) -> None:
    root = write_plugin(tmp_path / "p", {".codex-plugin/plugin.json": {"name": "p", field: value}})
    with pytest.raises(ManifestError) as info:
        CodexFormat().probe(root)
    assert info.value.file == str(root / ".codex-plugin" / "plugin.json")
    assert info.value.path == path


def test_an_error_inside_a_hooks_file_names_that_file(tmp_path: Path) -> None:
    root = write_plugin(
        tmp_path / "p",
        {".codex-plugin/plugin.json": {"name": "p", "hooks": "./h.json"}, "h.json": {"hooks": {"PreToolUse": 3}}},
    )
    with pytest.raises(ManifestError) as info:
        CodexFormat().probe(root)
    assert info.value.file == str(real(root) / "h.json") and info.value.path == "hooks.PreToolUse"


def test_config_toml_spelling_in_a_mcp_json_names_the_key(tmp_path: Path) -> None:
    # read as a bare table, `mcp_servers` would be one server of that name missing its command
    servers = {"mcp_servers": {"docs": {"url": "https://docs.example.com/mcp", "bearer_token_env_var": "DOCS_KEY"}}}
    root = write_plugin(tmp_path / "p", {".codex-plugin/plugin.json": {"name": "p"}, ".mcp.json": servers})
    with pytest.raises(ManifestError) as info:
        CodexFormat().probe(root)
    assert info.value.file == str(real(root) / ".mcp.json") and info.value.path == "mcp_servers"
    assert "`mcpServers`" in info.value.message


# -- properties ---------------------------------------------------------------------------------

_REL = st.sampled_from(
    ["./skills", "./more", "./hooks/hooks.json", "./h.json", "./.mcp.json", "./x/../y", "skills", "/abs", "../up"]
)
_HOOK_TABLE = st.fixed_dictionaries(
    {
        "hooks": st.dictionaries(
            st.sampled_from(["PreToolUse", "PostToolUse", "SessionStart", "UserPromptSubmit", "Stop", "PreCompact"]),
            st.lists(
                st.fixed_dictionaries(
                    {
                        "hooks": st.lists(
                            st.fixed_dictionaries(
                                {"type": st.just("command"), "command": st.just("echo x")},
                                optional={
                                    "timeout": st.integers(1, 60),
                                    "async": st.booleans(),
                                    "if": st.sampled_from(["Bash", "Bash(git *)", "Edit(src/**)", "mcp__s__*"]),
                                    "statusMessage": st.text(max_size=5),
                                },
                            ),
                            max_size=2,
                        )
                    },
                    optional={"matcher": st.sampled_from(["", "*", "Bash", "Write|Edit", "startup"])},
                ),
                max_size=2,
            ),
            max_size=3,
        )
    }
)
_HOOKS = st.one_of(_REL, st.lists(_REL, max_size=3), _HOOK_TABLE, st.lists(_HOOK_TABLE, max_size=2), json_values())
_SKILLS = st.one_of(_REL, st.lists(_REL, max_size=3), json_values())
_MCP = st.one_of(_REL, st.dictionaries(st.sampled_from(["a", "b"]), mcp_server_entries(), max_size=2), json_values())
_FILES = {
    "skills/s/SKILL.md": "---\nname: s\ndescription: d\n---\nx",
    "more/m/SKILL.md": "---\nname: m\ndescription: d\n---\nx",
    "hooks/hooks.json": json.dumps({"hooks": {"SessionStart": [{"hooks": [{"command": "echo hi"}]}]}}),
    "h.json": json.dumps({"hooks": {"Stop": [{"hooks": [{"command": "echo hi"}]}]}}),
    ".mcp.json": json.dumps({"mcpServers": {"fs": {"command": "npx"}}}),
}


@PROPS
@given(
    document=codex_manifests(),
    extra=st.fixed_dictionaries({}, optional={"hooks": _HOOKS, "skills": _SKILLS, "mcpServers": _MCP}),
    unknown=st.dictionaries(st.text(min_size=1, max_size=8), json_values(), max_size=3),
    drop=st.sets(st.sampled_from(["name", "version", "interface", "skills", "mcpServers", "hooks"])),
)
def test_codex_manifests_with_any_hooks_skills_servers_never_crash(
    document: dict[str, Any], extra: dict[str, Any], unknown: dict[str, Any], drop: set[str]
) -> None:
    doc = {k: v for k, v in {**unknown, **document, **extra}.items() if k not in drop}
    base = Path(tempfile.mkdtemp(prefix="kx-codex-"))
    try:
        root = write_plugin(base / "p", {**_FILES, ".codex-plugin/plugin.json": doc})
        manifest_file = str(root / ".codex-plugin" / "plugin.json")
        try:
            m = CodexFormat().probe(root)
        except ManifestError as exc:
            assert exc.file, "the error names its file"
            if exc.file == manifest_file:
                top = exc.path.split(".")[0].split("[")[0]
                assert top in doc or top == "name", (exc.path, doc)
            return
        assert m is not None
        real_root = real(root)
        for c in m.contributions:
            assert is_inside(real(c.source), real_root), c
        for p in m.problems:
            assert p.file and isinstance(p.path, str)
        again = BundleManifest.from_dict(json.loads(json.dumps(m.to_dict())))
        assert again == m
    finally:
        shutil.rmtree(base, ignore_errors=True)

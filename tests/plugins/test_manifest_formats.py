"""Manifest formats: what each reads, what it refuses (with file and field path), what it warns about."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from plugin_helpers import FIXTURES, real, write_plugin

from kairox.ext import ApprovalPolicy, Permissions, SandboxPolicy
from kairox_manifests.discovery import probe, sorted_formats
from kairox_manifests.errors import ManifestError
from kairox_manifests.formats import ClaudeDefaultLayout, ClaudeFormat, CodexFormat, KairoxFormat, builtin_formats
from kairox_manifests.model import BundleManifest, Requirement, Trust
from kairox_philont.manifest import PhilontFormat

ALL_FORMATS = sorted_formats([*builtin_formats(), PhilontFormat()])


def keys(manifest: BundleManifest) -> list[str]:
    return [c.key for c in manifest.contributions]


def error_of(root: Path) -> ManifestError:
    manifest, error = probe(root, ALL_FORMATS)
    assert manifest is None, f"expected an error, got {manifest}"
    assert error is not None
    return error


# -- fixtures of each format ---------------------------------------------------------------


def test_claude_fixture_reads_every_component() -> None:
    root = FIXTURES / "claude" / "code-review"
    m = ClaudeFormat().probe(root)
    assert m is not None
    assert (m.name, m.format, m.version) == ("code-review", "claude", "1.4.0")
    assert m.publisher is not None and m.publisher.email == "review-tools@example.com"
    assert m.metadata["license"] == "MIT" and m.metadata["keywords"] == ["review", "security", "git"]
    assert keys(m) == [
        "skill/review-diff",
        "skill/security-audit",
        "command/review",
        "agent/reviewer",
        "hook/pre_turn.prompt-context",
        "hook/pre_tool_call.guard-bash",
        "hook/post_tool_call.log-tool",
        "mcp_server/time",
    ]
    guard = m.contribution("hook/pre_tool_call.guard-bash")
    assert guard is not None
    assert guard.config.source_event == "PreToolUse" and guard.config.matcher == "Bash"
    # ${CLAUDE_PLUGIN_ROOT} is expanded to the resolved root
    assert guard.config.command == f"{real(root)}/scripts/guard-bash.py"
    assert guard.config.timeout == 10.0
    # the catch-all matcher is no matcher; Notification has no kairox event: warned, skipped
    log_tool = m.contribution("hook/post_tool_call.log-tool")
    assert log_tool is not None and log_tool.config.matcher == ".*"
    assert [p.path for p in m.problems] == ["hooks.Notification"]


def test_codex_fixture() -> None:
    m = CodexFormat().probe(FIXTURES / "codex" / "release-notes")
    assert m is not None
    assert (m.name, m.version, m.format) == ("release-notes", "0.3.1", "codex")
    assert keys(m) == ["skill/changelog", "mcp_server/notes"]
    notes = m.contribution("mcp_server/notes")
    assert notes is not None
    assert notes.config["args"] == [f"{m.root}/mcp/notes_server.py"]
    assert m.metadata["interface"]["displayName"] == "Release Notes"
    assert m.problems == ()


def test_kairox_fixture_permissions_compat_trust() -> None:
    m = KairoxFormat().probe(FIXTURES / "kairox" / "docs-helper")
    assert m is not None
    assert m.trust is Trust.COMMUNITY
    assert m.permissions == Permissions(ApprovalPolicy.ON_REQUEST, SandboxPolicy.READ_ONLY, ("docs-helper.*",))
    assert m.compatibility.kairox_version == ">=0.1,<1"
    assert m.compatibility.requires == (Requirement("node", ">=18"), Requirement("python3"))
    assert m.publisher is not None and m.publisher.name == "Docs Guild"
    hooks = m.by_kind("hook")
    assert [(h.config.event, h.config.script.name) for h in hooks] == [
        ("pre_turn", "inject-context.js"),
        ("session_start", "session-start.mjs"),
        ("pre_tool_call", "guard.py"),
        ("post_tool_call", "audit.py"),
    ]
    assert keys(m)[-1] == "lsp_server/pylsp"
    assert m.problems == ()  # "$schema" is not an unknown field


def test_philont_fixtures() -> None:
    weather = PhilontFormat().probe(FIXTURES / "philont" / "weather")
    vault = PhilontFormat().probe(FIXTURES / "philont" / "vault")
    assert weather is not None and vault is not None
    assert keys(weather) == ["tool/forecast", "tool/cities"]
    assert weather.code is not None and weather.code.sandbox == "direct" and weather.code.main.name == "main.py"
    assert vault.code is not None and vault.code.sandbox == "worker"
    assert vault.code.requires_env == ("VAULT_TOKEN",) and vault.code.tool_prefix == "vault"


def test_resolution_order_kairox_then_codex_then_claude(tmp_path: Path) -> None:
    # every manifest is read; the name (metadata) comes from the first, and the disagreement is a warning
    root = write_plugin(
        tmp_path / "multi",
        {
            ".claude-plugin/plugin.json": {"name": "from-claude"},
            ".codex-plugin/plugin.json": {"name": "from-codex"},
        },
    )
    manifest, _ = probe(root, ALL_FORMATS)
    assert manifest is not None and manifest.name == "from-codex"
    assert manifest.all_formats == ("codex", "claude")
    [conflict] = [p for p in manifest.problems if p.kind == "manifest-conflict"]
    assert conflict.path == "name" and conflict.file == str(root / ".claude-plugin/plugin.json")
    write_plugin(root, {".kairox-plugin/plugin.json": {"name": "from-kairox"}})
    manifest, _ = probe(root, ALL_FORMATS)
    assert manifest is not None and manifest.name == "from-kairox"
    assert manifest.all_formats == ("kairox", "codex", "claude")


# -- Claude details -------------------------------------------------------------------------


def test_claude_manifest_less_layout_uses_directory_name(tmp_path: Path) -> None:
    root = write_plugin(
        tmp_path / "notes-kit",
        {
            "skills/take-notes/SKILL.md": "---\nname: take-notes\ndescription: x\n---\nbody",
            "commands/sync.md": "Sync notes",
            ".mcp.json": {"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-fs"]}}},
        },
    )
    manifest, error = probe(root, ALL_FORMATS)
    assert error is None and manifest is not None
    assert (manifest.name, manifest.format) == ("notes-kit", "claude-layout")
    assert keys(manifest) == ["skill/take-notes", "command/sync", "mcp_server/fs"]


def test_empty_directory_is_not_a_plugin(tmp_path: Path) -> None:
    (tmp_path / "nothing").mkdir()
    assert probe(tmp_path / "nothing", ALL_FORMATS) == (None, None)
    assert ClaudeDefaultLayout().probe(tmp_path / "nothing") is None


def test_claude_declared_paths_add_to_defaults(tmp_path: Path) -> None:
    root = write_plugin(
        tmp_path / "p",
        {
            ".claude-plugin/plugin.json": {
                "name": "p",
                "skills": "./extra-skills",
                "commands": ["./more/one.md"],
                "mcpServers": {"inline": {"url": "https://example.com/mcp", "type": "http"}},
                "lspServers": "./lsp.json",
            },
            "skills/a/SKILL.md": "x",
            "extra-skills/b/SKILL.md": "x",
            "commands/c.md": "x",
            "more/one.md": "x",
            ".mcp.json": {"mcpServers": {"from-file": {"command": "srv"}}},
            "lsp.json": {"go": {"command": "gopls", "extensionToLanguage": {".go": "go"}}},
        },
    )
    m = ClaudeFormat().probe(root)
    assert m is not None
    assert sorted(keys(m)) == sorted(
        [
            "skill/a",
            "skill/b",
            "command/c",
            "command/one",
            "mcp_server/inline",
            "mcp_server/from-file",
            "lsp_server/go",
        ]
    )


def test_claude_hooks_in_manifest_and_default_file_are_not_read_twice(tmp_path: Path) -> None:
    hooks = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}}
    root = write_plugin(
        tmp_path / "p",
        {".claude-plugin/plugin.json": {"name": "p", "hooks": "./hooks/hooks.json"}, "hooks/hooks.json": hooks},
    )
    m = ClaudeFormat().probe(root)
    assert m is not None
    assert keys(m) == ["hook/session_start.echo"]


def test_claude_unsupported_hook_types_warn(tmp_path: Path) -> None:
    root = write_plugin(
        tmp_path / "p",
        {
            ".claude-plugin/plugin.json": {
                "name": "p",
                "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "ok?"}]}]},
            }
        },
    )
    m = ClaudeFormat().probe(root)
    assert m is not None and m.by_kind("hook") == []
    assert [p.path for p in m.problems] == ["hooks.PreToolUse[0].hooks[0]"]


def test_claude_name_not_kebab_case_warns(tmp_path: Path) -> None:
    root = write_plugin(tmp_path / "p", {".claude-plugin/plugin.json": {"name": "My_Plugin"}})
    m = ClaudeFormat().probe(root)
    assert m is not None and m.name == "My_Plugin"
    assert [(p.path, p.severity) for p in m.problems] == [("name", "warning")]


# -- errors name the file and the field ------------------------------------------------------


@pytest.mark.parametrize(
    ("manifest", "path", "fragment"),
    [
        ({"name": 42}, "name", "expected a string"),
        ({"name": "x", "hooks": "nope"}, "hooks", "expected a list"),
        ({"name": "x", "hooks": [{"event": "pre_turn"}]}, "hooks[0].script", "required"),
        ({"name": "x", "hooks": [{"event": "on_save", "script": "./a.py"}]}, "hooks[0].event", "pre_turn"),
        ({"name": "x", "hooks": [{"event": "pre_turn", "script": "./a.py", "timeout": -1}]}, "hooks[0].timeout", ""),
        ({"name": "x", "permissions": {"approvalPolicy": "sometimes"}}, "permissions.approvalPolicy", "on_request"),
        ({"name": "x", "permissions": {"tools": "fs.*"}}, "permissions.tools", "expected a list"),
        ({"name": "x", "compatibility": {"requires": ["node >>>20"]}}, "compatibility.requires[0]", "version range"),
        ({"name": "x", "compatibility": {"kairoxVersion": "soon"}}, "compatibility.kairoxVersion", ""),
        ({"name": "x", "trust": "total"}, "trust", "official"),
        ({"name": "x", "mcpServers": {"git": {"command": 3}}}, "mcpServers.git.command", "expected a string"),
        ({"name": "x", "mcpServers": {"git": {"command": "g", "args": "a b"}}}, "mcpServers.git.args", "list"),
        ({"name": "x", "mcpServers": {"git": {"type": "ws", "url": "u"}}}, "mcpServers.git.type", "stdio"),
        ({"name": "x", "lspServers": {"go": {"command": "gopls"}}}, "lspServers.go.extensionToLanguage", "missing"),
        ({"name": "x", "publisher": 7}, "publisher", "name"),
        ({"name": "has space"}, "name", "plugin name"),
    ],
)
def test_kairox_known_field_of_wrong_type_fails_with_path(
    tmp_path: Path, manifest: dict[str, object], path: str, fragment: str
) -> None:
    root = write_plugin(tmp_path / "p", {".kairox-plugin/plugin.json": manifest, "a.py": ""})
    err = error_of(root)
    assert err.file == str(root / ".kairox-plugin" / "plugin.json")
    assert err.path == path
    assert fragment in err.message


def test_error_in_a_referenced_file_names_that_file(tmp_path: Path) -> None:
    root = write_plugin(
        tmp_path / "p",
        {
            ".claude-plugin/plugin.json": {"name": "p"},
            "hooks/hooks.json": {"hooks": {"PreToolUse": [{"matcher": 5, "hooks": []}]}},
        },
    )
    err = error_of(root)
    assert err.file == str(real(root) / "hooks" / "hooks.json")
    assert err.path == "hooks.PreToolUse[0].matcher"


def test_invalid_json_is_an_error_with_the_file(tmp_path: Path) -> None:
    root = write_plugin(tmp_path / "p", {".codex-plugin/plugin.json": "{not json"})
    err = error_of(root)
    assert err.file == str(root / ".codex-plugin" / "plugin.json")
    assert "invalid JSON" in err.message


def test_unknown_fields_warn_everywhere(tmp_path: Path) -> None:
    root = write_plugin(
        tmp_path / "p",
        {
            ".kairox-plugin/plugin.json": {
                "name": "p",
                "colour": "blue",
                "permissions": {"approvalPolicy": "never", "network": True},
                "hooks": [{"event": "pre_turn", "script": "./h.py", "when": "always"}],
            },
            "h.py": "",
        },
    )
    m = KairoxFormat().probe(root)
    assert m is not None
    assert sorted(p.path for p in m.problems) == ["colour", "hooks[0].when", "permissions.network"]
    assert all(p.severity == "warning" for p in m.problems)


def test_missing_declared_directory_warns(tmp_path: Path) -> None:
    root = write_plugin(tmp_path / "p", {".kairox-plugin/plugin.json": {"name": "p", "skills": "./nope"}})
    m = KairoxFormat().probe(root)
    assert m is not None and m.contributions == ()
    assert [p.path for p in m.problems] == ["skills"]


# -- paths stay inside the root -----------------------------------------------------------------


@pytest.mark.parametrize("bad", ["../outside", "./a/../../outside", "/etc", "~/x", "C:\\Windows"])
def test_escaping_paths_fail(tmp_path: Path, bad: str) -> None:
    root = write_plugin(tmp_path / "p", {".kairox-plugin/plugin.json": {"name": "p", "skills": bad}})
    err = error_of(root)
    assert err.path == "skills"


def test_symlink_out_of_the_root_fails(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_plugin(outside, {"evil/SKILL.md": "x"})
    root = write_plugin(tmp_path / "p", {".kairox-plugin/plugin.json": {"name": "p", "skills": "./linked"}})
    os.symlink(outside, root / "linked")
    err = error_of(root)
    assert err.path == "skills" and "outside the plugin root" in err.message


def test_hook_script_symlinked_out_of_the_root_fails(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.py").write_text("print('hi')")
    root = write_plugin(
        tmp_path / "p",
        {".kairox-plugin/plugin.json": {"name": "p", "hooks": [{"event": "pre_turn", "script": "./h.py"}]}},
    )
    os.symlink(tmp_path / "elsewhere.py", root / "h.py")
    assert error_of(root).path == "hooks[0].script"


def test_symlinked_default_directory_out_of_the_root_is_ignored(tmp_path: Path) -> None:
    write_plugin(tmp_path / "outside", {"x/SKILL.md": "x"})
    root = write_plugin(tmp_path / "p", {".claude-plugin/plugin.json": {"name": "p"}})
    os.symlink(tmp_path / "outside", root / "skills")
    m = ClaudeFormat().probe(root)
    assert m is not None and m.by_kind("skill") == []
    assert "outside the plugin root" in m.problems[0].message


def test_codex_bad_paths_warn_and_the_defaults_are_read(tmp_path: Path) -> None:
    # as in Codex: a declared path it cannot use is a warning, and the default location is read instead
    root = write_plugin(
        tmp_path / "p",
        {
            ".codex-plugin/plugin.json": {"name": "p", "skills": "skills", "mcpServers": "./a/../.mcp.json"},
            "skills/s/SKILL.md": "x",
            ".mcp.json": {"mcpServers": {"x": {"command": "x"}}},
        },
    )
    m = CodexFormat().probe(root)
    assert m is not None
    assert keys(m) == ["skill/s", "mcp_server/x"]
    assert [p.path for p in m.problems] == ["skills", "mcpServers"]


def test_codex_name_falls_back_to_directory(tmp_path: Path) -> None:
    root = write_plugin(tmp_path / "dir-name", {".codex-plugin/plugin.json": {"name": "  "}})
    m = CodexFormat().probe(root)
    assert m is not None and m.name == "dir-name"


# -- Philont ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ({"id": "p", "main": "index.js"}, "main"),
        ({"id": "p", "main": "../x.py"}, "main"),
        ({"id": "p", "main": "missing.py"}, "main"),
        ({"id": "p", "sandbox": "vm"}, "sandbox"),
        ({"id": "p", "requiresEnv": ["NOT-A-NAME"]}, "requiresEnv[0]"),
        ({"id": "p", "providesTools": ["bad name"]}, "providesTools[0]"),
        ({"id": 3}, "id"),
    ],
)
def test_philont_errors(tmp_path: Path, doc: dict[str, object], path: str) -> None:
    root = write_plugin(tmp_path / "p", {"plugin.json": doc, "index.py": "def register(ctx): pass"})
    assert error_of(root).path == path


def test_philont_main_as_module_or_package(tmp_path: Path) -> None:
    root = write_plugin(
        tmp_path / "p",
        {
            "plugin.json": {"id": "p", "main": "pkg.entry"},
            "pkg/__init__.py": "",
            "pkg/entry.py": "def register(c): ...",
        },
    )
    m = PhilontFormat().probe(root)
    assert m is not None and m.code is not None and m.code.main == real(root) / "pkg" / "entry.py"
    write_plugin(root, {"plugin.json": {"id": "p", "main": "pkg"}})
    m = PhilontFormat().probe(root)
    assert m is not None and m.code is not None and m.code.main == real(root) / "pkg" / "__init__.py"


def test_plugin_json_without_id_is_not_philont(tmp_path: Path) -> None:
    root = write_plugin(tmp_path / "p", {"plugin.json": {"name": "something-else"}})
    assert PhilontFormat().probe(root) is None


@pytest.mark.parametrize("matcher", ["(?=Bash)Bash", r"(a)\1", "Bash\\Z"])
def test_a_matcher_re2_cannot_run_is_refused_naming_the_field(tmp_path: Path, matcher: str) -> None:
    root = write_plugin(
        tmp_path / "p",
        {
            ".claude-plugin/plugin.json": {"name": "p"},
            "hooks/hooks.json": {"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [{"command": "true"}]}]}},
        },
    )
    err = error_of(root)
    assert err.file == str(real(root) / "hooks" / "hooks.json")
    assert err.path == "hooks.PreToolUse[0].matcher"
    assert "linear time" in err.message

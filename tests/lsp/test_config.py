"""``[lsp_servers.NAME]`` and Claude ``lspServers`` / ``.lsp.json`` entries."""

from __future__ import annotations

import json
from pathlib import Path, PurePath
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kairox_lsp.hooks
from kairox import Runtime
from kairox_lsp._config import (
    LspServerConfig,
    language_for,
    load_lsp_json,
    parse_lsp_servers,
    patterns_for,
)
from kairox_peer import matches

from .helpers import config_runtime


def _runtime(tmp_path: Path, document: dict[str, Any], env: dict[str, str] | None = None) -> Runtime:
    return config_runtime(tmp_path, kairox_lsp.hooks, document, env)


def test_section_entries_are_structured_and_bad_ones_dropped(tmp_path: Path) -> None:
    rt = _runtime(
        tmp_path,
        {
            "lsp_servers": {
                "pyright": {
                    "command": "${TOOLS:-/opt}/basedpyright-langserver",
                    "args": ["--stdio"],
                    "languages": ["python"],
                    "settings": {"python": {"analysis": {"typeCheckingMode": "basic"}}},
                    "startup_timeout": 20,
                },
                "broken": {"command": "x", "args": "--stdio", "startup_timeout": -1},
                "typo": {"command": "y", "file_pattern": ["*.py"]},
            }
        },
    )
    servers = rt.config.section("lsp_servers")
    assert list(servers) == ["pyright"]
    cfg = servers["pyright"]
    assert cfg.command == "/opt/basedpyright-langserver"
    assert cfg.args == ["--stdio"] and cfg.startup_timeout == 20.0
    assert cfg.settings["python"]["analysis"]["typeCheckingMode"] == "basic"
    paths = {e.path for e in rt.config.errors}
    assert "lsp_servers.broken.args" in paths
    assert "lsp_servers.typo.file_pattern" in paths
    assert all(e.file == "ws/kairox.toml" for e in rt.config.errors)
    assert any("file_patterns" in str(e) for e in rt.config.errors)  # the hint names the right key


def test_non_positive_timeout_is_an_error(tmp_path: Path) -> None:
    rt = _runtime(tmp_path, {"lsp_servers": {"a": {"command": "x", "startup_timeout": 0}}})
    assert rt.config.section("lsp_servers") == {}
    assert any("startup_timeout" in str(e) and e.path.startswith("lsp_servers.a") for e in rt.config.errors)


def test_empty_command_is_an_error(tmp_path: Path) -> None:
    rt = _runtime(tmp_path, {"lsp_servers": {"a": {"command": "  "}}})
    assert rt.config.section("lsp_servers") == {}
    assert rt.config.errors


def test_patterns_and_languages() -> None:
    py = LspServerConfig(command="x", languages=["python"])
    assert set(patterns_for(py)) == {"*.py", "*.pyi"}
    assert matches(patterns_for(py), PurePath("pkg/a.py"))
    assert not matches(patterns_for(py), PurePath("pkg/a.rs"))
    assert language_for(py, PurePath("a.py")) == "python"
    explicit = LspServerConfig(command="x", file_patterns=["src/**/*.ts", "*.mts"], languages=["typescript"])
    assert patterns_for(explicit) == ["src/**/*.ts", "*.mts"]
    assert matches(explicit.file_patterns, PurePath("src/deep/a.ts"))
    assert matches(explicit.file_patterns, PurePath("x.mts"))
    assert language_for(explicit, PurePath("x.mts")) == "typescript"
    mapped = LspServerConfig(command="x", extension_to_language={".go": "go"})
    assert patterns_for(mapped) == ["*.go"]
    assert language_for(mapped, PurePath("m.go")) == "go"


def test_claude_entry_becomes_a_config(tmp_path: Path) -> None:
    doc = {
        "go": {
            "command": "${CLAUDE_PLUGIN_ROOT}/bin/gopls",
            "args": ["serve"],
            "extensionToLanguage": {".go": "go", "mod": "go.mod"},
            "env": {"GOFLAGS": "-mod=mod"},
            "initializationOptions": {"a": 1},
            "settings": {"gopls": {"staticcheck": True}},
            "startupTimeout": 5000,
            "restartOnCrash": False,
            "maxRestarts": 1,
            "somethingNew": True,
        }
    }
    servers, errors = parse_lsp_servers(doc, root=tmp_path)
    assert errors == []
    cfg = servers["go"]
    assert cfg.command == f"{tmp_path}/bin/gopls"
    assert cfg.file_patterns == ["*.go", "*.mod"]
    assert cfg.extension_to_language == {".go": "go", ".mod": "go.mod"}
    assert cfg.startup_timeout == 5.0
    assert cfg.restart_on_crash is False and cfg.max_restarts == 1
    assert cfg.initialization_options == {"a": 1}


@pytest.mark.timeout(10)
def test_a_bundle_extension_of_unclosed_brackets_is_matched_in_linear_time(tmp_path: Path) -> None:
    # a bundle's extensionToLanguage key becomes a glob; fnmatch read each `[` with no `]` after it
    # to the pattern's end: minutes at 64 KB
    opens = "[" * 65_536
    servers, errors = parse_lsp_servers(
        {"odd": {"command": "x", "extensionToLanguage": {opens: "odd", ".go": "go"}}}, root=tmp_path
    )
    assert errors == []
    patterns = servers["odd"].file_patterns
    assert matches(patterns, PurePath("pkg/m.go"))
    assert not matches(patterns, PurePath("pkg/m.rs"))
    assert matches(patterns, PurePath(f"pkg/x.{opens}"))
    assert not matches([f"**/{opens}"], PurePath(f"pkg/{opens[:-1]}"))


def test_claude_entries_fail_one_by_one() -> None:
    servers, errors = parse_lsp_servers(
        {
            "ok": {"command": "a", "extensionToLanguage": {".py": "python"}},
            "no_map": {"command": "b"},
            "empty_map": {"command": "b", "extensionToLanguage": {}},
            "socket": {"command": "c", "extensionToLanguage": {".c": "c"}, "transport": "socket"},
            "bad": 3,
        },
        file="plugin.json",
    )
    assert list(servers) == ["ok"]
    assert {e.path for e in errors} == {
        "lspServers.no_map.extensionToLanguage",
        "lspServers.empty_map.extensionToLanguage",
        "lspServers.socket.transport",
        "lspServers.bad",
    }
    assert all(e.file == "plugin.json" for e in errors)


def test_lsp_json_file(tmp_path: Path) -> None:
    (tmp_path / ".lsp.json").write_text(
        json.dumps({"lspServers": {"py": {"command": "pylsp", "extensionToLanguage": {".py": "python"}}}})
    )
    servers, errors = load_lsp_json(tmp_path / ".lsp.json")
    assert errors == [] and servers["py"].command == "pylsp"
    (tmp_path / "bad.json").write_text("{")
    servers, errors = load_lsp_json(tmp_path / "bad.json")
    assert servers == {} and errors and errors[0].file == str(tmp_path / "bad.json")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=12), c, max_size=4),
    max_leaves=6,
)
entry_keys = st.sampled_from(
    ["command", "args", "extensionToLanguage", "env", "startupTimeout", "maxRestarts", "restartOnCrash", "transport"]
)


@given(st.dictionaries(st.text(max_size=8), st.dictionaries(entry_keys | st.text(max_size=8), json_values, max_size=6)))
def test_parse_never_raises_and_accounts_for_every_entry(doc: dict[str, Any]) -> None:
    servers, errors = parse_lsp_servers(doc, file="x.json")
    assert set(servers) <= set(doc)
    for name in set(doc) - set(servers):
        assert any(e.path == f"lspServers.{name}" or e.path.startswith(f"lspServers.{name}.") for e in errors)


@given(json_values)
def test_parse_any_document_never_raises(doc: Any) -> None:
    parse_lsp_servers(doc)


@given(
    st.text(min_size=1, max_size=10).filter(str.strip),
    st.lists(st.text(max_size=6), max_size=3),
    st.dictionaries(st.from_regex(r"\.?[a-z]{1,4}", fullmatch=True), st.text(min_size=1, max_size=6), min_size=1),
    st.integers(1, 60_000),
)
def test_valid_entries_round_trip(command: str, args: list[str], mapping: dict[str, str], timeout_ms: int) -> None:
    doc = {"s": {"command": command, "args": args, "extensionToLanguage": mapping, "startupTimeout": timeout_ms}}
    servers, errors = parse_lsp_servers(doc)
    assert errors == []
    cfg = servers["s"]
    assert cfg.command == command and cfg.args == args
    assert cfg.startup_timeout == pytest.approx(timeout_ms / 1000)
    for ext in mapping:
        dotted = ext if ext.startswith(".") else f".{ext}"
        assert matches(patterns_for(cfg), PurePath(f"file{dotted}"))
        assert language_for(cfg, PurePath(f"file{dotted}")) in mapping.values()

"""Comment-preserving edits of kairox.toml and atomic writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import tomlkit

from kairox._compat import tomllib
from kairox_catalog.tomledit import (
    TomlEditError,
    read_document,
    remove_server,
    server_names,
    set_server,
    write_document,
)

ORIGINAL = """\
# my kairox config   (keep this comment)
[policy]  # the policy
approval = "on_request" # inline comment

[mcp_servers.git]
# the git server
command = "uvx"   # aligned comment
args = ["mcp-server-git"]

[lsp_servers.pyright]
command = "basedpyright-langserver"
args = ["--stdio"]
"""


def test_add_keeps_everything_else_byte_for_byte_and_remove_restores_the_file(tmp_path: Path) -> None:
    path = tmp_path / "kairox.toml"
    path.write_text(ORIGINAL)
    doc = read_document(path)
    set_server(doc, "time", {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "env": {"A": "${A}"}})
    write_document(path, doc)
    text = path.read_text()
    # the new table goes right after the other servers; every other line is kept as it was
    before, _, after = ORIGINAL.partition("[lsp_servers.pyright]")
    assert text.startswith(before + "[mcp_servers.time]")
    assert text.endswith("\n\n[lsp_servers.pyright]" + after)
    data = tomllib.loads(text)
    assert data["mcp_servers"]["time"] == {
        "type": "stdio",
        "command": "uvx",
        "args": ["mcp-server-time"],
        "env": {"A": "${A}"},
    }
    assert data["mcp_servers"]["git"]["args"] == ["mcp-server-git"]
    doc = read_document(path)
    assert server_names(doc) == ["git", "time"]
    assert remove_server(doc, "time")
    write_document(path, doc)
    assert path.read_text() == ORIGINAL


def test_new_file_and_removing_the_last_server_drops_the_section(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "kairox.toml"
    doc = read_document(path)
    set_server(doc, "x", {"command": "a", "args": []}, comment="installed by test")
    write_document(path, doc)
    assert "[mcp_servers.x] # installed by test" in path.read_text()
    doc = read_document(path)
    remove_server(doc, "x")
    assert "mcp_servers" not in doc
    assert not remove_server(doc, "x")


def test_replacing_an_entry(tmp_path: Path) -> None:
    doc = tomlkit.parse(ORIGINAL)
    set_server(doc, "git", {"command": "git-mcp"})
    assert tomllib.loads(tomlkit.dumps(doc))["mcp_servers"]["git"] == {"command": "git-mcp"}


def test_the_file_mode_is_kept_and_no_temp_file_is_left(tmp_path: Path) -> None:
    path = tmp_path / "kairox.toml"
    path.write_text(ORIGINAL)
    os.chmod(path, 0o600)
    doc = read_document(path)
    set_server(doc, "t", {"command": "x"})
    write_document(path, doc)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kairox.toml"]


def test_a_failed_write_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "kairox.toml"
    path.write_text(ORIGINAL)
    doc = read_document(path)
    set_server(doc, "t", {"command": "x"})

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_document(path, doc)
    assert path.read_text() == ORIGINAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kairox.toml"]


def test_invalid_toml_and_wrong_shapes_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "kairox.toml"
    path.write_text("[mcp_servers\n")
    with pytest.raises(TomlEditError, match="not valid TOML"):
        read_document(path)
    path.write_text('mcp_servers = "nope"\n')
    with pytest.raises(TomlEditError, match="not a table"):
        set_server(read_document(path), "x", {"command": "a"})

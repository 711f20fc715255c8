"""Comment-preserving edits of kairox.toml, atomic and under the file's lock."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from kairox._compat import tomllib
from kairox_catalog.tomledit import (
    TomlEditError,
    edit_document,
    parse_document,
    read_document,
    remove_server,
    server_names,
    set_server,
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


def adding(name: str, values: dict[str, Any], comment: str = "") -> Callable[[tomlkit.TOMLDocument], bool]:
    def change(doc: tomlkit.TOMLDocument) -> bool:
        set_server(doc, name, values, comment=comment)
        return True

    return change


def test_add_keeps_everything_else_byte_for_byte_and_remove_restores_the_file(tmp_path: Path) -> None:
    path = tmp_path / "kairox.toml"
    path.write_text(ORIGINAL)
    assert edit_document(
        path, adding("time", {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "env": {"A": "${A}"}})
    )
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
    assert server_names(read_document(path)) == ["git", "time"]
    assert edit_document(path, lambda doc: remove_server(doc, "time"))
    assert path.read_text() == ORIGINAL
    assert not edit_document(path, lambda doc: remove_server(doc, "time"))  # nothing to remove: not written


def test_new_file_and_removing_the_last_server_drops_the_section(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "kairox.toml"
    edit_document(path, adding("x", {"command": "a", "args": []}, comment="installed by test"))
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
    edit_document(path, adding("t", {"command": "x"}))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kairox.toml", "kairox.toml.lock"]
    new = tmp_path / "new" / "kairox.toml"
    edit_document(new, adding("t", {"command": "x"}))
    assert stat.S_IMODE(new.stat().st_mode) == 0o644  # a config file, not a private one


def test_a_failed_write_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "kairox.toml"
    path.write_text(ORIGINAL)

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(TomlEditError, match="disk full"):
        edit_document(path, adding("t", {"command": "x"}))
    assert path.read_text() == ORIGINAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kairox.toml", "kairox.toml.lock"]


def test_what_the_change_raises_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "kairox.toml"
    path.write_text(ORIGINAL)

    def change(doc: tomlkit.TOMLDocument) -> bool:
        set_server(doc, "t", {"command": "x"})
        raise TomlEditError("changed my mind")

    with pytest.raises(TomlEditError, match="changed my mind"):
        edit_document(path, change)
    assert path.read_text() == ORIGINAL


def test_invalid_toml_and_wrong_shapes_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "kairox.toml"
    path.write_text("[mcp_servers\n")
    with pytest.raises(TomlEditError, match="not valid TOML"):
        read_document(path)
    with pytest.raises(TomlEditError, match="not valid TOML"):
        edit_document(path, lambda doc: True)
    assert path.read_text() == "[mcp_servers\n"
    path.write_text('mcp_servers = "nope"\n')
    with pytest.raises(TomlEditError, match="not a table"):
        set_server(read_document(path), "x", {"command": "a"})


def test_a_key_of_many_parts_is_refused_naming_the_line(tmp_path: Path) -> None:
    # checked before tomlkit reads the file, as kairox.toml is before tomllib reads it
    path = tmp_path / "kairox.toml"
    with pytest.raises(TomlEditError, match="line 2: a dotted key of more than 64 parts"):
        parse_document("[ui]\n" + ".".join(["a"] * 100_000) + " = 1\n", path)

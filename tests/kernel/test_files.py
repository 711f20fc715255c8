"""kairox.files: a file is replaced whole or not at all."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kairox.files import atomic_write_bytes, atomic_write_text


def test_replaces_the_file_and_sets_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    target.write_text("old", encoding="utf-8")
    atomic_write_text(target, "new ✓", mode=0o640)
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]


def test_a_failed_replace_leaves_the_old_file_and_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "kairox.toml"
    target.write_bytes(b"keep = true\n")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(target, b"lost = true\n")
    assert target.read_bytes() == b"keep = true\n"
    assert [p.name for p in tmp_path.iterdir()] == ["kairox.toml"]


def test_a_missing_directory_is_an_error_not_a_partial_write(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        atomic_write_bytes(tmp_path / "nope" / "file", b"x")
    assert list(tmp_path.iterdir()) == []


def test_fsync_is_skipped_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    atomic_write_bytes(tmp_path / "cache.json", b"{}", fsync=False)
    assert synced == [] and (tmp_path / "cache.json").read_bytes() == b"{}"
    atomic_write_bytes(tmp_path / "settings.json", b"{}")
    assert len(synced) == 1

"""kairox.files: a file is replaced whole or not at all."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairox._compat import tomllib
from kairox.errors import ConfigError
from kairox.files import (
    MAX_DOCUMENT_DEPTH,
    atomic_write_bytes,
    atomic_write_text,
    check_toml_keys,
    loads_bounded,
    loads_toml,
    lock_path,
    read_document,
    relative_text,
    update_text,
)


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


def test_read_document_missing_is_none_without_an_error(tmp_path: Path) -> None:
    errors: list[ConfigError] = []
    assert read_document(tmp_path / "nope.json", errors, json.loads, "JSON") is None
    assert errors == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "invalid JSON"),
        (b"\xff\xfe\x00", "cannot read"),
        (b"[" * 100_000 + b"]" * 100_000, "invalid JSON"),  # too deep: RecursionError, not a crash
    ],
)
def test_read_document_reports_a_bad_file_by_name(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "doc.json"
    path.write_bytes(content)
    errors: list[ConfigError] = []
    assert read_document(path, errors, json.loads, "JSON") is None
    assert len(errors) == 1 and errors[0].file == str(path) and message in str(errors[0])


@given(st.binary(max_size=200))
def test_read_document_never_raises_on_any_bytes(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doc.toml"
        path.write_bytes(data)
        errors: list[ConfigError] = []
        value = read_document(path, errors, tomllib.loads, "TOML")
        assert (value is None) == bool(errors)
        assert all(e.file == str(path) for e in errors)


def test_missing_is_what_read_document_reads_as_absent(tmp_path: Path) -> None:
    from kairox.files import missing, read_document

    errors: list[Any] = []
    assert missing(tmp_path / "nope.json") and read_document(tmp_path / "nope.json", errors, str, "text") is None
    (tmp_path / "there.json").write_text("{}", encoding="utf-8")
    assert not missing(tmp_path / "there.json") and not missing(tmp_path)
    assert not missing(tmp_path / "bad\0name")  # not looked at: reading it says why
    assert errors == []


def test_update_text_reads_changes_and_writes_under_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "kairox.toml"
    seen: list[str | None] = []

    def append(line: str) -> Any:
        def change(text: str | None) -> str:
            seen.append(text)
            return (text or "") + line

        return change

    assert update_text(path, append("a = 1\n")) == "a = 1\n"  # a new file and its directory
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    os.chmod(path, 0o600)
    update_text(path, append("b = 2\n"))
    assert seen == [None, "a = 1\n"] and path.read_text() == "a = 1\nb = 2\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the file's own mode is kept
    assert lock_path(path) == tmp_path / "sub" / "kairox.toml.lock" and lock_path(path).exists()


def test_update_text_writes_nothing_when_the_change_declines_or_raises(tmp_path: Path) -> None:
    path = tmp_path / "kairox.toml"
    path.write_text("keep = true\n")
    before = path.stat().st_mtime_ns
    assert update_text(path, lambda text: None) is None
    assert path.stat().st_mtime_ns == before

    def refuse(text: str | None) -> str:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        update_text(path, refuse)
    assert path.read_text() == "keep = true\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kairox.toml", "kairox.toml.lock"]


# -- TOML keys: a key of many parts is refused before tomllib reads it (quadratic there) ----------

_KEY_PART = st.sampled_from(["a", "b-c", '"x.y"', "'p.q'", '"a\\".b"'])
_TOML_VALUE = st.sampled_from(
    ["1.5", '"a.b.c"', '"""\nx.y.z\n"""', '"""a.b""""', "'''a.b'''", "07:32:00.999", "[1.5, 2.5]", "{ u.v.w = 1 }"]
)


@settings(max_examples=300)
@given(
    lines=st.lists(
        st.tuples(st.lists(_KEY_PART, min_size=1, max_size=70), _TOML_VALUE, st.sampled_from(["", " # a.b.c.d"])),
        min_size=1,
        max_size=4,
    )
)
def test_only_keys_of_more_parts_than_the_depth_limit_are_refused(lines: list[tuple[list[str], str, str]]) -> None:
    text = "\n".join(f"k{i}.{'.'.join(parts)} = {value}{comment}" for i, (parts, value, comment) in enumerate(lines))
    longest = max(len(parts) + 1 for parts, _, _ in lines)
    if longest > MAX_DOCUMENT_DEPTH:
        line = 1 + next(i for i, (parts, _, _) in enumerate(lines) if len(parts) + 1 > MAX_DOCUMENT_DEPTH)
        with pytest.raises(ValueError, match=f"^line {line}: a dotted key of more than {MAX_DOCUMENT_DEPTH} parts"):
            check_toml_keys(text)
        with pytest.raises(ValueError, match="nested deeper"):  # refused after parsing anyway
            loads_bounded(text, tomllib.loads)
    else:
        check_toml_keys(text)
        assert loads_toml(text) == tomllib.loads(text)


@pytest.mark.timeout(10)
def test_a_key_of_many_parts_is_refused_naming_the_file_and_line(tmp_path: Path) -> None:
    # tomllib takes time quadratic in a key's parts: 0.8 s at 8,000, minutes at 100,000
    path = tmp_path / "kairox.toml"
    path.write_text('[ui]\ntheme = "dark"\n' + ".".join(["a"] * 100_000) + " = 1\n", encoding="utf-8")
    errors: list[ConfigError] = []
    assert read_document(path, errors, loads_toml, "TOML") is None
    [error] = errors
    assert error.file == str(path)
    assert "line 3: a dotted key of more than 64 parts" in error.message
    # a table name too, and the dots of strings and comments are not a key's
    with pytest.raises(ValueError, match=r"^line 1: a dotted key"):
        check_toml_keys("[" + ".".join(["t"] * 100_000) + "]\n")
    check_toml_keys('s = "' + "." * 100_000 + '" # ' + "." * 100_000 + "\nm = '''" + "." * 100_000 + "'''\n")


@settings(max_examples=300)
@given(
    path=st.lists(st.sampled_from(["a", "b", "ab"]), max_size=5),
    root=st.lists(st.sampled_from(["a", "b", "ab"]), max_size=3),
)
def test_relative_text_agrees_with_pathlib(path: list[str], root: list[str]) -> None:
    target, base = PurePosixPath("/", *path), PurePosixPath("/", *root)
    try:
        expected: str | None = target.relative_to(base).as_posix()
    except ValueError:
        expected = None
    assert relative_text(target, base) == expected
    assert relative_text(str(target), str(base)) == expected


@pytest.mark.timeout(10)
def test_relative_text_is_linear_in_a_deep_path() -> None:
    # a path argument is outside input; PurePath.relative_to walks every parent (quadratic on
    # Python 3.13: 16,000 levels took 2 s, this one took minutes)
    deep = "/w/" + "a/" * 128_000 + "a"
    assert relative_text(deep, "/w") == deep[3:]
    assert relative_text(deep, "/x") is None

"""The scan cache: keyed by path, size and mtime; in memory and on disk."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import BinaryIO

import pytest

from kairox.ext import SkillDef, SkillError
from kairox_skills import DirectorySkillSource
from kairox_skills import _sources as sources_module
from kairox_skills._cache import FORMAT_VERSION, ScanCache

HOUR_AGO = time.time() - 3600


def write_old(path: Path, text: str, mtime: float = HOUR_AGO) -> Path:
    """Write a file and date it in the past (fresh files are deliberately not cached)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


def md(name: str, description: str = "d") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\nbody of {name}\n"


class CountingParse:
    """Counts how many files are actually read (and then parsed)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        real = sources_module.read_frontmatter

        def read(fh: BinaryIO, *, file: str) -> object:
            self.paths.append(Path(file).name)
            return real(fh, file=file)

        monkeypatch.setattr(sources_module, "read_frontmatter", read)


def names(source: DirectorySkillSource) -> list[str]:
    return sorted(i.name for i in source.scan() if isinstance(i, SkillDef))


def test_a_repeated_scan_reads_nothing_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in ("a", "b", "c"):
        write_old(tmp_path / f"{n}.md", md(n))
    parsed = CountingParse(monkeypatch)
    cache = ScanCache()
    source = DirectorySkillSource("user", "user", [tmp_path], cache=cache)
    assert names(source) == ["a", "b", "c"]
    assert names(source) == ["a", "b", "c"]
    assert sorted(parsed.paths) == ["a.md", "b.md", "c.md"]
    assert (cache.hits, cache.misses) == (3, 3)


def test_a_changed_size_or_mtime_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = write_old(tmp_path / "a.md", md("a"))
    b = write_old(tmp_path / "b.md", md("b"))
    parsed = CountingParse(monkeypatch)
    source = DirectorySkillSource("user", "user", [tmp_path], cache=ScanCache())
    names(source)
    write_old(a, md("a", "a longer description"))  # new size
    write_old(b, md("b", "D"), mtime=HOUR_AGO + 60)  # same size, new mtime
    items = {i.name: i for i in source.scan() if isinstance(i, SkillDef)}
    assert (items["a"].description, items["b"].description) == ("a longer description", "D")
    assert parsed.paths == ["a.md", "b.md", "a.md", "b.md"]


def test_a_file_changed_just_now_is_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fresh.md").write_text(md("fresh"))
    parsed = CountingParse(monkeypatch)
    source = DirectorySkillSource("user", "user", [tmp_path], cache=ScanCache())
    names(source)
    names(source)
    assert parsed.paths == ["fresh.md", "fresh.md"]


def test_errors_are_cached_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_old(tmp_path / "bad.md", "---\nname: bad\n---\n")
    parsed = CountingParse(monkeypatch)
    source = DirectorySkillSource("user", "user", [tmp_path], cache=ScanCache())
    first = list(source.scan())
    second = list(source.scan())
    assert parsed.paths == ["bad.md"]
    assert [str(e) for e in first] == [str(e) for e in second]
    assert isinstance(second[0], SkillError) and second[0].field == "description"


def test_the_disk_cache_makes_the_next_process_warm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skills = tmp_path / "skills"
    write_old(skills / "a.md", "---\nname: a\ndescription: d\nkeywords: [x]\narguments:\n  n: {type: integer}\n---\n")
    write_old(skills / "pdf" / "SKILL.md", md("pdf-tools"))  # warns: name does not match the folder
    write_old(skills / "bad.md", "---\nname: bad\ndescription: [x\n---\n")
    cache_file = tmp_path / "cache" / "skills.json"
    first = list(DirectorySkillSource("user", "user", [skills], cache=ScanCache(cache_file)).scan())
    assert json.loads(cache_file.read_text())["version"] == FORMAT_VERSION

    parsed = CountingParse(monkeypatch)
    fresh = ScanCache(cache_file)  # a new process: empty memory, same file
    second = list(DirectorySkillSource("user", "user", [skills], cache=fresh).scan())
    assert parsed.paths == []
    assert fresh.hits == 3
    assert [_key(i) for i in second] == [_key(i) for i in first]


def _key(item: object) -> object:
    if isinstance(item, SkillDef):
        return (item.name, item.frontmatter, item.warnings, item.path)
    return str(item)


def test_a_damaged_or_foreign_cache_file_is_ignored(tmp_path: Path) -> None:
    write_old(tmp_path / "s" / "a.md", md("a"))
    cache_file = tmp_path / "skills.json"
    for content in ("{not json", json.dumps({"version": 999, "entries": {}}), json.dumps([1, 2])):
        cache_file.write_text(content)
        assert names(DirectorySkillSource("user", "user", [tmp_path / "s"], cache=ScanCache(cache_file))) == ["a"]
    entry = json.loads(cache_file.read_text())["entries"][str(tmp_path / "s" / "a.md")]
    entry[2] = [1, 5, None]  # damaged payload: a number for a name
    cache_file.write_text(json.dumps({"version": FORMAT_VERSION, "entries": {str(tmp_path / "s" / "a.md"): entry}}))
    assert names(DirectorySkillSource("user", "user", [tmp_path / "s"], cache=ScanCache(cache_file))) == ["a"]


def test_deleted_files_are_pruned(tmp_path: Path) -> None:
    a = write_old(tmp_path / "s" / "a.md", md("a"))
    write_old(tmp_path / "s" / "b.md", md("b"))
    write_old(tmp_path / "other" / "c.md", md("c"))
    cache_file = tmp_path / "skills.json"
    cache = ScanCache(cache_file)
    names(DirectorySkillSource("user", "user", [tmp_path / "s", tmp_path / "other"], cache=cache))
    a.unlink()
    names(DirectorySkillSource("user", "user", [tmp_path / "s"], cache=cache))
    entries = json.loads(cache_file.read_text())["entries"]
    assert sorted(Path(p).name for p in entries) == ["b.md", "c.md"]


def test_the_file_is_written_atomically_and_only_when_changed(tmp_path: Path) -> None:
    write_old(tmp_path / "s" / "a.md", md("a"))
    cache_file = tmp_path / "c" / "skills.json"
    cache = ScanCache(cache_file)
    source = DirectorySkillSource("user", "user", [tmp_path / "s"], cache=cache)
    names(source)
    stamp = cache_file.stat().st_mtime_ns
    os.utime(cache_file, ns=(stamp - 10**9, stamp - 10**9))
    names(source)
    assert cache_file.stat().st_mtime_ns == stamp - 10**9  # nothing changed: not rewritten
    assert [p.name for p in cache_file.parent.iterdir()] == ["skills.json"]  # no temp files left

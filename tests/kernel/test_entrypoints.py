"""The entry point index: the same answer as a scan of the installed metadata, from a
file while nothing was installed or removed, and a scan again as soon as something was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kairox import _entrypoints
from kairox._entrypoints import EntryPointInfo, installed_entry_points

GROUP = "kairox"
T = TypeVar("T")


@pytest.fixture
def no_racy_wait(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Files made by the test are seconds old at most: let the index trust them anyway."""
    monkeypatch.setattr(_entrypoints, "RACY_SECONDS", -60.0)
    _entrypoints._memo.clear()
    yield
    _entrypoints._memo.clear()


def index_files(home: Path) -> list[Path]:
    return sorted((home / "cache" / "entry-points").glob("*.json"))


def scanned(group: str = GROUP) -> set[tuple[str, str, str | None, str | None]]:
    out = set()
    for ep in importlib_metadata.entry_points(group=group):
        dist = ep.dist
        out.add((ep.name, ep.value, dist.metadata["Name"] if dist else None, dist.version if dist else None))
    return out


def as_set(eps: tuple[EntryPointInfo, ...]) -> set[tuple[str, str, str | None, str | None]]:
    return {(e.name, e.value, e.dist_name, e.version) for e in eps}


def installed_files() -> list[Any]:
    """This environment's installed files as the index fingerprints them."""
    return _entrypoints._fingerprint(list(sys.path))[0]


def while_nothing_changed(attempt: Callable[[Path], T], tmp_path: Path, tries: int = 3) -> T:
    """``attempt(home)``, with a fresh home, during which the installed files did not change.

    uv in another process (a parallel test, another checkout, a clone being removed)
    hard-links or unlinks files this environment shares with uv's cache, which moves their
    status-change time: the index then rightly misses, and the attempt shows nothing about
    a hit, so it is made again (at most ``tries`` times)."""
    for n in range(tries):
        before = installed_files()
        _entrypoints._memo.clear()
        result = attempt(tmp_path / f"home-{n}")
        if installed_files() == before:
            return result
    pytest.fail(f"the installed files changed during each of {tries} attempts")


def test_the_index_gives_what_a_scan_gives(tmp_path: Path, no_racy_wait: None) -> None:
    def twice(home: Path) -> tuple[Any, Any]:
        first = installed_entry_points(GROUP, {}, home)
        assert first.source == "scan" and index_files(home)
        _entrypoints._memo.clear()
        return first, installed_entry_points(GROUP, {}, home)

    first, second = while_nothing_changed(twice, tmp_path)
    assert second.source == "index"
    assert as_set(second.entry_points) == as_set(first.entry_points) == scanned()
    assert "kairox-tools" in {e.dist_name for e in second.entry_points}
    assert second.kernel_version == importlib_metadata.version("kairox")


def test_installing_changing_and_removing_a_distribution_is_seen(
    tmp_path: Path, fake_site: Any, no_racy_wait: None
) -> None:
    home = tmp_path / "home"
    assert not {e.name for e in installed_entry_points(GROUP, {}, home).entry_points} & {"alpha", "beta"}

    info = fake_site.add("fake-alpha", version="1.0", entry_points={"alpha": "fake_alpha:plugin"})
    found = {e.name: e for e in installed_entry_points(GROUP, {}, home).entry_points}
    assert found["alpha"] == EntryPointInfo("alpha", "fake_alpha:plugin", "fake-alpha", "1.0")

    # entry_points.txt rewritten in place, later (as an editable re-install without a new dir would)
    (info / "entry_points.txt").write_text("[kairox]\nbeta = fake_alpha:other\n", encoding="utf-8")
    later = time.time_ns() + 5_000_000_000
    os.utime(info / "entry_points.txt", ns=(later, later))
    names = {e.name for e in installed_entry_points(GROUP, {}, home).entry_points}
    assert "beta" in names and "alpha" not in names

    for child in info.iterdir():
        child.unlink()
    info.rmdir()
    names = {e.name for e in installed_entry_points(GROUP, {}, home).entry_points}
    assert not names & {"alpha", "beta"}


def test_nothing_is_written_while_the_installed_files_are_seconds_old(tmp_path: Path, fake_site: Any) -> None:
    """The racy rule: a change within the clock's resolution could keep the same mtime."""
    _entrypoints._memo.clear()
    fake_site.add("fake-fresh", entry_points={"fresh": "fake_fresh"})
    home = tmp_path / "home"
    for _ in range(2):
        result = installed_entry_points(GROUP, {}, home)
        assert result.source == "scan" and "fresh" in {e.name for e in result.entry_points}
    assert index_files(home) == []


@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_the_index_can_be_turned_off(tmp_path: Path, no_racy_wait: None, value: str) -> None:
    for _ in range(2):
        result = installed_entry_points(GROUP, {"KAIROX_ENTRY_POINT_CACHE": value}, tmp_path)
        assert result.source == "scan"
    assert index_files(tmp_path) == []


def test_an_unwritable_home_costs_a_scan_and_nothing_else(tmp_path: Path, no_racy_wait: None) -> None:
    home = tmp_path / "home"
    home.write_text("a file where the home directory should be", encoding="utf-8")
    for _ in range(2):
        _entrypoints._memo.clear()
        result = installed_entry_points(GROUP, {}, home)
        assert result.source == "scan" and as_set(result.entry_points) == scanned()


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@example(content=b"[" * 100_000 + b"]" * 100_000)  # nested too deep for the JSON parser
@given(
    content=st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=10),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
            max_leaves=20,
        ).map(lambda doc: json.dumps(doc).encode()),
    )
)
def test_a_damaged_index_file_is_a_miss_never_an_error(tmp_path: Path, no_racy_wait: None, content: bytes) -> None:
    home = tmp_path / "damaged"
    _entrypoints._memo.clear()
    installed_entry_points(GROUP, {}, home)
    [file] = index_files(home)
    file.write_bytes(content)
    _entrypoints._memo.clear()
    before = installed_files()
    result = installed_entry_points(GROUP, {}, home)
    assert result.source == "scan" and as_set(result.entry_points) == scanned()
    _entrypoints._memo.clear()
    again = installed_entry_points(GROUP, {}, home).source
    if installed_files() == before:  # else a miss is right (see while_nothing_changed)
        assert again == "index"  # rewritten


def test_an_index_with_the_right_fingerprint_but_wrong_types_is_a_miss(tmp_path: Path, no_racy_wait: None) -> None:
    installed_entry_points(GROUP, {}, tmp_path)
    [file] = index_files(tmp_path)
    data = json.loads(file.read_text(encoding="utf-8"))
    data["entry_points"][0]["name"] = 42
    file.write_text(json.dumps(data), encoding="utf-8")
    _entrypoints._memo.clear()
    assert installed_entry_points(GROUP, {}, tmp_path).source == "scan"


@pytest.mark.parametrize(
    "value",
    ["json", "json:dumps", "json.decoder:JSONDecoder.decode", "json:dumps [extra]", "os.path : join"],
)
def test_load_resolves_like_importlib_metadata(value: str) -> None:
    expected = importlib_metadata.EntryPoint("x", value, GROUP).load()
    assert EntryPointInfo("x", value, None, None).load() is expected


@pytest.mark.parametrize("value", ["", "json:", ":dumps", "no spaces allowed:x y"])
def test_load_refuses_an_invalid_value(value: str) -> None:
    with pytest.raises(ValueError, match="invalid value"):
        EntryPointInfo("x", value, None, None).load()


def test_a_later_start_reads_the_index_and_never_imports_importlib_metadata(tmp_path: Path) -> None:
    """End to end, in fresh interpreters: the second start is served by the index."""
    cwd = tmp_path / "cwd"  # on sys.path (as '')
    cwd.mkdir()
    code = (
        "import sys, json, kairox._entrypoints as e\n"
        "e.RACY_SECONDS = -1e9  # whatever was installed a moment ago (uv sync before the tests)\n"
        "import kairox.ext\n"
        "host = kairox.ext.build_plugin_host()\n"
        "print(json.dumps(['importlib.metadata' in sys.modules, sorted(p.name for p in host.plugins())]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a first run must not change site-packages (new __pycache__)

    def two_starts(home: Path) -> list[Any]:
        runs = []
        for _ in range(2):
            out = subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                env={**env, "KAIROX_HOME": str(home)},
                cwd=cwd,
                timeout=120,
                check=True,
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        return runs

    (first_imported, first_plugins), (second_imported, second_plugins) = while_nothing_changed(two_starts, tmp_path)
    assert first_imported is True and second_imported is False
    assert first_plugins == second_plugins and "tools" in second_plugins


def test_a_copy_that_keeps_modification_times_is_seen(tmp_path: Path, fake_site: Any, no_racy_wait: None) -> None:
    """``cp -a``, ``rsync -a`` and ``tar x`` keep mtimes; the status-change time and inode still move."""
    home = tmp_path / "home"
    info = fake_site.add("fake-copied", entry_points={"old": "fake_copied:a"})
    assert "old" in {e.name for e in installed_entry_points(GROUP, {}, home).entry_points}
    ep_file = info / "entry_points.txt"
    before, dir_before = ep_file.stat(), info.stat()
    replacement = info / "entry_points.new"
    replacement.write_text("[kairox]\nnew = fake_copied:b\n", encoding="utf-8")
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(replacement, ep_file)
    os.utime(info, ns=(dir_before.st_atime_ns, dir_before.st_mtime_ns))
    assert ep_file.stat().st_mtime_ns == before.st_mtime_ns and info.stat().st_mtime_ns == dir_before.st_mtime_ns
    names = {e.name for e in installed_entry_points(GROUP, {}, home).entry_points}
    assert "new" in names and "old" not in names


def test_a_path_that_is_not_utf8_is_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_racy_wait: None
) -> None:
    odd = os.fsdecode(bytes(tmp_path) + b"/caf\xe9")  # a Latin-1 directory name: a lone surrogate
    os.mkdir(odd)
    monkeypatch.syspath_prepend(odd)

    def twice(home: Path) -> tuple[Any, Any]:
        first = installed_entry_points(GROUP, {}, home)
        _entrypoints._memo.clear()
        return first, installed_entry_points(GROUP, {}, home)

    first, second = while_nothing_changed(twice, tmp_path)
    assert (first.source, second.source) == ("scan", "index")
    assert as_set(second.entry_points) == scanned()


def test_no_home_means_a_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", no_home)
    assert _entrypoints.index_home({}) is None
    result = installed_entry_points(GROUP, {}, None)
    assert result.source == "scan" and as_set(result.entry_points) == scanned()


def test_a_host_without_entry_points_never_touches_the_home(tmp_path: Path) -> None:
    from kairox.ext import build_plugin_host

    host = build_plugin_host(load_entrypoints=False, env={"KAIROX_HOME": str(tmp_path)})
    assert host.distribution_of("kairox._builtin") == ("kairox", importlib_metadata.version("kairox"))
    assert list(tmp_path.iterdir()) == []


def test_a_distribution_without_a_name_is_listed_without_one(
    tmp_path: Path, fake_site: Any, no_racy_wait: None
) -> None:
    info = fake_site.add("fake-nameless", entry_points={"nameless": "fake_nameless"})
    (info / "METADATA").write_text("Metadata-Version: 2.1\n", encoding="utf-8")
    found = {e.name: e for e in installed_entry_points(GROUP, {}, tmp_path).entry_points}
    assert (found["nameless"].dist_name, found["nameless"].version) == (None, None)


def test_old_index_files_of_other_paths_are_pruned(tmp_path: Path, no_racy_wait: None) -> None:
    folder = tmp_path / "cache" / "entry-points"
    folder.mkdir(parents=True)
    stale, recent = folder / "kairox-00000001.json", folder / "kairox-00000002.json"
    for file in (stale, recent):
        file.write_text("{}", encoding="utf-8")
    old = time.time() - (_entrypoints.PRUNE_DAYS + 1) * 86400
    os.utime(stale, (old, old))
    installed_entry_points(GROUP, {}, tmp_path)
    left = {p.name for p in folder.iterdir()}
    assert stale.name not in left and recent.name in left and len(left) == 2

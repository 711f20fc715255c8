"""Plugin settings: merging, atomic writes under a lock, trust recorded only by the user."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

from kairox_manifests.settings import BundleSettings, SettingsStore


def store(tmp_path: Path) -> SettingsStore:
    (tmp_path / "ws").mkdir(exist_ok=True)
    return SettingsStore(tmp_path / "ws", {"KAIROX_HOME": str(tmp_path / "home")})


def test_enable_disable_plugin_and_contribution(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.set_enabled("user", "docs", False)
    s.set_enabled("user", "docs", False, "hook/pre_turn.inject")
    s.set_enabled("workspace", "docs", True)
    merged = s.load()
    assert merged.bundle_enabled("docs") is True  # the workspace file wins
    assert merged.contribution_enabled("docs", "hook/pre_turn.inject") is False
    assert merged.contribution_enabled("docs", "skill/x") is True
    assert merged.bundle_enabled("other") is True
    assert merged.bundle_enabled("other", default=False) is False
    data = json.loads(s.file("user").read_text())
    assert data["version"] == 1
    assert data["plugins"]["docs"] == {"enabled": False, "contributions": {"hook/pre_turn.inject": False}}


def test_trust_is_read_from_the_user_file_only(tmp_path: Path) -> None:
    s = store(tmp_path)
    plugin = tmp_path / "ws" / ".kairox" / "plugins" / "p"
    plugin.mkdir(parents=True)
    s.update("workspace", lambda d: d.__setitem__("trusted_roots", [str(plugin)]))
    assert not s.load().trusted(plugin)
    assert any("trusted_roots" in p for p in s.load().problems)
    s.set_trusted(plugin)
    assert s.load().trusted(plugin)
    # trust follows the resolved directory
    os.symlink(plugin, tmp_path / "alias")
    assert s.load().trusted(tmp_path / "alias")
    s.set_trusted(plugin, False)
    assert not s.load().trusted(plugin)


def test_broken_files_are_ignored(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.file("user").parent.mkdir(parents=True)
    s.file("user").write_text("{not json")
    assert s.load().plugins == {}
    s.set_enabled("user", "x", False)  # a broken file is replaced by a valid one
    assert s.load().bundle_enabled("x") is False


def test_merged_ignores_wrong_shapes() -> None:
    merged = BundleSettings.merged(
        [("user", {"plugins": {"a": "nope", "b": {"enabled": "yes"}}, "paths": ["/p", 3]}), ("workspace", {})]
    )
    assert "a" not in merged.plugins
    assert merged.bundle_enabled("b") is True  # a non-boolean is no answer
    assert merged.paths == [("/p", "user")]


def test_write_is_atomic(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.set_enabled("user", "a", False)
    before = os.stat(s.file("user")).st_ino
    s.set_enabled("user", "b", False)
    assert os.stat(s.file("user")).st_ino != before  # replaced, not rewritten in place
    leftovers = [p.name for p in s.file("user").parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def _hammer(args: tuple[str, str, int]) -> None:
    ws, home, index = args
    s = SettingsStore(Path(ws), {"KAIROX_HOME": home})
    for j in range(10):
        s.set_enabled("user", f"p{index}-{j}", False)


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    s = store(tmp_path)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        pool.map(_hammer, [(str(tmp_path / "ws"), str(tmp_path / "home"), i) for i in range(4)])
    names = set(s.load().plugins)
    assert names == {f"p{i}-{j}" for i in range(4) for j in range(10)}

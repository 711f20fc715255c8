"""Which changes on disk the dashboard acts on (kairox_ui.disk): the folders it watches and
which changes in a plugins folder reopen the runtime."""

from __future__ import annotations

from pathlib import Path

from kairox_ui.disk import _bundle_change, _watch_roots


def test_a_bundle_added_or_its_manifest_changed_reopens_and_nothing_else_does(tmp_path: Path) -> None:
    plugins = [tmp_path / "plugins"]
    assert _bundle_change(tmp_path / "plugins" / "greeter", plugins)  # added or removed
    assert _bundle_change(tmp_path / "plugins" / "greeter" / ".kairox-plugin" / "plugin.json", plugins)
    assert _bundle_change(tmp_path / "plugins" / "greeter" / ".mcp.json", plugins)
    # what a running server writes in its bundle's folder must not reopen the runtime it runs in
    assert not _bundle_change(tmp_path / "plugins" / "greeter" / "cache" / "state.db", plugins)
    assert not _bundle_change(tmp_path / "plugins" / "greeter" / "server.log", plugins)
    assert not _bundle_change(tmp_path / "elsewhere" / "plugin.json", plugins)


def test_a_missing_folder_is_watched_through_its_parent_only(tmp_path: Path) -> None:
    (tmp_path / "ws" / ".kairox").mkdir(parents=True)
    (tmp_path / "home" / "skills").mkdir(parents=True)
    folders = [
        tmp_path / "home" / "skills",
        tmp_path / "ws" / ".kairox" / "skills",
        tmp_path / "ws" / ".agents" / "skills",
    ]
    deep, shallow = _watch_roots(folders)
    assert deep == [tmp_path / "home" / "skills"]
    assert shallow == [tmp_path / "ws" / ".kairox"]  # never the workspace itself

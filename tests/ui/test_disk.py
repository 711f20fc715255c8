"""Which changes on disk the dashboard acts on (kairox_ui.disk): the folders it watches and
which changes in a plugins folder reopen the runtime."""

from __future__ import annotations

from pathlib import Path

import anyio
import attrs
import pytest

from kairox_ui.disk import MAX_WATCHED, _bundle_change, _watch_roots, _watch_runtime


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
    roots = _watch_roots(folders, tmp_path / "ws")
    # each on its own: the home's skills folder, and where the workspace's would appear, never the workspace
    assert roots == [tmp_path / "home" / "skills", tmp_path / "ws" / ".kairox"]


def _outside(roots: list[Path], workspace: Path) -> list[Path]:
    real = workspace.resolve()
    return [r for r in roots if not r.resolve().is_relative_to(real)]


def test_links_out_of_the_workspace_are_not_watched(tmp_path: Path) -> None:
    # the attack: a workspace whose skill folder holds a link to / (or $HOME), and whose
    # plugins folder is a link out; watchfiles follows every link below a recursive root
    outside = tmp_path / "outside"
    (outside / "deep" / "deeper").mkdir(parents=True)
    ws = tmp_path / "ws"
    (ws / ".kairox" / "skills" / "mine").mkdir(parents=True)
    (ws / ".kairox" / "skills" / "evil").symlink_to(outside, target_is_directory=True)
    (ws / ".kairox" / "skills" / "root").symlink_to("/", target_is_directory=True)
    (ws / ".kairox" / "plugins").symlink_to(outside, target_is_directory=True)
    (ws / ".agents").symlink_to(outside, target_is_directory=True)  # its missing skills/ would watch outside
    roots = _watch_roots([ws / ".kairox" / "skills", ws / ".kairox" / "plugins", ws / ".agents" / "skills"], ws)
    assert _outside(roots, ws) == []
    assert ws / ".kairox" / "skills" in roots and ws / ".kairox" / "skills" / "mine" in roots


def test_a_user_folder_is_watched_inside_itself_and_the_count_is_bounded(tmp_path: Path) -> None:
    home_skills = tmp_path / "home" / "skills"
    for i in range(MAX_WATCHED + 50):
        (home_skills / f"s{i}").mkdir(parents=True)
    (home_skills / "out").symlink_to(tmp_path, target_is_directory=True)
    roots = _watch_roots([home_skills], tmp_path / "ws")
    assert len(roots) == MAX_WATCHED
    assert all(r.resolve().is_relative_to(home_skills.resolve()) for r in roots)


@attrs.define
class _Source:
    dirs: list[Path]


@attrs.define
class _Skills:
    async def scan(self, sources: object, rt: object) -> None:
        return None


@attrs.define
class _Rt:
    """What the watcher asks of a runtime: its skill sources' folders, the homes, a rescan."""

    workspace: Path
    home: Path
    skill_sources: list[_Source]
    env: dict[str, str] = attrs.Factory(dict)
    skills: _Skills = attrs.Factory(_Skills)


@attrs.define
class _Holder:
    reloads: int = 0
    scans: int = 0
    acted: anyio.Event = attrs.Factory(anyio.Event)

    def reload(self) -> None:
        self.reloads += 1
        self.acted.set()

    def skills_changed(self) -> None:
        self.scans += 1
        self.acted.set()


@pytest.mark.anyio
async def test_a_plugins_folder_linked_out_of_the_workspace_does_not_reopen_the_runtime(tmp_path: Path) -> None:
    # the attack, with the real watcher: `.kairox/plugins -> elsewhere`; a bundle folder made
    # elsewhere (by anyone) must not reopen the dashboard's runtime
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    skills = ws / ".kairox" / "skills"
    skills.mkdir(parents=True)
    (ws / ".kairox" / "plugins").symlink_to(outside, target_is_directory=True)
    (tmp_path / "home").mkdir()
    rt = _Rt(ws, tmp_path / "home", [_Source([skills])])
    holder = _Holder()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_watch_runtime, holder, rt)
        with anyio.fail_after(30):
            i = 0
            while not holder.acted.is_set():  # until the watcher acts: a bundle "added", then a skill file
                (outside / f"bundle{i}").mkdir()
                (skills / "s.md").write_text(f"# {i}\n")
                i += 1
                with anyio.move_on_after(0.5):
                    await holder.acted.wait()
        tg.cancel_scope.cancel()
    assert holder.reloads == 0
    assert holder.scans >= 1


def _workspace_without_skills_folder(tmp_path: Path) -> tuple[_Rt, _Holder, Path]:
    """A runtime whose workspace has ``.kairox`` but not yet ``.kairox/skills``, a holder, and that folder."""
    ws = tmp_path / "ws"
    (ws / ".kairox").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    skills = ws / ".kairox" / "skills"
    return _Rt(ws, tmp_path / "home", [_Source([skills])]), _Holder(), skills


@pytest.mark.anyio
async def test_a_skill_folder_that_appears_is_watched_from_then_on(tmp_path: Path) -> None:
    rt, holder, skills = _workspace_without_skills_folder(tmp_path)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_watch_runtime, holder, rt)
        with anyio.fail_after(30):
            while not skills.exists():  # until the watcher of .kairox sees the folder made
                (skills / "deep").mkdir(parents=True)
                with anyio.move_on_after(0.5):
                    await holder.acted.wait()
                if not holder.acted.is_set():
                    (skills / "deep").rmdir()
                    skills.rmdir()
            i = 0
            while holder.scans < 2:  # then a file two levels into it is seen too
                holder.acted = anyio.Event()
                (skills / "deep" / "SKILL.md").write_text(f"# {i}\n")
                i += 1
                with anyio.move_on_after(0.5):
                    await holder.acted.wait()
        tg.cancel_scope.cancel()
    assert holder.reloads == 0


@pytest.mark.anyio
async def test_a_file_written_before_a_new_folder_s_watch_exists_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the race: .kairox/skills appears (seen through the parent's watch, one scan), and a skill
    # file is written into it before the watch of the new folder exists: no event comes for it
    from kairox_ui import disk

    rt, holder, skills = _workspace_without_skills_folder(tmp_path)
    calls: list[int] = []

    def roots_then_a_file_in_the_gap(folders: list[Path], workspace: Path) -> list[Path]:
        calls.append(1)
        roots = _watch_roots(folders, workspace)
        if len(calls) == 2:  # the rewatch: written before its watch is made
            (skills / "late.md").write_text("# late\n")
        return roots

    monkeypatch.setattr(disk, "_watch_roots", roots_then_a_file_in_the_gap)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_watch_runtime, holder, rt)
        with anyio.fail_after(30):
            while not skills.exists():  # until the watcher of .kairox sees the folder made
                skills.mkdir()
                with anyio.move_on_after(0.5):
                    await holder.acted.wait()
                if not holder.acted.is_set():
                    skills.rmdir()
            holder.acted = anyio.Event()
            with anyio.move_on_after(10):  # nothing more is written: only a scan of its own finds late.md
                while len(calls) < 2 or holder.scans < 2:
                    await holder.acted.wait()
                    holder.acted = anyio.Event()
        tg.cancel_scope.cancel()
    assert len(calls) == 2
    assert holder.scans >= 2, "the file written before the new folder's watch existed was never scanned"

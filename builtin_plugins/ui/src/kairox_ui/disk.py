"""Changes on disk the dashboard shows live (watched with ``watchfiles``): a skill file added,
changed or removed in a folder a skill source reads is scanned again (the Skills page
reloads); a plugin bundle added to or removed from ``$KAIROX_HOME/plugins`` or
``.kairox/plugins``, or a manifest of one changed, reopens the runtime (what a bundle
contributes needs a fresh one).

The folders are those of the current runtime, taken again after each reopen. A folder that
does not exist yet is watched through its parent, when that exists (``.kairox`` for
``.kairox/skills``), never further up: the workspace itself is not watched.

Each folder is watched on its own (not recursively: ``watchfiles`` follows every link below
a recursive root, so ``.kairox/skills/x -> /`` would watch the whole disk), found by the
contained reader's walk: a workspace's folders only inside the workspace, the user's inside
themselves, at most :data:`MAX_DEPTH` levels down and :data:`MAX_WATCHED` folders in all. A
folder added below one is watched from the next batch on."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import anyio

from kairox.ext import user_home
from kairox.files import Limits, Refused, Root, is_inside

if TYPE_CHECKING:
    from kairox import Runtime

    from .holder import RuntimeHolder

__all__ = ["ReadsFolders", "plugin_folders", "skill_folders", "watch_disk"]

logger = logging.getLogger(__name__)

#: milliseconds of quiet before a batch of changes is acted on (an editor's save is several events)
DEBOUNCE_MS = 300
#: after a folder appeared: how soon the skill folders are scanned again once its watch exists
RESCAN_MS = 500
#: folder levels watched below a skill or plugins folder (a bundle's manifest is two down)
MAX_DEPTH = 4
#: the most folders watched in all (each one inotify watch, a per-user resource)
MAX_WATCHED = 1024
#: entries one folder's walk looks at (a bundle's node_modules must not cost unbounded time)
_WALK = Limits(max_depth=MAX_DEPTH, max_entries=20_000)


@runtime_checkable
class ReadsFolders(Protocol):
    """A skill source that reads folders (kairox-skills' own, before and after it is built)."""

    dirs: Sequence[Path]


def skill_folders(rt: Runtime) -> list[Path]:
    """The folders the runtime's skill sources read."""
    return [Path(d) for s in rt.skill_sources if isinstance(s, ReadsFolders) for d in s.dirs]


def plugin_folders(rt: Runtime) -> list[Path]:
    """The folders plugin bundles are found in by convention (not ``[plugins] paths``)."""
    return [(rt.home or user_home(rt.env)) / "plugins", rt.workspace / ".kairox" / "plugins"]


#: files whose change changes what a bundle declares (a bundle's other files, such as a
#: server's own cache or log in its folder, do not: they must not reopen the runtime)
MANIFEST_FILES = frozenset({"plugin.json", ".mcp.json", "mcp.json", "hooks.json", ".lsp.json"})


def _bundle_change(path: Path, plugins: Iterable[Path]) -> bool:
    """A bundle folder added or removed, or a manifest of one changed."""
    return any(path.parent == f or (f in path.parents and path.name in MANIFEST_FILES) for f in plugins)


def _inside(path: Path, folders: Iterable[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def _watch_roots(folders: Iterable[Path], workspace: Path) -> list[Path]:
    """The folders to watch (each on its own) for ``folders``: each that exists and the
    folders below it, else its parent that does (only the parent: where the folder would
    appear); a folder of the workspace only inside it, the user's inside itself; no duplicates."""
    ws = Path(os.path.abspath(workspace))
    ws_root = Root(ws, label="the workspace", limits=_WALK)
    out: dict[str, Path] = {}
    for folder in folders:
        folder = Path(os.path.abspath(folder))
        ours = is_inside(folder, ws)
        root = ws_root if ours else Root(folder, label=str(folder), limits=_WALK)
        try:
            if not root.is_dir(folder):
                parent = folder.parent
                if (ws_root.is_dir(parent) and parent != ws) if ours else parent.is_dir():
                    out.setdefault(os.path.realpath(parent), parent)
                continue
            for found, _entries in root.folders(folder, max_depth=MAX_DEPTH):
                if len(out) >= MAX_WATCHED:
                    logger.warning(
                        "the dashboard watches %d folders, its most; %s and on are not watched", MAX_WATCHED, found
                    )
                    return list(out.values())
                out.setdefault(os.path.realpath(found), Path(found))
        except Refused as exc:  # a link out of the workspace: not watched
            logger.info("the dashboard does not watch %s", exc)
    return list(out.values())


def _folder_added(changes: Iterable[tuple[object, str]]) -> bool:
    """Whether a folder (not a link) was added: it is watched from the next batch on."""
    from watchfiles import Change

    return any(change == Change.added and os.path.isdir(p) and not os.path.islink(p) for change, p in changes)


async def watch_disk(holder: RuntimeHolder) -> None:
    """Until cancelled: watch the current runtime's folders, again after each reopen."""
    while True:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_watch_runtime, holder, holder.rt)
            await holder.opened()
            tg.cancel_scope.cancel()


async def _watch_runtime(holder: RuntimeHolder, rt: Runtime) -> None:
    rescan = False
    while True:
        skills, plugins = skill_folders(rt), plugin_folders(rt)
        roots = await anyio.to_thread.run_sync(_watch_roots, [*skills, *plugins], rt.workspace)
        # "rewatch": a folder appeared below one watched; else the runtime reopens (this task
        # ends with it), or there is nothing to watch
        if not roots or await _watch(holder, rt, roots, (skills, plugins), rescan=rescan) != "rewatch":
            await anyio.sleep_forever()
        # a file written into the new folder before its watch exists makes no event: scan
        # once the new watch is in place
        rescan = True


async def _watch(
    holder: RuntimeHolder,
    rt: Runtime,
    roots: list[Path],
    folders: tuple[list[Path], list[Path]],
    *,
    rescan: bool = False,
) -> str:
    """Watch ``roots`` until the runtime must reopen (``"reopen"``), a folder appears below
    one of them (``"rewatch"``), or they cannot be watched (``""``). ``rescan``: scan the
    skill folders again once the watch is in place (``watchfiles`` yields an empty batch
    after ``RESCAN_MS`` with nothing seen, and its watch exists from before the first). The
    watch then keeps waking every ``RESCAN_MS`` (empty batches, nothing done) until it
    ends: watching afresh without the timeout would open the same gap again."""
    from watchfiles import awatch

    skills, plugins = folders
    try:
        batches = awatch(
            *roots,
            debounce=DEBOUNCE_MS,
            recursive=False,
            yield_on_timeout=rescan,
            rust_timeout=RESCAN_MS if rescan else None,
        )
        async for changes in batches:
            if rescan:
                rescan = False
                await rt.skills.scan(list(rt.skill_sources), rt)
                holder.skills_changed()
            paths = [Path(p) for _, p in changes]
            if any(_bundle_change(p, plugins) for p in paths):
                logger.info("a plugin folder changed on disk: reopening the runtime")
                holder.reload()
                return "reopen"
            if any(_inside(p, skills) for p in paths):
                await rt.skills.scan(list(rt.skill_sources), rt)
                holder.skills_changed()
            if _folder_added(changes):
                return "rewatch"
    except OSError as exc:  # a folder went away, too many watches: the page still works, unwatched
        logger.warning("the dashboard stopped watching %s: %s", ", ".join(map(str, roots)), exc)
    return ""

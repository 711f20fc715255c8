"""Changes on disk the dashboard shows live (watched with ``watchfiles``): a skill file added,
changed or removed in a folder a skill source reads is scanned again (the Skills page
reloads); a plugin bundle added to or removed from ``$KAIROX_HOME/plugins`` or
``.kairox/plugins``, or a manifest of one changed, reopens the runtime (what a bundle
contributes needs a fresh one).

The folders are those of the current runtime, taken again after each reopen. A folder that
does not exist yet is watched through its parent, when that exists (``.kairox`` for
``.kairox/skills``), never further up: the workspace itself is not watched."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import anyio

from kairox.ext import user_home

if TYPE_CHECKING:
    from kairox import Runtime

    from .holder import RuntimeHolder

__all__ = ["ReadsFolders", "plugin_folders", "skill_folders", "watch_disk"]

logger = logging.getLogger(__name__)

#: milliseconds of quiet before a batch of changes is acted on (an editor's save is several events)
DEBOUNCE_MS = 300


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


def _watch_roots(folders: Iterable[Path]) -> tuple[list[Path], list[Path]]:
    """What to watch for ``folders``: each that exists (with what is in it), else its parent
    that does (only the parent itself: where the folder would appear); no duplicates."""
    deep: list[Path] = []
    shallow: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            if folder not in deep:
                deep.append(folder)
        elif folder.parent.is_dir() and folder.parent not in shallow:
            shallow.append(folder.parent)
    return deep, shallow


async def watch_disk(holder: RuntimeHolder) -> None:
    """Until cancelled: watch the current runtime's folders, again after each reopen."""
    while True:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_watch_runtime, holder, holder.rt)
            await holder.opened()
            tg.cancel_scope.cancel()


async def _watch_runtime(holder: RuntimeHolder, rt: Runtime) -> None:
    while True:
        skills, plugins = skill_folders(rt), plugin_folders(rt)
        deep, shallow = _watch_roots([*skills, *plugins])
        outcome: list[str] = []  # what the watcher that stopped the others asks: "reopen" or "rewatch"
        async with anyio.create_task_group() as tg:
            for roots, recursive in ((deep, True), (shallow, False)):
                if roots:
                    tg.start_soon(_watch, holder, rt, roots, recursive, (skills, plugins), outcome, tg.cancel_scope)
        if outcome != ["rewatch"]:  # reopening (this task ends with the runtime), or nothing to watch
            await anyio.sleep_forever()


async def _watch(
    holder: RuntimeHolder,
    rt: Runtime,
    roots: list[Path],
    recursive: bool,
    folders: tuple[list[Path], list[Path]],
    outcome: list[str],
    done: anyio.CancelScope,
) -> None:
    from watchfiles import awatch

    skills, plugins = folders
    try:
        async for changes in awatch(*roots, debounce=DEBOUNCE_MS, recursive=recursive):
            paths = [Path(p) for _, p in changes]
            if any(_bundle_change(p, plugins) for p in paths):
                logger.info("a plugin folder changed on disk: reopening the runtime")
                holder.reload()
                outcome.append("reopen")
                done.cancel()
                return
            if any(_inside(p, skills) for p in paths):
                await rt.skills.scan(list(rt.skill_sources), rt)
                holder.skills_changed()
                if not recursive:  # a skill folder appeared: watch what goes into it
                    outcome.append("rewatch")
                    done.cancel()
                    return
    except OSError as exc:  # a folder went away, too many watches: the page still works, unwatched
        logger.warning("the dashboard stopped watching %s: %s", ", ".join(map(str, roots)), exc)

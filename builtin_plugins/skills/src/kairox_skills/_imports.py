"""The skill folders of other tools (Claude Code, Codex, the ``.agents`` convention).

Read by default, below kairox's own folders of the same scope (on a name clash
the kairox skill wins and shows what it shadows); ``[skills] import_from``
switches them (see :func:`kairox_skills._config.import_kinds`):

=========  =========  =============================================  ==========
kind       scope      folder                                         source
=========  =========  =============================================  ==========
claude     user       ``~/.claude/skills``                           claude-user
claude     user       ``~/.claude/commands`` (commands)              claude-user-commands
claude     workspace  ``.claude/skills``                             claude-workspace
claude     workspace  ``.claude/commands`` (commands)                claude-workspace-commands
codex      user       ``$CODEX_HOME/skills`` (``~/.codex/skills``)   codex-user
agents     user       ``~/.agents/skills``                           agents-user
agents     workspace  ``.agents/skills``                             agents-workspace
=========  =========  =============================================  ==========

A skills folder reads like any other (Agent Skills folders and kairox skill
files). A Claude **command** is a markdown file whose name is the command
(``review.md`` is ``review``; subfolders only organise): the frontmatter is
optional (``description``, ``argument-hint``, ``allowed-tools``, ``model``,
``disable-model-invocation``), a missing description is the body's first line,
and the body's ``$ARGUMENTS`` / ``$1``... take the text after the command (the
``ARGUMENTS`` argument). Workspace folders are workspace content exactly as
``.kairox/skills`` is: listed and usable whether or not the workspace is trusted
(a skill is markdown and runs nothing).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kairox.ext import SkillDef, SkillError, SkillScope, SkillWarning, split_frontmatter
from kairox.files import Entry, Refused, Root

from ._folders import IMPORTS, imported_rows
from ._sources import CLAUDE_ARGUMENTS, MAX_DEPTH, SKIP_DIRS, FolderSource, Item, is_skill_file
from ._template import template_for

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["IMPORTS", "CommandSkillSource", "ImportedFolder", "imported_folders"]

#: a command file larger than this is read only up to it (its description and frontmatter are at the top)
MAX_COMMAND = 256 * 1024


@attrs.frozen
class ImportedFolder:
    """One folder of another tool: its kind (``[skills] import_from``), scope, source name and path."""

    kind: str
    scope: SkillScope
    source: str
    path: Path
    commands: bool = False


def imported_folders(
    kinds: Sequence[str], *, workspace: Path, env: Mapping[str, str], exclude: Sequence[Path] = ()
) -> list[ImportedFolder]:
    """The folders of ``kinds``, user ones first; a folder kairox already reads (``exclude``,
    e.g. ``workspace_dirs = [".claude/skills"]``) is left out so it is not read twice."""
    return [ImportedFolder(*row) for row in imported_rows(kinds, workspace=workspace, env=env, exclude=exclude)]


def _first_line(body: str) -> str:
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text[:200]
    return ""


def parse_command(
    text: str,
    path: str,
    *,
    scope: SkillScope,
    source: str,
    origin: str | None = "claude",
    namespace: str | None = None,
    root: Root | None = None,
) -> Item:
    """One Claude command file (its whole text) as a skill named after the file
    (``<namespace>:<name>`` for a plugin's); a :class:`~kairox.ext.SkillError` (returned,
    not raised) when it cannot be read. ``root`` is the root it was read inside
    (:attr:`kairox.ext.SkillDef.contained`)."""
    from ._format import load_yaml  # with the first command read (a folder of none costs no YAML reader)
    from ._structure import frontmatter_from_mapping

    name = os.path.basename(path)[:-3]
    try:
        fm_text, body = split_frontmatter(text)
    except SkillError as exc:
        return SkillError(exc.message, file=path, line=exc.line)
    data: Any = {}
    warnings: list[SkillWarning] = []
    if fm_text is not None:
        try:
            data, warnings = load_yaml(fm_text, file=path)
        except SkillError as exc:
            return exc
        if data is None:
            data = {}
        if not isinstance(data, dict):
            return SkillError("the frontmatter must be a mapping of fields", file=path, line=2)
    data = dict(data)
    data["name"] = name  # the file name is the command's name, whatever the frontmatter says
    description = data.get("description")
    if description is None or (isinstance(description, str) and not description.strip()):
        data["description"] = _first_line(body) or f"Claude command /{name}"
    if not data.get("arguments"):
        data.pop("arguments", None)
    try:
        fm, more = frontmatter_from_mapping(data, file=path, fallback_name=name)
    except SkillError as exc:
        return exc
    if not fm.arguments:
        fm = attrs.evolve(fm, arguments=(CLAUDE_ARGUMENTS,))
    kept = tuple(w for w in (*warnings, *more) if w.field != "name")  # the Agent Skills name rule is for skills
    return SkillDef(
        fm,
        scope,
        source=source,
        path=path,
        namespace=namespace,
        body_text=body,
        warnings=kept,
        origin=origin,
        contained=root,
        template=template_for(fm),
    )


class CommandSkillSource(FolderSource):
    """Claude commands under ``dirs`` (every ``*.md`` file, to depth :data:`MAX_DEPTH`), all of
    one scope. A plugin loader passes ``namespace`` (``<plugin>:<name>``) and ``origin=None``;
    a path in ``dirs`` may also be one command file.

    The folders are read inside ``root`` (the workspace, a bundle's folder) as
    :class:`~kairox_skills.DirectorySkillSource` reads its own: a folder given as a
    :class:`~kairox.files.Root` inside itself, and without either each folder inside itself.
    A command file that is refused (a link leading outside, a device) is an error where the
    command would have been."""

    def __init__(
        self,
        name: str,
        scope: SkillScope | str,
        dirs: Sequence[str | os.PathLike[str] | Root],
        *,
        origin: str | None = "claude",
        namespace: str | None = None,
        root: Root | None = None,
    ) -> None:
        super().__init__(name, scope, dirs, namespace=namespace, origin=origin, root=root)

    def __repr__(self) -> str:
        return f"CommandSkillSource({self.name!r}, {self.scope.value}, {[str(d) for d in self.dirs]})"

    def scan(self, runtime: Runtime | None = None) -> Iterator[Item]:
        items: list[Item] = []
        for folder, root in self.folder_roots(runtime):
            items.extend(self._scan_root(folder, root))
        return iter(items)

    def _scan_root(self, folder: Path, root: Root) -> Iterator[Item]:
        top = os.path.abspath(folder)
        try:
            kind = root.kind(top)
        except Refused as exc:  # the folder (or file) itself leads outside its root
            yield SkillError(exc.reason, file=top)
            return
        files: Iterator[Entry | str]
        if kind == "file" and top.endswith(".md"):
            files = iter([top])
        elif kind != "dir":
            if kind != "missing":
                yield SkillWarning("not a directory; no commands read from it", file=top)
            return
        else:
            files = _command_files(root, top)
        for item in files:
            path = item if isinstance(item, str) else os.fspath(item.path)
            if not isinstance(item, str) and item.refused:
                yield SkillError(item.refused, file=path)
                continue
            try:
                raw, _more = root.read_prefix(item, MAX_COMMAND)
            except Refused as exc:
                yield SkillError(exc.reason, file=path)
                continue
            except OSError as exc:
                yield SkillError(f"cannot read: {exc.strerror or exc}", file=path)
                continue
            text = raw.decode("utf-8", errors="replace")
            yield parse_command(
                text, path, scope=self.scope, source=self.name, origin=self.origin, namespace=self.namespace, root=root
            )


def _command_files(root: Root, top: str) -> Iterator[Entry]:
    """The command files under ``top``, in the walk's order, with the refused ones (a link
    leading outside, a folder among them) where they are."""
    for entry in root.walk(top, max_depth=MAX_DEPTH, skip=SKIP_DIRS):
        if entry.refused:
            if entry.kind == "dir" or is_skill_file(entry.name):
                yield entry
        elif entry.kind == "file" and is_skill_file(entry.name):
            yield entry

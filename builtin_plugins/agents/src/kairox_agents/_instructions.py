"""Instructions: behaviour that applies to every session in a workspace (the ``[instructions]``
section, and the ``AGENTS.md`` / ``CLAUDE.md`` files users keep), given to each turn through
the ``kairox_instructions`` hook.

Sources, in the order they are given to the model (later ones are more
specific and win where they disagree):

1. the user's instruction files: ``$KAIROX_HOME/AGENTS.md`` then ``$KAIROX_HOME/CLAUDE.md``
   (read with the user's own ``agents_files`` and ``max_bytes``, whatever a workspace sets);
2. ``[instructions]`` in the user ``kairox.toml`` (``text``, then each of ``files``);
3. ``[instructions]`` in the workspace config files (same order);
4. the instruction files users already keep in the repository: for every
   directory from the workspace root down to the current directory (nearest
   last), its ``AGENTS.md`` then its ``CLAUDE.md`` (names configurable through
   ``[instructions].agents_files``; ``[]`` turns discovery off).

Every piece carries its provenance. A file larger than ``max_bytes`` is cut
with a marker; an unreadable one is skipped with a warning. A workspace's
``[instructions]`` needs no trust (nothing in it runs), so its limits only narrow the
user's: its files are cut at the smaller of the two ``max_bytes``, each file is read
once, and its pieces together stop at the smaller ``max_total_bytes``. Workspace files are read
through the workspace's contained root (:attr:`Runtime.workspace_root`): an
``AGENTS.md`` that links outside the workspace, or a device, is refused with the
reason, as a problem where the piece would have been. The user's own files are read
where their links lead, as regular files only.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kairox import ConfigError, KairoxError
from kairox.ext import Instruction, expand_env, structure, user_home
from kairox.files import Refused, Root

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["DEFAULT_AGENTS_FILES", "InstructionsConfig", "load_instructions", "turn_instructions"]

logger = logging.getLogger(__name__)

#: AGENTS.md is the cross-tool convention (agents.md: Codex, Cursor, ...), CLAUDE.md Claude Code's
DEFAULT_AGENTS_FILES = ("AGENTS.md", "CLAUDE.md")


@attrs.frozen
class InstructionsConfig:
    """The ``[instructions]`` section."""

    text: str = ""
    files: list[str] = attrs.field(factory=list)
    agents_files: list[str] = attrs.field(factory=lambda: list(DEFAULT_AGENTS_FILES))
    #: what one file may give (more is cut with a marker)
    max_bytes: int = 32_768
    #: what the workspace's pieces (its text, files and discovered files) may give together
    max_total_bytes: int = 262_144
    #: the output style each turn is given (``""`` or ``"default"``: none)
    output_style: str = ""


def _read(root: Root | None, path: Path, max_bytes: int, problems: list[str]) -> str | None:
    """The text of ``path`` cut at ``max_bytes``, read inside ``root`` (``None``: a file of
    the user's own, read wherever its links lead); ``None`` when missing or refused."""
    if root is None:
        real = Path(os.path.realpath(path))
        root, path = Root(real.parent, label="its folder"), real
    try:
        data, more = root.read_prefix(path, max_bytes)
    except FileNotFoundError:
        return None
    except Refused as exc:
        problems.append(str(exc))
        return None
    except OSError as exc:
        problems.append(f"{path}: cannot read: {exc.strerror or exc}")
        return None
    text = data.decode("utf-8", errors="replace")
    if more:
        text += f"\n[... truncated: {more} more bytes in {path} ...]"
    return text.strip() or None


def _first(path: Path, seen: set[str]) -> bool:
    """Whether ``path`` (as its links resolve) is read for the first time this turn."""
    key = os.path.realpath(path)
    if key in seen:
        return False
    seen.add(key)
    return True


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


class _Budget:
    """What the workspace's pieces may still give this turn (UTF-8 bytes); a piece past it is
    left out, named once among the problems."""

    def __init__(self, total: int, problems: list[str]) -> None:
        self.left = total
        self.total = total
        self.problems = problems
        self.left_out: list[str] = []

    def take(self, size: int, source: str) -> bool:
        if size > self.left:
            if not self.left_out:
                self.problems.append(
                    f"instructions: the workspace's pieces reach max_total_bytes ({self.total}); "
                    f"left out from {source} on"
                )
            self.left_out.append(source)
            self.left = 0
            return False
        self.left -= size
        return True


def _section_of(file: str, data: dict[str, Any], problems: list[str]) -> InstructionsConfig | None:
    raw = data.get("instructions")
    if raw is None:
        return None
    try:
        return structure(raw, InstructionsConfig, path="instructions", file=file)
    except ConfigError as exc:
        problems.append(str(exc))
        return None


def load_instructions(runtime: Runtime, *, cwd: Path | None = None) -> tuple[list[Instruction], list[str]]:
    """Every instruction for a session in ``runtime``'s workspace, with the problems met."""
    problems: list[str] = []
    pieces: list[Instruction] = []
    # the user's own files are read with the user's own settings, whatever a workspace says;
    # the workspace's settings (merged over the user's) govern the workspace's own files
    mine = runtime.config.user_section("instructions")
    merged = runtime.config.section("instructions")
    # a workspace (untrusted until the user says so) may narrow the limits, never widen them
    file_limit = min(merged.max_bytes, mine.max_bytes)
    budget = _Budget(min(merged.max_total_bytes, mine.max_total_bytes), problems)
    seen: set[str] = set()
    home = runtime.home or user_home(runtime.env)
    for name in mine.agents_files:
        path = home / name
        text = _read(None, path, mine.max_bytes, problems)
        if text:
            pieces.append(Instruction(text, str(path), "user"))
    workspace_root = runtime.workspace_root
    user_files = {str(home / "kairox.toml")}
    for file, data in runtime.config.documents:
        sec = _section_of(file, data, problems)
        if sec is None:
            continue
        scope = "user" if file in user_files or runtime.config.scope_of(file) == "user" else "workspace"
        base = Path(file).parent if Path(file).is_absolute() else runtime.workspace
        if scope == "workspace" and base.name == ".kairox":
            base = base.parent
        text = sec.text
        if "${" in text:  # read the environment only as the user's trust covers it
            state = runtime.trust.state_of(f"instructions@{file}")
            if scope == "user" or (state is not None and state.allowed):
                try:
                    text = expand_env(text, runtime.env, path="instructions.text", file=file)
                except ConfigError as exc:
                    problems.append(str(exc))
        if text.strip() and (scope == "user" or budget.take(_size(text.strip()), f"{file} [instructions].text")):
            pieces.append(Instruction(text.strip(), f"{file} [instructions].text", scope))
        for rel in sec.files:
            path = base / Path(rel).expanduser()
            if scope == "workspace":
                # a workspace cannot pull a file of yours into the model's context
                try:
                    workspace_root.locate(path)
                except Refused as exc:
                    problems.append(f"{file}: instructions.files: {rel}: {exc.reason}")
                    continue
            if scope == "workspace" and not _first(path, seen):
                continue
            text = _read(
                workspace_root if scope == "workspace" else None,
                path,
                file_limit if scope == "workspace" else mine.max_bytes,
                problems,
            )
            if text is None and not os.path.lexists(path):
                problems.append(f"{file}: instructions.files: {rel}: no such file")
            elif text and (scope == "user" or budget.take(_size(text), str(path))):
                pieces.append(Instruction(text, str(path), scope))
    workspace = runtime.workspace
    here = (cwd or workspace).resolve()
    try:
        rel_parts = here.relative_to(workspace).parts
    except ValueError:
        rel_parts = ()
    directory = workspace
    for part in (None, *rel_parts):
        if part is not None:
            directory = directory / part
        for name in merged.agents_files:
            path = directory / name
            if not _first(path, seen):
                continue
            text = _read(workspace_root, path, file_limit, problems)
            if text and budget.take(_size(text), str(path)):
                pieces.append(Instruction(text, str(path), "workspace" if directory == workspace else "directory"))
    for problem in problems:
        logger.warning("instructions: %s", problem)
    return pieces, problems


def turn_instructions(runtime: Runtime, cwd: Path) -> list[Instruction | Exception]:
    """The ``kairox_instructions`` answer: the instructions, then each problem as an
    exception (a problem of the turn, reported where the piece would have been)."""
    pieces, problems = load_instructions(runtime, cwd=cwd)
    return [*pieces, *(KairoxError(p) for p in problems)]

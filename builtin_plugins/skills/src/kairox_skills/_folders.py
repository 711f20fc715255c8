"""Where other tools keep their skills (Claude Code, Codex, the agents folder): the table and
the folders it gives, and the root a folder the user chose is read inside, with no import
beyond the kernel's names (the registration, imported at every open, and the readers both
use them)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairox.ext import SkillScope
from kairox.files import Root

if TYPE_CHECKING:
    from kairox import Runtime

__all__ = ["IMPORTS", "imported_rows", "own_root"]

#: the folders of other tools' skills kairox reads: ``(kind, scope, source, base, relative
#: path, commands)``; base ``home``, ``codex`` or ``workspace``
IMPORTS: tuple[tuple[str, SkillScope, str, str, str, bool], ...] = (
    ("claude", SkillScope.USER, "claude-user", "home", ".claude/skills", False),
    ("claude", SkillScope.USER, "claude-user-commands", "home", ".claude/commands", True),
    ("codex", SkillScope.USER, "codex-user", "codex", "skills", False),
    ("agents", SkillScope.USER, "agents-user", "home", ".agents/skills", False),
    ("claude", SkillScope.WORKSPACE, "claude-workspace", "workspace", ".claude/skills", False),
    ("claude", SkillScope.WORKSPACE, "claude-workspace-commands", "workspace", ".claude/commands", True),
    ("agents", SkillScope.WORKSPACE, "agents-workspace", "workspace", ".agents/skills", False),
)


def imported_rows(
    kinds: Sequence[str], *, workspace: Path, env: Any, exclude: Iterable[Path]
) -> list[tuple[str, SkillScope, str, Path, bool]]:
    """The folders of ``kinds``, user ones first, as ``(kind, scope, source, path, commands)``;
    a folder kairox already reads (``exclude``) is left out so it is not read twice."""
    home = env.get("HOME") or env.get("USERPROFILE")
    user = Path(home) if home else Path.home()
    codex = Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else user / ".codex"
    bases = {"home": user, "codex": codex, "workspace": workspace}
    seen = {os.path.abspath(p) for p in exclude}
    out = []
    for kind, scope, source, base, rel, commands in IMPORTS:
        if kind not in kinds:
            continue
        path = bases[base] / rel
        if os.path.abspath(path) in seen:
            continue
        seen.add(os.path.abspath(path))
        out.append((kind, scope, source, path, commands))
    return out


def own_root(folder: Path, runtime: Runtime | None) -> Root:
    """``folder`` as a root of its own (a folder the user chose: their skills folder, one
    their ``kairox.toml`` names), with the user's ``[files] readable_roots`` when there is
    a runtime."""
    label = f"the skills folder {folder}"
    return runtime.contained(folder, label=label) if runtime is not None else Root(folder, label=label)

"""The ``[skills]`` section of ``kairox.toml``."""

from __future__ import annotations

import attrs

__all__ = ["SkillsConfig"]


@attrs.frozen
class SkillsConfig:
    """``[skills]``: where else to look, and the on-disk cache.

    ``user_dirs`` are more user-scope directories (``~`` expands; relative to
    the kairox home), ``workspace_dirs`` more workspace-scope directories
    (relative to the workspace, e.g. ``".claude/skills"``). ``cache = false``
    turns off the on-disk cache (the in-memory one always works).
    """

    user_dirs: list[str] = attrs.field(factory=list)
    workspace_dirs: list[str] = attrs.field(factory=list)
    cache: bool = True

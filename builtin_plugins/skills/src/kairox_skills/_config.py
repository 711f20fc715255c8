"""The ``[skills]`` section of ``kairox.toml``."""

from __future__ import annotations

import attrs

from kairox._config import ConfigSection

__all__ = ["SkillsConfig", "config_section"]


@attrs.frozen
class SkillsConfig:
    """``[skills]``: where else to look, the cache, and prompt suggestions.

    ``user_dirs`` are more user-scope directories (``~`` expands; relative to
    the kairox home), ``workspace_dirs`` more workspace-scope directories
    (relative to the workspace, e.g. ``".claude/skills"``). ``cache = false``
    turns off the on-disk cache. ``suggest`` is how many matching skills a
    turn is offered (``0``: none).
    """

    user_dirs: list[str] = attrs.field(factory=list)
    workspace_dirs: list[str] = attrs.field(factory=list)
    cache: bool = True
    suggest: int = 3


def config_section() -> ConfigSection:
    return ConfigSection(
        name="skills",
        schema=SkillsConfig,
        description="Skill directories, the scan cache and prompt suggestions (kairox-skills).",
    )

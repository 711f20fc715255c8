"""The ``[skills]`` section of ``kairox.toml``."""

from __future__ import annotations

from typing import Any

import attrs

from kairox import ConfigError
from kairox.ext import describe_value

__all__ = ["IMPORT_KINDS", "SkillsConfig", "import_kinds"]

#: the other tools whose skill folders are read (see :data:`kairox_skills._imports.IMPORTS`)
IMPORT_KINDS = ("claude", "codex", "agents")


def import_kinds(value: Any) -> tuple[str, ...]:
    """``[skills] import_from`` as the kinds it turns on: ``true`` (all), ``false`` or ``[]``
    (none), a list of kinds, or a table ``{claude = true, codex = false}`` (a kind it does not
    name stays on). Raises :class:`~kairox.ConfigError` naming the field."""
    expected = f"one of {', '.join(IMPORT_KINDS)}"
    if isinstance(value, bool):
        return IMPORT_KINDS if value else ()
    if isinstance(value, (list, tuple)):
        out: list[str] = []
        for i, item in enumerate(value):
            if not isinstance(item, str) or item not in IMPORT_KINDS:
                raise ConfigError(f"expected {expected}, got {describe_value(item)}", path=f"import_from[{i}]")
            if item not in out:
                out.append(item)
        return tuple(k for k in IMPORT_KINDS if k in out)
    if isinstance(value, dict):
        on = dict.fromkeys(IMPORT_KINDS, True)
        for key, flag in value.items():
            if key not in IMPORT_KINDS:
                raise ConfigError(f"unknown kind; expected {expected}", path=f"import_from.{key}")
            if not isinstance(flag, bool):
                raise ConfigError(f"expected true or false, got {describe_value(flag)}", path=f"import_from.{key}")
            on[key] = flag
        return tuple(k for k, flag in on.items() if flag)
    raise ConfigError(
        f"expected true, false, a list of kinds ({', '.join(IMPORT_KINDS)}) or a table of booleans, "
        f"got {describe_value(value)}",
        path="import_from",
    )


def _check_import(_self: Any, _attribute: Any, value: Any) -> None:
    import_kinds(value)


@attrs.frozen
class SkillsConfig:
    """``[skills]``: where else to look, the skill folders of other tools, and the on-disk cache.

    ``user_dirs`` are more user-scope directories (``~`` expands; relative to
    the kairox home), ``workspace_dirs`` more workspace-scope directories
    (relative to the workspace). ``import_from`` says which other tools'
    folders are read (all of them by default: ``~/.claude/skills``,
    ``.claude/skills``, ``.claude/commands``, ``~/.codex/skills``,
    ``~/.agents/skills``, ``.agents/skills``), below kairox's own folders.
    ``cache = false`` turns off the on-disk cache (the in-memory one always works).
    """

    user_dirs: list[str] = attrs.field(factory=list)
    workspace_dirs: list[str] = attrs.field(factory=list)
    cache: bool = True
    import_from: Any = attrs.field(default=True, validator=_check_import)

    @property
    def imports(self) -> tuple[str, ...]:
        """The kinds ``import_from`` turns on."""
        return import_kinds(self.import_from)

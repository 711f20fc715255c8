"""The ``[plugins]`` section of ``kairox.toml``."""

from __future__ import annotations

from typing import Literal

import attrs

__all__ = ["SECTION", "BundlesConfig"]

SECTION = "plugins"


def _positive(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"expected a number > 0, got {value!r}")


@attrs.frozen
class BundlesConfig:
    """``[plugins]``::

    [plugins]
    enabled = true                 # false: load no manifest plugins at all
    paths = ["~/src/my-plugin"]    # more plugin directories (a plugin, or a directory of plugins)
    disabled = ["noisy", "docs:hook/pre_turn.inject-context"]
    workspace_trust = "ask"        # ask | trust | deny  (trust is honoured from the user file only)
    hook_timeout = 30              # seconds a hook script may run (a hook's own timeout wins)
    """

    enabled: bool = True
    paths: list[str] = attrs.field(factory=list)
    disabled: list[str] = attrs.field(factory=list)
    workspace_trust: Literal["ask", "trust", "deny"] = "ask"
    hook_timeout: float = attrs.field(default=30.0, validator=_positive)

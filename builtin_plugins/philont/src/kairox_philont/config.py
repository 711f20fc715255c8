"""The ``[philont]`` section of ``kairox.toml``."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["SECTION", "PhilontConfig", "philont_config"]

SECTION = "philont"


def _positive(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"expected a number > 0, got {value!r}")


def _not_negative(_inst: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or value < 0:
        raise ValueError(f"expected a whole number >= 0, got {value!r}")


def _command(_inst: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not value.strip():
        raise ValueError("expected a command (node, or a path to it)")


@attrs.frozen
class PhilontConfig:
    """``[philont]``::

    [philont]
    plugins = true          # false: do not look in .philont/plugins directories
    startup_timeout = 30    # seconds a plugin host may take to start and register a plugin
    max_restarts = 3        # restarts of a crashed worker in a row before it stays failed
    restart_backoff = 1.0   # seconds before the first restart (doubling, at most 30)
    node = "node"           # the Node.js that runs JavaScript plugins
    """

    plugins: bool = True
    startup_timeout: float = attrs.field(default=30.0, validator=_positive)
    max_restarts: int = attrs.field(default=3, validator=_not_negative)
    restart_backoff: float = attrs.field(default=1.0, validator=_positive)
    node: str = attrs.field(default="node", validator=_command)


def philont_config(config: Any) -> PhilontConfig:
    """The section from a runtime's :class:`~kairox.ext.Config` (defaults when absent or unregistered)."""
    if config is None or SECTION not in getattr(config, "sections", {}):
        return PhilontConfig()
    value = config.section(SECTION)
    return value if isinstance(value, PhilontConfig) else PhilontConfig()

"""The ``[philont]`` section of ``kairox.toml``."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["SECTION", "PhilontConfig", "philont_config"]

SECTION = "philont"


def _positive(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"expected a number > 0, got {value!r}")


@attrs.frozen
class PhilontConfig:
    """``[philont]``::

    [philont]
    plugins = true          # false: do not look in .philont/plugins directories
    startup_timeout = 30    # seconds a worker plugin may take to register
    """

    plugins: bool = True
    startup_timeout: float = attrs.field(default=30.0, validator=_positive)


def philont_config(config: Any) -> PhilontConfig:
    """The section from a runtime's :class:`~kairox.Config` (defaults when absent or unregistered)."""
    if config is None or SECTION not in getattr(config, "sections", {}):
        return PhilontConfig()
    value = config.section(SECTION)
    return value if isinstance(value, PhilontConfig) else PhilontConfig()

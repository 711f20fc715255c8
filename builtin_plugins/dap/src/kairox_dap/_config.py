"""The ``[dap_servers.NAME]`` section: debug adapters started on demand by ``dap.launch``."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

import attrs

from kairox import ValueMismatch
from kairox_lsp._config import EXTENSION_LANGUAGES, matches

__all__ = ["DapServerConfig", "handles", "patterns_for"]


def _positive(_inst: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if value <= 0:
        raise ValueMismatch(f"{attribute.name} must be greater than 0, got {value!r}")


def _non_empty(_inst: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value.strip():
        raise ValueMismatch(f"{attribute.name} must not be empty")


@attrs.frozen
class DapServerConfig:
    """One debug adapter (``[dap_servers.NAME]`` in ``kairox.toml``).

    ``launch`` holds extra arguments merged into every ``launch`` request
    (``justMyCode = false`` for debugpy); ``env`` values are added to the
    adapter's environment ("" = the same-named variable of kairox's).
    """

    command: str = attrs.field(validator=_non_empty)
    args: list[str] = attrs.field(factory=list)
    languages: list[str] = attrs.field(factory=list)
    env: dict[str, str] = attrs.field(factory=dict)
    file_patterns: list[str] = attrs.field(factory=list)
    adapter_id: str = ""
    launch: dict[str, Any] = attrs.field(factory=dict)
    startup_timeout: float = attrs.field(default=30.0, validator=_positive)
    request_timeout: float = attrs.field(default=30.0, validator=_positive)
    shutdown_timeout: float = attrs.field(default=3.0, validator=_positive)


def patterns_for(config: DapServerConfig) -> list[str]:
    """The globs of programs this adapter debugs."""
    if config.file_patterns:
        return list(config.file_patterns)
    wanted = set(config.languages)
    return [f"*{ext}" for ext, lang in EXTENSION_LANGUAGES.items() if lang in wanted]


def handles(config: DapServerConfig, program: PurePath) -> bool:
    return matches(patterns_for(config), program)

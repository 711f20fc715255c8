"""The ``[dap_servers.NAME]`` section: debug adapters started on demand by ``dap.launch``."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

import attrs

from kairox_peer import PeerServerConfig, language_patterns, matches

__all__ = ["DapServerConfig", "handles", "patterns_for"]


@attrs.frozen
class DapServerConfig(PeerServerConfig):
    """One debug adapter (``[dap_servers.NAME]`` in ``kairox.toml``).

    The fields of :class:`kairox_peer.PeerServerConfig` (command, args,
    languages, file_patterns, env, timeouts), and: ``adapter_id`` (the
    ``adapterID`` and launch ``type``, default: the entry's name); ``launch``
    holds extra arguments merged into every ``launch`` request
    (``justMyCode = false`` for debugpy).
    """

    adapter_id: str = ""
    launch: dict[str, Any] = attrs.field(factory=dict)


def patterns_for(config: DapServerConfig) -> list[str]:
    """The globs of programs this adapter debugs."""
    return list(config.file_patterns) or language_patterns(config.languages)


def handles(config: DapServerConfig, program: PurePath) -> bool:
    return matches(patterns_for(config), program)

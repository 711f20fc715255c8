"""The ``[lsp_servers.NAME]`` section and Claude Code ``lspServers`` / ``.lsp.json`` entries.

Both become :class:`LspServerConfig`. Files are routed to a server by
``file_patterns`` (globs matched against the workspace-relative path and the
file name); when a server declares none, they come from its languages
(``python`` -> ``*.py``, ``*.pyi``) or from its ``extension_to_language`` map.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path, PurePath
from typing import Any

import attrs

from kairox.errors import ConfigError
from kairox.ext import ValueMismatch, structure
from kairox.files import Refused, Root, loads_bounded
from kairox_peer import EXTENSION_LANGUAGES, PeerServerConfig, language_patterns

__all__ = ["ClaudeLspServer", "LspServerConfig", "language_for", "parse_lsp_servers", "patterns_for"]

logger = logging.getLogger(__name__)


def _not_negative(_inst: object, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 0:
        raise ValueMismatch(f"{attribute.name} must not be negative, got {value!r}")


def _non_empty(_inst: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value.strip():
        raise ValueMismatch(f"{attribute.name} must not be empty")


@attrs.frozen
class LspServerConfig(PeerServerConfig):
    """One language server (``[lsp_servers.NAME]`` in ``kairox.toml``).

    The fields of :class:`kairox_peer.PeerServerConfig`, and: ``settings`` answers
    ``workspace/configuration`` (looked up by the dotted section) and is sent
    with ``workspace/didChangeConfiguration`` after start; a server that exits
    on its own is restarted (``restart_on_crash``) up to ``max_restarts`` times.
    """

    initialization_options: Any = None
    settings: dict[str, Any] = attrs.field(factory=dict)
    restart_on_crash: bool = True
    max_restarts: int = attrs.field(default=3, validator=_not_negative)
    extension_to_language: dict[str, str] = attrs.field(factory=dict)
    enabled: bool = True


@attrs.frozen
class ClaudeLspServer:
    """An entry of Claude Code's ``lspServers`` (plugin manifest or ``.lsp.json``)."""

    command: str = attrs.field(validator=_non_empty)
    extensionToLanguage: dict[str, str]  # named as on the wire
    args: list[str] = attrs.field(factory=list)
    transport: str = "stdio"
    env: dict[str, str] = attrs.field(factory=dict)
    initializationOptions: Any = None
    settings: dict[str, Any] = attrs.field(factory=dict)
    workspaceFolder: str | None = None
    startupTimeout: float | None = None  # milliseconds
    shutdownTimeout: float | None = None  # milliseconds
    restartOnCrash: bool = True
    maxRestarts: int = attrs.field(default=3, validator=_not_negative)

    def to_config(self) -> LspServerConfig:
        def seconds(ms: float | None, default: float) -> float:
            return ms / 1000.0 if ms and ms > 0 else default

        return LspServerConfig(
            command=self.command,
            args=list(self.args),
            languages=sorted(set(self.extensionToLanguage.values())),
            file_patterns=[f"*{_dotted(ext)}" for ext in self.extensionToLanguage],
            env=dict(self.env),
            initialization_options=self.initializationOptions,
            settings=dict(self.settings),
            startup_timeout=seconds(self.startupTimeout, 30.0),
            shutdown_timeout=seconds(self.shutdownTimeout, 3.0),
            restart_on_crash=self.restartOnCrash,
            max_restarts=self.maxRestarts,
            extension_to_language={_dotted(k): v for k, v in self.extensionToLanguage.items()},
        )


_CLAUDE_FIELDS = frozenset(a.name for a in attrs.fields(ClaudeLspServer))


def _dotted(ext: str) -> str:
    return ext if ext.startswith(".") else f".{ext}"


def _expand_root(value: Any, root: str) -> Any:
    if isinstance(value, str):
        return value.replace("${CLAUDE_PLUGIN_ROOT}", root)
    if isinstance(value, list):
        return [_expand_root(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _expand_root(v, root) for k, v in value.items()}
    return value


def parse_lsp_servers(
    document: Any,
    *,
    root: str | Path | None = None,
    file: str | None = None,
    path: str = "lspServers",
) -> tuple[dict[str, LspServerConfig], list[ConfigError]]:
    """Structure Claude ``lspServers`` entries (``{NAME: {...}}``) into configs.

    ``document`` is the value of a manifest's ``lspServers`` or a whole
    ``.lsp.json`` (either ``{NAME: entry}`` or ``{"lspServers": {NAME: entry}}``).
    ``${CLAUDE_PLUGIN_ROOT}`` expands to ``root`` in every string. Unknown keys
    are ignored with a warning; a bad entry drops only itself. Never raises.
    """
    errors: list[ConfigError] = []
    if isinstance(document, dict) and set(document) == {"lspServers"}:
        document = document["lspServers"]
    if not isinstance(document, dict):
        return {}, [ConfigError("expected a table of servers (name -> entry)", file=file, path=path)]
    servers: dict[str, LspServerConfig] = {}
    for name, entry in document.items():
        where = f"{path}.{name}"
        if not isinstance(entry, dict):
            errors.append(ConfigError("expected a table", file=file, path=where))
            continue
        unknown = sorted(k for k in entry if k not in _CLAUDE_FIELDS)
        if unknown:
            logger.warning("%s: %s: ignoring unknown keys %s", file or "lspServers", where, ", ".join(unknown))
        known = {k: v for k, v in entry.items() if k in _CLAUDE_FIELDS}
        if root is not None:
            known = _expand_root(known, str(root))
        try:
            parsed: ClaudeLspServer = structure(known, ClaudeLspServer, path=where, file=file)
        except ConfigError as exc:
            errors.extend(exc.errors)
            continue
        if parsed.transport != "stdio":
            errors.append(
                ConfigError(
                    f"transport {parsed.transport!r} is not supported (only stdio)",
                    file=file,
                    path=f"{where}.transport",
                )
            )
            continue
        if not parsed.extensionToLanguage:
            errors.append(
                ConfigError("must map at least one extension", file=file, path=f"{where}.extensionToLanguage")
            )
            continue
        servers[str(name)] = parsed.to_config()
    return servers, errors


#: a ``.lsp.json`` larger than this is not read
MAX_LSP_JSON_BYTES = 4 * 1024 * 1024


def load_lsp_json(
    file: Path, *, root: Path | Root | None = None
) -> tuple[dict[str, LspServerConfig], list[ConfigError]]:
    """Read a bundle's ``.lsp.json`` inside the bundle: ``root`` is the bundle's folder or its
    contained :class:`kairox.files.Root` (default: the file's folder). A file that leads
    outside it (a link to a private file, a device) is refused with the reason, naming it;
    ``${CLAUDE_PLUGIN_ROOT}`` expands to the bundle's folder."""
    if isinstance(root, Root):
        contained = root
    else:
        contained = Root(root if root is not None else file.parent, label="the plugin root")
    try:
        document = loads_bounded(contained.read_text(file, max_bytes=MAX_LSP_JSON_BYTES), json.loads)
    except Refused as exc:
        return {}, [ConfigError(exc.reason, file=str(file))]
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return {}, [ConfigError(f"cannot read: {exc}", file=str(file))]
    return parse_lsp_servers(document, root=contained.path, file=str(file), path="")


def patterns_for(config: LspServerConfig) -> list[str]:
    """The globs of files this server handles."""
    if config.file_patterns:
        return list(config.file_patterns)
    if config.extension_to_language:
        return [f"*{ext}" for ext in config.extension_to_language]
    return language_patterns(config.languages)


def language_for(config: LspServerConfig, path: PurePath) -> str:
    """The ``languageId`` of ``path`` for this server."""
    suffix = path.suffix.lower()
    if suffix in config.extension_to_language:
        return config.extension_to_language[suffix]
    known = EXTENSION_LANGUAGES.get(suffix)
    if known and (not config.languages or known in config.languages):
        return known
    if len(config.languages) == 1:
        return config.languages[0]
    return known or suffix.lstrip(".") or "plaintext"

"""LSP client whose operations become Kairox tools while a server runs.

The LSP tools: :class:`LspToolProvider` (provider ``PROVIDER_NAME``),
:func:`add_plugin_servers` for plugin loaders, :class:`LspClient`,
:class:`LspServerLifecycle` and their configuration and events.

The peer layer, public for other peer-process features (kairox-dap uses it):

- framing: :func:`encode_message`, :class:`FrameDecoder`, :class:`BadMessage`, :class:`FramingError`;
- the process: :class:`StdioPeer` (own session, bounded stderr as a
  :class:`kairox.process.OutputTail`, always reaped), :func:`resolve_command`, :class:`CommandNotFound`;
- the client: :class:`PeerClient` (reader loop, loss, sending) over a :class:`MessagePeer`,
  with :class:`PendingRequest` entries;
- the lifecycle: :class:`ManagedServer` (start, watch, restart or fail, reap) for a
  :class:`PeerServerConfig` (command, args, languages, file patterns, env, timeouts),
  :func:`child_env`, :func:`language_patterns`, :func:`matches`;
- the tools: :class:`PeerTool` with one error mapping (:data:`PeerErrors`,
  :func:`peer_error_text`), :class:`ToolInputError`, :func:`object_schema`;
- text: :func:`read_text`, :func:`split_lines`, :func:`line_at` and the column conversions.

Names are loaded lazily so that importing the package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.lazy import lazy_exports

if TYPE_CHECKING:
    from ._client import CLIENT_CAPABILITIES, ConnectionLost, LspClient, LspError, RequestTimeout
    from ._config import (
        ClaudeLspServer,
        LspServerConfig,
        PeerServerConfig,
        child_env,
        language_patterns,
        load_lsp_json,
        matches,
        parse_lsp_servers,
    )
    from ._documents import DocumentStore, path_to_uri, read_text, uri_to_path
    from ._events import LspServerFailed, LspServerRunning, LspServerStarting, LspServerStopped
    from ._framing import BadMessage, FrameDecoder, FramingError, encode_message
    from ._lifecycle import LspServerLifecycle, ServerUnavailable
    from ._managed import ManagedServer, Spawn
    from ._peerclient import MessagePeer, PeerClient, PendingRequest
    from ._peertools import PeerErrors, PeerTool, ToolInputError, object_schema, peer_error_text
    from ._positions import from_server_character, line_at, split_lines, to_server_character
    from ._process import CommandNotFound, StdioPeer, kill_group, resolve_command
    from ._provider import PROVIDER_NAME, LspToolProvider, add_plugin_servers

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["CLIENT_CAPABILITIES", "ConnectionLost", "LspClient", "LspError", "RequestTimeout"], "_client"),
    **dict.fromkeys(
        [
            "ClaudeLspServer",
            "LspServerConfig",
            "PeerServerConfig",
            "child_env",
            "language_patterns",
            "load_lsp_json",
            "matches",
            "parse_lsp_servers",
        ],
        "_config",
    ),
    **dict.fromkeys(["DocumentStore", "path_to_uri", "read_text", "uri_to_path"], "_documents"),
    **dict.fromkeys(["LspServerFailed", "LspServerRunning", "LspServerStarting", "LspServerStopped"], "_events"),
    **dict.fromkeys(["BadMessage", "FrameDecoder", "FramingError", "encode_message"], "_framing"),
    **dict.fromkeys(["LspServerLifecycle", "ServerUnavailable"], "_lifecycle"),
    **dict.fromkeys(["ManagedServer", "Spawn"], "_managed"),
    **dict.fromkeys(["MessagePeer", "PeerClient", "PendingRequest"], "_peerclient"),
    **dict.fromkeys(["PeerErrors", "PeerTool", "ToolInputError", "object_schema", "peer_error_text"], "_peertools"),
    **dict.fromkeys(["from_server_character", "line_at", "split_lines", "to_server_character"], "_positions"),
    **dict.fromkeys(["CommandNotFound", "StdioPeer", "kill_group", "resolve_command"], "_process"),
    **dict.fromkeys(["PROVIDER_NAME", "LspToolProvider", "add_plugin_servers"], "_provider"),
}

__all__ = [
    "BadMessage",
    "CLIENT_CAPABILITIES",
    "ClaudeLspServer",
    "CommandNotFound",
    "ConnectionLost",
    "DocumentStore",
    "FrameDecoder",
    "FramingError",
    "LspClient",
    "LspError",
    "LspServerConfig",
    "LspServerFailed",
    "LspServerLifecycle",
    "LspServerRunning",
    "LspServerStarting",
    "LspServerStopped",
    "LspToolProvider",
    "ManagedServer",
    "MessagePeer",
    "PROVIDER_NAME",
    "PeerClient",
    "PeerErrors",
    "PeerServerConfig",
    "PeerTool",
    "PendingRequest",
    "RequestTimeout",
    "ServerUnavailable",
    "Spawn",
    "StdioPeer",
    "ToolInputError",
    "add_plugin_servers",
    "child_env",
    "encode_message",
    "from_server_character",
    "kill_group",
    "language_patterns",
    "line_at",
    "load_lsp_json",
    "matches",
    "object_schema",
    "parse_lsp_servers",
    "path_to_uri",
    "peer_error_text",
    "read_text",
    "resolve_command",
    "split_lines",
    "to_server_character",
    "uri_to_path",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)

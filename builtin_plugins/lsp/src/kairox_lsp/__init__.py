"""LSP client whose operations become Kairox tools while a server runs.

The framing (:func:`encode_message`, :class:`FrameDecoder`) and the child
process handling (:class:`StdioPeer`, :class:`StderrTail`) are shared with
kairox-dap. Names are loaded lazily so that importing the package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairox.lazy import lazy_exports

if TYPE_CHECKING:
    from ._client import CLIENT_CAPABILITIES, ConnectionLost, LspClient, LspError, MessagePeer, RequestTimeout
    from ._config import ClaudeLspServer, LspServerConfig, load_lsp_json, parse_lsp_servers
    from ._documents import DocumentStore, path_to_uri, uri_to_path
    from ._events import LspServerFailed, LspServerRunning, LspServerStarting, LspServerStopped
    from ._framing import BadMessage, FrameDecoder, FramingError, encode_message
    from ._lifecycle import LspServerLifecycle, ServerUnavailable
    from ._positions import from_server_character, split_lines, to_server_character
    from ._process import CommandNotFound, StderrTail, StdioPeer, kill_group, resolve_command
    from ._provider import LspToolProvider, add_plugin_servers

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        ["CLIENT_CAPABILITIES", "ConnectionLost", "LspClient", "LspError", "MessagePeer", "RequestTimeout"], "_client"
    ),
    **dict.fromkeys(["ClaudeLspServer", "LspServerConfig", "load_lsp_json", "parse_lsp_servers"], "_config"),
    **dict.fromkeys(["DocumentStore", "path_to_uri", "uri_to_path"], "_documents"),
    **dict.fromkeys(["LspServerFailed", "LspServerRunning", "LspServerStarting", "LspServerStopped"], "_events"),
    **dict.fromkeys(["BadMessage", "FrameDecoder", "FramingError", "encode_message"], "_framing"),
    **dict.fromkeys(["LspServerLifecycle", "ServerUnavailable"], "_lifecycle"),
    **dict.fromkeys(["from_server_character", "split_lines", "to_server_character"], "_positions"),
    **dict.fromkeys(["CommandNotFound", "StderrTail", "StdioPeer", "kill_group", "resolve_command"], "_process"),
    **dict.fromkeys(["LspToolProvider", "add_plugin_servers"], "_provider"),
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
    "MessagePeer",
    "RequestTimeout",
    "ServerUnavailable",
    "StderrTail",
    "StdioPeer",
    "add_plugin_servers",
    "encode_message",
    "from_server_character",
    "kill_group",
    "load_lsp_json",
    "parse_lsp_servers",
    "path_to_uri",
    "resolve_command",
    "split_lines",
    "to_server_character",
    "uri_to_path",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)

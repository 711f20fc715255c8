"""JSON-RPC-style peers over stdio, shared by kairox-lsp and kairox-dap.

A library, not a plugin: it registers nothing. Neither feature owns it, so the
debug adapters of kairox-dap need no language-server code, and what the two
share is written once:

- framing: :func:`encode_message`, :class:`FrameDecoder`, :class:`BadMessage`, :class:`FramingError`;
- the process: :class:`StdioPeer` (own session, bounded stderr as a
  :class:`kairox_process.OutputTail`, always reaped), :func:`resolve_command`, :class:`CommandNotFound`;
- the client: :class:`PeerClient` (reader loop, loss, sending) over a :class:`MessagePeer`,
  with :class:`PendingRequest` entries;
- the lifecycle: :class:`ManagedServer` (start, watch, restart or fail, reap; :data:`Spawn`) for a
  :class:`PeerServerConfig` (command, args, languages, file patterns, env, timeouts),
  :func:`child_env`, :func:`language_patterns` (from :data:`EXTENSION_LANGUAGES`), :func:`matches`;
- control by name: :func:`peer_provider`, :func:`restart_peer`, :func:`stop_peer` over a
  :class:`PeerServers` provider (:func:`peer_controls` makes a feature's ``provider_of``,
  ``restart_server`` and ``stop_server``), :func:`server_named`, :func:`unavailable_servers` (held or broken entries);
- the tools: :class:`PeerTool` with one error mapping (:data:`PeerErrors`,
  :func:`peer_error_text`), :class:`ToolInputError`, :func:`object_schema`;
- text: :func:`read_text`, :func:`split_lines`, :func:`line_at`.

Names are loaded lazily so that importing the package is cheap.
"""

from __future__ import annotations

from kairox.declare import stub_exports

__getattr__, __dir__ = stub_exports(__name__, __file__)

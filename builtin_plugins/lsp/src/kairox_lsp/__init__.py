"""LSP client whose operations become Kairox tools while a server runs.

The LSP tools: :class:`LspToolProvider` (provider ``PROVIDER_NAME``),
:func:`add_bundle_servers` for plugin loaders,
:func:`restart_server` / :func:`stop_server` (a runtime's server, by name; :func:`provider_of`), :class:`LspClient`,
:class:`LspServerLifecycle` and their configuration and events.

The peer layer it runs on (framing, the child process, the client loop, the
server lifecycle, the tool errors) is kairox-peer's, shared with kairox-dap.

Names are loaded lazily so that importing the package is cheap.
"""

from __future__ import annotations

from kairox.declare import stub_exports

__getattr__, __dir__ = stub_exports(__name__, __file__)

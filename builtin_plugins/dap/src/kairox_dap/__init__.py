"""DAP client whose operations become Kairox tools while a debug adapter is configured.

The peer layer (framing, child process, client loop, server lifecycle, tool
errors) comes from kairox-peer's public names, shared with kairox-lsp. Names
are loaded lazily so that importing the package is cheap.
"""

from __future__ import annotations

from kairox.declare import stub_exports

__getattr__, __dir__ = stub_exports(__name__, __file__)

"""Plugin manifests: Agent Plugins ``plugin.json``, ``.kairox-plugin``, ``.codex-plugin``, ``.claude-plugin`` (and Claude's
manifest-less layout), the loader that routes each plugin's contributions, settings,
install/uninstall and ``kairox plugin ...``.

Names are loaded lazily so that importing the package stays cheap.
"""

from __future__ import annotations

from kairox.declare import stub_exports

__getattr__, __dir__ = stub_exports(__name__, __file__)

"""Plugin manifests: ``.kairox-plugin``, ``.codex-plugin``, ``.claude-plugin`` (and Claude's
manifest-less layout), the loader that routes each plugin's contributions, settings,
install/uninstall and ``kairox plugin ...``.

Names are loaded lazily so that importing the package stays cheap.
"""

from __future__ import annotations

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)

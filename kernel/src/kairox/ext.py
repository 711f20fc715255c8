"""What the built-in plugins share beyond the public API: no stability promise.

:mod:`kairox` exports what plugin authors and embedding hosts use (see ``docs/api.md``). The
built-in plugins also share the kernel's registries, config loader, trust store, name rules
and readers; they live here, where a third party may use them knowing that they change with
the built-ins, release to release. Each name is listed once, in ``ext.pyi``, and loaded on
first use, like :mod:`kairox`'s own.
"""

from __future__ import annotations

import lazy_loader

# the stub's imports are relative to the package (``from ._config import ...``)
__getattr__, __dir__, __all__ = lazy_loader.attach_stub("kairox", __file__)

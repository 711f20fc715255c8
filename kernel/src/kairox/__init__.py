"""Kairox: the extensibility runtime an LLM agent stands on.

The public API is re-exported here and loaded lazily, so ``import kairox``
stays cheap (it never imports ``mcp`` or an HTTP client).

    async with kairox.Runtime.open(workspace=".") as rt:
        result = await rt.call_tool("fs.read", {"path": "README.md"})

The names, and the module each comes from, are listed once: in ``__init__.pyi``,
which type checkers read and ``lazy_loader.attach_stub`` turns into this
package's ``__getattr__``, ``__dir__`` and ``__all__``.
"""

from __future__ import annotations

import lazy_loader

_lazy_getattr, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)


def __getattr__(name: str) -> object:
    if name == "__version__":  # the installed distribution's, read when first asked for
        from ._entrypoints import kernel_version

        return kernel_version() or "unknown"
    return _lazy_getattr(name)

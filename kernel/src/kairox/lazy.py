"""Lazy re-exports for a package's ``__init__`` (the kernel's and plugins' alike).

    _EXPORTS = {"McpClient": "client", ...}          # name -> submodule
    __all__ = [...]                                  # a literal list, for type checkers
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)

A name is imported from its submodule the first time it is used, then cached
in the package namespace; importing the package itself stays cheap.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], names: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` loading ``exports`` (name -> submodule) on first use."""
    missing = set(exports) - set(names)
    if missing:
        raise ValueError(f"{package}: exported but not in __all__: {', '.join(sorted(missing))}")

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return list(names)

    return __getattr__, __dir__

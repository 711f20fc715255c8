"""Small shims over the Python versions we support (3.10+)."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# The standard library's importlib.metadata has everything we need from 3.10 on
# (entry_points(group=...), EntryPoint.dist) and is ~15x faster to import and
# scan than the importlib-metadata backport, which matters for CLI start-up.
from importlib import metadata as importlib_metadata

__all__ = ["importlib_metadata", "tomllib"]

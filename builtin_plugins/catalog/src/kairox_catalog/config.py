"""The ``[catalog]`` section of ``kairox.toml``.

.. code-block:: toml

    [catalog]
    builtin = true          # offer the built-in curated list
    cache_ttl = 3600        # seconds a fetched document is used without revalidating
    timeout = 10            # seconds for one HTTP request

    [[catalog.sources]]
    name = "team"
    url = "https://example.com/catalog.json"   # or a path / file:// URL
    kind = "auto"           # auto | kairox | mcp-registry | claude-marketplace
"""

from __future__ import annotations

from typing import Literal

import attrs

__all__ = ["CatalogConfig", "SourceConfig"]


@attrs.frozen
class SourceConfig:
    name: str
    url: str
    kind: Literal["auto", "kairox", "mcp-registry", "claude-marketplace"] = "auto"
    enabled: bool = True


@attrs.frozen
class CatalogConfig:
    sources: list[SourceConfig] = attrs.field(factory=list)
    builtin: bool = True
    cache_ttl: float = 3600.0
    timeout: float = 10.0

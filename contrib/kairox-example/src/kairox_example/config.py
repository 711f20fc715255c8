"""The ``[example]`` section of ``kairox.toml``.

```toml
[example]
protected = [".env", "*.pem", "secrets/*"]   # file globs no tool call may name
max_bytes = 1000000                          # largest file example.* tools read
```
"""

from __future__ import annotations

import attrs

__all__ = ["DEFAULT_PROTECTED", "ExampleConfig"]

#: files that hold secrets in most repositories
DEFAULT_PROTECTED = (".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*")


@attrs.frozen
class ExampleConfig:
    """Structured by kairox from ``[example]``; a wrong type is reported with its file and path."""

    #: globs matched against each path-like word of every tool call's arguments
    #: (the whole relative path and its file name)
    protected: list[str] = attrs.field(factory=lambda: list(DEFAULT_PROTECTED))
    #: the example tools refuse larger files
    max_bytes: int = 1_000_000

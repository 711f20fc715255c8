"""Where MCP servers are declared outside ``kairox.toml``, and whether any file is there.

Light on purpose (no attrs classes, no config model): the manager asks
:func:`nothing_declared` before it imports the server config (:mod:`.config`) and
the readers of these files (:mod:`.sources`), so a workspace that declares no
server opens without them. :mod:`.sources` re-exports :func:`philont_config_path`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["browser_wanted", "nothing_declared", "philont_config_path"]


def philont_config_path(env: Mapping[str, str], home: Path | None = None) -> Path:
    explicit = (env.get("PHILONT_MCP_CONFIG") or "").strip()
    if explicit:
        return Path(explicit).expanduser()
    base = home if home is not None else Path(env.get("HOME") or Path.home())
    return base / ".philont" / "mcp.json"


def browser_wanted(env: Mapping[str, str]) -> bool:
    """``PHILONT_MCP_BROWSER=1``: Philont's Playwright server is added."""
    return (env.get("PHILONT_MCP_BROWSER") or "").strip().lower() in ("1", "true", "yes")


def _absent(path: Path) -> bool:
    """Whether reading ``path`` would find no file (``read_document``'s "missing": no error).
    Anything else (a file, a directory, a path it cannot look at) is read, so its error is said."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    return False


def nothing_declared(workspace: Path, env: Mapping[str, str], home: Path | None) -> bool:
    """Whether neither Philont's ``mcp.json`` nor the workspace ``.mcp.json`` exists and
    ``PHILONT_MCP_BROWSER`` is off: the files :func:`.sources.load_definitions` reads give nothing."""
    if browser_wanted(env):
        return False
    return _absent(philont_config_path(env, home)) and _absent(workspace / ".mcp.json")

"""Where MCP servers are declared outside ``kairox.toml``, and whether any file is there.

Light on purpose (no attrs classes, no config model): the manager asks
:func:`nothing_declared` before it imports the server config (:mod:`.config`) and
the readers of these files (:mod:`.sources`), so a workspace that declares no
server opens without them. :mod:`.sources` re-exports :func:`philont_config_path`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kairox.files import missing

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


def nothing_declared(workspace: Path, env: Mapping[str, str], home: Path | None) -> bool:
    """Whether neither Philont's ``mcp.json`` nor the workspace ``.mcp.json`` exists and
    ``PHILONT_MCP_BROWSER`` is off: the files :func:`.sources.load_definitions` reads give nothing."""
    if browser_wanted(env):
        return False
    return missing(philont_config_path(env, home)) and missing(workspace / ".mcp.json")

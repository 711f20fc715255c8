"""What became of each bundle the last time it was loaded, for commands that load nothing.

``kairox plugin list`` and ``plugin inspect`` run no plugin code, so they cannot see
that a bundle's ``register()`` raised or its hooks could not be read. The loader
records each start-stage failure in ``$KAIROX_HOME/state/plugin-loads.json`` (by
root, with the bundle's digest) and forgets it when the bundle next loads; a
listing shows such a bundle as ``failed`` while its files are unchanged.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from kairox.files import atomic_write_text, locked

from .trust import bundle_digest

__all__ = ["LoadState"]

logger = logging.getLogger(__name__)

#: a hostile or broken file is read this far, no further
MAX_BYTES = 4 * 1024 * 1024
MAX_ENTRIES = 1000
MAX_REASON = 2000


class LoadState:
    def __init__(self, home: Path, workspace: Path | None = None) -> None:
        self.path = home / "state" / "plugin-loads.json"
        self.workspace = workspace

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            with open(self.path, "rb") as fh:
                data = json.loads(fh.read(MAX_BYTES + 1)[:MAX_BYTES] or b"{}")
        except (OSError, ValueError, RecursionError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, dict)}

    def _digest(self, root: Path) -> str:
        within = self.workspace if self.workspace and str(root).startswith(str(self.workspace) + os.sep) else None
        return bundle_digest(root, within=within)

    def failed(self, root: Path, reason: str) -> None:
        """Record that the bundle at ``root`` failed to load, and why."""
        self._update(str(root), {"digest": self._digest(root), "reason": reason[:MAX_REASON], "at": time.time()})

    def loaded(self, root: Path) -> None:
        """Forget a failure of the bundle at ``root`` (it loaded)."""
        if str(root) in self._read():
            self._update(str(root), None)

    def last_failure(self, root: Path) -> str | None:
        """Why the bundle at ``root`` failed its last load, if it did and is unchanged since."""
        entry = self._read().get(str(root))
        if entry is None or not isinstance(entry.get("reason"), str):
            return None
        try:
            if entry.get("digest") != self._digest(root):
                return None  # edited since: it may load now
        except OSError:
            return None
        at = entry.get("at")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if isinstance(at, (int, float)) else "?"
        return f"its last load failed ({when}): {entry['reason']}"

    def _update(self, key: str, entry: dict[str, Any] | None) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with locked(self.path.with_name(self.path.name + ".lock")):
                data = self._read()
                if entry is None:
                    data.pop(key, None)
                else:
                    data[key] = entry
                    while len(data) > MAX_ENTRIES:  # the oldest go first
                        data.pop(min(data, key=lambda k: _at(data[k])))
                atomic_write_text(self.path, json.dumps(data, indent=1, sort_keys=True) + "\n")
        except OSError as exc:
            logger.warning("could not record the plugin load state in %s: %s", self.path, exc)


def _at(entry: dict[str, Any]) -> float:
    at = entry.get("at")
    return float(at) if isinstance(at, (int, float)) else 0.0

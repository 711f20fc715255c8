"""Where the user's kairox files live (a module of its own, so finding it imports nothing heavy)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["user_home"]


def user_home(env: Mapping[str, str] | None = None) -> Path:
    """``$KAIROX_HOME``, else ``~/.kairox``."""
    env = os.environ if env is None else env
    home = env.get("KAIROX_HOME")
    return Path(home).expanduser() if home else Path.home() / ".kairox"

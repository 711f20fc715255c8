"""Helpers of the skills tests, imported as ``from skills_helpers import ...`` (pytest puts
this directory on ``sys.path``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["write"]


def write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (UTF-8), creating its directories; return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path

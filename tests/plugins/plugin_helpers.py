"""Helpers shared by the plugin tests (imported as ``from plugin_helpers import ...``)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "plugins"


def copy_fixture(name: str, dest: Path) -> Path:
    """Copy ``tests/fixtures/plugins/<name>`` to ``dest`` and return it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(FIXTURES / name, dest)
    return dest


def write_plugin(root: Path, files: dict[str, Any]) -> Path:
    """Write a plugin directory from ``{relative path: text or JSON-able value}``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return root


def write_executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


def real(path: Path) -> Path:
    return Path(os.path.realpath(path))

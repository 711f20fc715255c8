"""Names and paths from catalog documents that end up on disk, and the checks that keep them there.

An entry's name becomes a directory (``plugins/NAME``, ``skills/NAME``) and a
``[mcp_servers.NAME]`` key, so it follows the plugin-name rule of
kairox-manifests (``kairox_manifests.formats._common.NAME_RE``): a letter or
digit, then letters, digits, ``.``, ``_`` or ``-``, at most 128 characters. Such
a name is never ``.`` or ``..``, has no separator, NUL or newline, so joined
under a directory it names a child of that directory. A skill's name satisfies
the skills plugin's hard rule too (no ``:``, ``/``, ``\\`` or control characters).
Both use the kernel's ``kairox.ext.ENTRY_NAME_RE``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import Any

from kairox.ext import ENTRY_NAME_RE, describe_value
from kairox.files import is_inside

__all__ = [
    "NAME_RE",
    "NAME_RULE",
    "local_path_problem",
    "name_problem",
    "require_inside",
    "resolves_inside",
    "subpath_problem",
]

#: what an entry name may look like (the plugin-name rule of kairox-manifests); use ``fullmatch``
NAME_RE = ENTRY_NAME_RE
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"^[A-Za-z]:")

NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 128 characters"


def name_problem(value: Any) -> str | None:
    """Why ``value`` cannot be an entry name (it becomes a directory), or ``None``."""
    if not isinstance(value, str):
        return f"expected a string, got {describe_value(value)}"
    if not value.strip():
        return "an entry needs a non-empty name"
    if NAME_RE.fullmatch(value):
        return None
    return f"{describe_value(value)} is not a valid name ({NAME_RULE})"


def subpath_problem(value: str) -> str | None:
    """Why ``value`` cannot be a path inside a repository or marketplace, or ``None``.

    A subpath is relative, uses ``/``, and has no ``..`` component, NUL or other
    control character; empty means the root itself.
    """
    if _CONTROL.search(value):
        return f"{describe_value(value)} contains a control character"
    if "\\" in value:
        return f"{describe_value(value)} contains a backslash; use '/'"
    if value.startswith("/") or _DRIVE.match(value) or value.startswith("~"):
        return f"{describe_value(value)} is absolute; expected a path relative to the root"
    if ".." in PurePosixPath(value).parts:
        return f"{describe_value(value)} goes up with '..'"
    return None


def local_path_problem(value: str) -> str | None:
    """Why ``value`` cannot be a local path (a ``path`` install source), or ``None``."""
    if _CONTROL.search(value):
        return f"{describe_value(value)} contains a control character"
    return None


def resolves_inside(path: Path, root: Path) -> bool:
    """``path`` is ``root`` or below it once both are resolved (symbolic links followed)."""
    try:
        return is_inside(Path(os.path.realpath(path)), Path(os.path.realpath(root)))
    except (OSError, ValueError):
        return False


def require_inside(path: Path, root: Path, what: str) -> None:
    """Raise :class:`OSError` unless ``path`` resolves strictly below ``root`` (both resolved)."""
    real_path, real_root = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    if real_path == real_root or not is_inside(real_path, real_root):
        raise OSError(f"refusing {what} {path}: it resolves to {real_path}, outside {real_root}")

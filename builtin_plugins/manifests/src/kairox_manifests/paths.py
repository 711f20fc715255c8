"""Paths inside a plugin: relative, resolved (symlinks too), never outside the root."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .errors import ManifestError

__all__ = ["ROOT_VARIABLES", "expand_root", "is_inside", "resolve_inside"]

#: variables that expand to the plugin's root directory
ROOT_VARIABLES = ("KAIROX_PLUGIN_ROOT", "CLAUDE_PLUGIN_ROOT", "PLUGIN_ROOT")
_ROOT_VAR = re.compile(r"\$\{(" + "|".join(ROOT_VARIABLES) + r")\}")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def is_inside(path: Path, root: Path) -> bool:
    """``path`` is ``root`` or below it (both already resolved)."""
    try:
        return os.path.commonpath([str(path), str(root)]) == str(root)
    except ValueError:
        return False


def resolve_inside(
    root: Path,
    value: Any,
    *,
    file: str | None,
    path: str,
    require_dot_slash: bool = False,
    allow_root: bool = True,
) -> Path:
    """Resolve a manifest path against the plugin root.

    Raises :class:`ManifestError` (with ``file`` and field ``path``) when the
    value is not a non-empty string, is absolute, or resolves (following
    symlinks) outside ``root``.
    """
    if not isinstance(value, str):
        raise ManifestError(f"expected a relative path (a string), got {_describe(value)}", file=file, path=path)
    if not value or "\x00" in value:
        raise ManifestError("expected a non-empty relative path", file=file, path=path)
    if value.startswith(("/", "\\", "~")) or _DRIVE.match(value) or os.path.isabs(value):
        raise ManifestError(
            f"{value!r} is absolute; paths are relative to the plugin root (./...)", file=file, path=path
        )
    if require_dot_slash and not value.startswith("./"):
        raise ManifestError(f"{value!r} must start with ./ (relative to the plugin root)", file=file, path=path)
    real_root = Path(os.path.realpath(root))
    try:
        target = Path(os.path.realpath(real_root / value))
    except (OSError, ValueError) as exc:
        raise ManifestError(f"cannot resolve {value!r}: {exc}", file=file, path=path) from None
    if not is_inside(target, real_root):
        raise ManifestError(f"{value!r} resolves outside the plugin root", file=file, path=path)
    if not allow_root and target == real_root:
        raise ManifestError(f"{value!r} is the plugin root itself", file=file, path=path)
    return target


def expand_root(value: Any, root: Path) -> Any:
    """Replace ``${KAIROX_PLUGIN_ROOT}``, ``${CLAUDE_PLUGIN_ROOT}`` and (Codex's) ``${PLUGIN_ROOT}`` in every string of ``value``."""
    if isinstance(value, str):
        if "${" not in value:
            return value
        return _ROOT_VAR.sub(lambda _m: str(root), value)
    if isinstance(value, list):
        return [expand_root(v, root) for v in value]
    if isinstance(value, dict):
        return {k: expand_root(v, root) for k, v in value.items()}
    return value


def _describe(value: Any) -> str:
    from kairox import describe_value

    return describe_value(value)

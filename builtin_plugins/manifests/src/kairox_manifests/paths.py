"""Paths inside a plugin: relative, resolved (symlinks too), never outside the root.

A bundle is its folder: everything it contains is read through one contained root
(:class:`kairox.files.Root`, :func:`bundle_root`), so a link from a bundle's file to
anywhere outside its folder, the rest of the workspace included, is refused."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kairox.files import Entry, Refused, Root

from .errors import ManifestError, Problem

__all__ = [
    "BUNDLE_LABEL",
    "ROOT_VARIABLES",
    "bundle_root",
    "expand_root",
    "is_inside",
    "refusal",
    "resolve_inside",
]

#: what a bundle's root is called in a refusal ("... outside the plugin root; not read")
BUNDLE_LABEL = "the plugin root"

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


def bundle_root(root: Path | Root, *, also: Iterable[str | os.PathLike[str]] = ()) -> Root:
    """The contained root of the bundle at ``root`` (a :class:`Root` is returned as it is);
    ``also`` are the folders the user's own ``[files] readable_roots`` lets links reach."""
    if isinstance(root, Root):
        return root
    return Root(root, label=BUNDLE_LABEL, also=also)


def refusal(refused: Refused | Entry, component: str = "") -> Problem:
    """A refused file of a bundle (a :class:`Refused`, or a walk's refused :class:`Entry`) as a
    problem of that bundle, where the item would have been: the file, the reason, and the
    ``component`` it would have been (``skill``: the skill registry lists it among its errors too)."""
    if isinstance(refused, Entry):
        return Problem(refused.refused, file=refused.text, severity="error", kind="refused", component=component)
    return Problem(refused.reason, file=refused.file, severity="error", kind="refused", component=component)


def resolve_inside(
    root: Path | Root,
    value: Any,
    *,
    file: str | None,
    path: str,
    require_dot_slash: bool = False,
    allow_root: bool = True,
) -> Path:
    """Resolve a manifest path against the plugin root (a path, or the bundle's :class:`Root`).

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
    contained = bundle_root(root)
    try:
        target = contained.locate(contained.real / value)
    except Refused as exc:
        raise ManifestError(f"{value!r}: {exc.reason}", file=file, path=path) from None
    if not allow_root and target == contained.real:
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
    from kairox.ext import describe_value

    return describe_value(value)

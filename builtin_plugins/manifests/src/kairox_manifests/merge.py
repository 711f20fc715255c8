"""One bundle from a directory that several manifest formats read.

Real plugins ship for more than one tool: ``.claude-plugin/plugin.json`` next to
``.codex-plugin/plugin.json`` (and sometimes ``.kairox-plugin/``). Each format
reads its own manifest; :func:`merge_manifests` makes one
:class:`~kairox_manifests.model.BundleManifest` of them:

- identity and metadata (name, version, description, homepage, publisher, trust)
  come from the first manifest in resolution order; where a later one says
  something else, a warning (``kind="manifest-conflict"``) names the field, both
  values and both files;
- ``defaultEnabled`` comes from the first manifest that declares it (only the kairox
  and Claude formats have it), with a warning where a later one says otherwise;
- permissions and compatibility come from the first manifest that declares them
  (only the kairox and Philont formats have them), code from the first that has it;
- contributions are the union: the first manifest's, then each later one's that
  is new. The same file reached by two formats (both read ``hooks/hooks.json`` and
  ``.mcp.json``) is one contribution; a hook of another file under a taken name is
  renamed; a skill, command, agent or server under a taken name from another file
  is left out with a warning that names both files;
- the warnings of every manifest, each once (a hook event kairox has no
  equivalent for is reported once per bundle).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from .errors import Problem
from .model import BundleManifest, Contribution, Trust

__all__ = ["CONFLICT", "merge_manifests"]

#: the ``kind`` of the warning two manifests that disagree give
CONFLICT = "manifest-conflict"
#: identity fields compared between manifests: (label, attribute)
_COMPARED = (
    ("name", "name"),
    ("version", "version"),
    ("description", "description"),
    ("homepage", "homepage"),
)


def _label(m: BundleManifest) -> str:
    return str(m.manifest_file) if m.manifest_file is not None else f"{m.root} ({m.format})"


def _same(a: Contribution, b: Contribution) -> bool:
    """The same thing reached twice (the same file, or an equal server or hook). A server of
    one file that two formats read in their own schemas (Codex's and ``.mcp.json``) is one
    server too: the first format's reading is used."""
    if a.kind != b.kind or a.source != b.source:
        return False
    return a.config == b.config or (a.kind == "mcp_server" and a.schema != b.schema)


def _conflict(field: str, first: BundleManifest, other: BundleManifest, a: Any, b: Any) -> Problem:
    return Problem(
        f"the manifests disagree on {field}: {a!r} here, {b!r} in {_label(first)} ({first.format}), "
        f"which is used (the first in resolution order)",
        file=str(other.manifest_file) if other.manifest_file else None,
        path=field,
        kind=CONFLICT,
    )


def _dedupe(problems: Sequence[Problem]) -> list[Problem]:
    out: list[Problem] = []
    seen: set[Any] = set()
    for p in problems:
        key: Any = p.kind if p.kind.startswith("hook-event:") else p
        if key in seen:
            continue
        seen.add(key)
        out.append(p)
    return out


def merge_manifests(manifests: Sequence[BundleManifest]) -> BundleManifest:
    """One manifest from the manifests of one directory, in resolution order (see the module)."""
    if not manifests:
        raise ValueError("merge_manifests needs at least one manifest")
    first = manifests[0]
    if len(manifests) == 1:
        return first
    problems: list[Problem] = list(first.problems)
    contributions: list[Contribution] = list(first.contributions)
    by_key: dict[str, Contribution] = {c.key: c for c in contributions}
    metadata = dict(first.metadata)
    permissions, compatibility, code = first.permissions, first.compatibility, first.code
    publisher, trust = first.publisher, first.trust
    dependencies = {d.name: d for d in first.dependencies}
    bin_dir = first.bin_dir
    user_config = first.user_config
    default_enabled = first.default_enabled
    for other in manifests[1:]:
        problems.extend(other.problems)
        for label, attr in _COMPARED:
            a, b = getattr(first, attr), getattr(other, attr)
            if a and b and a != b:
                problems.append(_conflict(label, first, other, b, a))
        if publisher is None:
            publisher = other.publisher
        elif other.publisher is not None and other.publisher.name and other.publisher.name != publisher.name:
            problems.append(_conflict("author", first, other, other.publisher.name, publisher.name))
        if trust is Trust.UNKNOWN:
            trust = other.trust
        if default_enabled is None:  # a format without the field (Agent Plugins, Codex) says nothing
            default_enabled = other.default_enabled
        elif other.default_enabled is not None and other.default_enabled != default_enabled:
            problems.append(_conflict("defaultEnabled", first, other, other.default_enabled, default_enabled))
        if permissions is None:
            permissions = other.permissions
        elif other.permissions is not None and other.permissions != permissions:
            problems.append(_conflict("permissions", first, other, "(other permissions)", "(its permissions)"))
        if compatibility == type(compatibility)():
            compatibility = other.compatibility
        if code is None:
            code = other.code
        if bin_dir is None:
            bin_dir = other.bin_dir
        for dep in other.dependencies:  # every manifest's needs hold (the first's range wins a clash)
            dependencies.setdefault(dep.name, dep)
        if not user_config:  # only Claude's manifest has userConfig, wherever it comes in the order
            user_config = other.user_config
        for key, value in other.metadata.items():
            metadata.setdefault(key, value)
        for c in other.contributions:
            taken = by_key.get(c.key)
            if taken is None:
                contributions.append(c)
                by_key[c.key] = c
            elif _same(taken, c):
                continue
            elif c.kind == "hook":
                name, n = c.name, 2
                while f"hook/{name}" in by_key:
                    name = f"{c.name}-{n}"
                    n += 1
                renamed = attrs.evolve(c, name=name)
                contributions.append(renamed)
                by_key[renamed.key] = renamed
            else:
                problems.append(
                    Problem(
                        f"a second {c.kind} named {c.name!r} ({c.source}) is ignored: {taken.source} "
                        f"({first.format}) is used",
                        file=str(other.manifest_file) if other.manifest_file else None,
                        kind=CONFLICT,
                    )
                )
    formats = tuple(dict.fromkeys(f for m in manifests for f in m.all_formats))
    return attrs.evolve(
        first,
        publisher=publisher,
        trust=trust,
        permissions=permissions,
        compatibility=compatibility,
        code=code,
        user_config=user_config,
        metadata=metadata,
        dependencies=tuple(dependencies.values()),
        bin_dir=bin_dir,
        default_enabled=default_enabled,
        contributions=tuple(contributions),
        problems=tuple(_dedupe(problems)),
        formats=formats,
    )

"""Shared metadata schemas: publisher/author, permissions, compatibility."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import attrs

from kairox.ext import ApprovalPolicy, Permissions, SandboxPolicy, describe_value
from kairox.files import Refused, Root

from .._schema import join, parse_document, read_json
from ..compat import KNOWN_PLATFORMS, parse_range, parse_requirement
from ..errors import ManifestError, Problem
from ..model import BundleManifest, Compatibility, Publisher
from ..paths import bundle_root
from ._common import Collector, check_name

__all__ = [
    "BaseFormat",
    "RawCompatibility",
    "RawPermissions",
    "RawPerson",
    "compatibility_from",
    "fields_set",
    "manifest_present",
    "permissions_from",
    "person_from",
]


def _split_person(value: str) -> tuple[str, str, str] | None:
    """``"Name <email> (url)"`` -> its parts (``<email>`` and ``(url)`` optional), or ``None``
    when something else follows them. Read once, left to right: the pattern this replaces
    (a lazy name, then optional parts each between blanks) took seconds on a 200-character
    author of blanks, a manifest read before anything is trusted."""
    rest = value.strip()
    cut = min((i for i in (rest.find("<"), rest.find("(")) if i >= 0), default=len(rest))
    name, rest = rest[:cut].strip(), rest[cut:]
    email = url = ""
    if rest.startswith("<"):
        end = rest.find(">")
        if end < 0:
            return None
        email, rest = rest[1:end], rest[end + 1 :].lstrip()
    if rest.startswith("("):
        end = rest.find(")")
        if end < 0:
            return None
        url, rest = rest[1:end], rest[end + 1 :].lstrip()
    return (name, email, url) if not rest else None


@attrs.frozen
class RawPerson:
    name: str = ""
    email: Optional[str] = None
    url: Optional[str] = None


@attrs.frozen
class RawPermissions:
    approvalPolicy: Optional[ApprovalPolicy] = None
    sandboxPolicy: Optional[SandboxPolicy] = None
    tools: Optional[list[str]] = None


@attrs.frozen
class RawCompatibility:
    kairoxVersion: Optional[str] = None
    platforms: list[str] = attrs.field(factory=list)
    requires: list[str] = attrs.field(factory=list)


def person_from(value: Any, *, file: str | None, path: str, problems: list[Problem]) -> Publisher | None:
    """A publisher/author: ``"Name <email> (url)"`` or ``{name, email, url}``."""
    if value is None:
        return None
    if isinstance(value, str):
        parts = _split_person(value)
        if parts is None or not parts[0]:
            return Publisher(name=value.strip())
        name, email, url = parts
        return Publisher(name=name, email=email or None, url=url or None)
    if isinstance(value, dict):
        raw = parse_document(value, RawPerson, file=file, path=path, problems=problems)
        return Publisher(name=raw.name, email=raw.email, url=raw.url)
    raise ManifestError(
        f"expected a name or a table {{name, email, url}}, got {describe_value(value)}", file=file, path=path
    )


def permissions_from(raw: RawPermissions | None) -> Permissions | None:
    if raw is None:
        return None
    return Permissions(
        approval=raw.approvalPolicy,
        sandbox=raw.sandboxPolicy,
        tools=tuple(raw.tools) if raw.tools is not None else None,
    )


def compatibility_from(
    raw: RawCompatibility | None, *, file: str | None, path: str, problems: list[Problem]
) -> Compatibility:
    if raw is None:
        return Compatibility()
    if raw.kairoxVersion is not None:
        try:
            parse_range(raw.kairoxVersion)
        except ValueError as exc:
            raise ManifestError(str(exc), file=file, path=join(path, "kairoxVersion")) from None
    for i, platform in enumerate(raw.platforms):
        if platform.lower() not in KNOWN_PLATFORMS:
            problems.append(
                Problem(
                    f"unknown platform {platform!r} (known: {', '.join(sorted(KNOWN_PLATFORMS))})",
                    file=file,
                    path=join(join(path, "platforms"), i),
                )
            )
    requires = []
    for i, text in enumerate(raw.requires):
        try:
            requires.append(parse_requirement(text))
        except ValueError as exc:
            raise ManifestError(str(exc), file=file, path=join(join(path, "requires"), i)) from None
    return Compatibility(kairox_version=raw.kairoxVersion, platforms=tuple(raw.platforms), requires=tuple(requires))


def fields_set(doc: Any, *names: str) -> dict[str, Any]:
    """The fields ``names`` of a manifest document that are set (neither ``None`` nor an empty
    string, list or table), copied, for :attr:`BundleManifest.metadata`."""
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(doc, name)
        if value is None or (isinstance(value, (str, list, dict)) and not value):
            continue
        out[name] = list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value
    return out


def manifest_present(reader: Root, file: Path) -> bool:
    """Whether the bundle has the manifest ``file``: ``False`` when there is none (or a folder
    of that name); a manifest that leads outside the bundle or is not a regular file is a
    :class:`ManifestError` naming it (the bundle is shown failed, never read from elsewhere)."""
    try:
        kind = reader.kind(file)
    except Refused as exc:
        raise ManifestError(exc.reason, file=str(file)) from None
    if kind == "other":
        raise ManifestError("not a regular file; not read", file=str(file))
    return kind == "file"


class BaseFormat:
    """A manifest format that reads ``<root>/<manifest>``.

    ``probe(root, reader=...)`` returns ``None`` when the file is absent, a
    :class:`BundleManifest` when it parses, and raises
    :class:`~kairox_manifests.ManifestError` when it is there but wrong. ``reader`` is
    the bundle's contained root (:class:`kairox.files.Root`, made by discovery with the
    user's ``[files] readable_roots``; without one, :func:`~kairox_manifests.paths.bundle_root`):
    every file of the bundle is read through it, so nothing a link leads to outside the
    bundle's folder is read.
    """

    name = ""
    priority = 0
    manifest = ""

    def manifest_file(self, root: Path) -> Path:
        return root / self.manifest

    def probe(self, root: Path, *, reader: Root | None = None) -> BundleManifest | None:
        contained = bundle_root(root) if reader is None else reader
        file = self.manifest_file(contained.path)
        if not manifest_present(contained, file):
            return None
        return self.parse(contained, read_json(file, contained), file)

    #: the attrs class the manifest file is structured into (leniently: odd fields are warnings)
    document: Any = None

    def parse(self, root: Path | Root, data: Any, file: Path) -> BundleManifest:
        """The manifest of the plugin at ``root`` (its folder, or its contained :class:`Root`)
        from ``data``, the JSON of ``file``: structured as :attr:`document`, named by
        :meth:`plugin_name`, and read by :meth:`read`."""
        contained = bundle_root(root)
        problems: list[Problem] = []
        doc = parse_document(data, self.document, file=str(file), problems=problems)
        name = self.plugin_name(contained.real, doc, str(file))
        out = Collector(problems)
        return self.manifest_of(name, contained.real, file, out, **self.read(contained, file, doc, name, out))

    def plugin_name(self, root: Path, doc: Any, file: str) -> str:
        """The plugin's name: the document's ``name``, checked."""
        return check_name(doc.name, file=file, path="name")

    def read(self, root: Root, file: Path, doc: Any, name: str, out: Collector) -> dict[str, Any]:
        """Read the plugin ``name`` from ``doc``: ``out`` collects its contributions and the
        warnings found reading it; returns the other :class:`BundleManifest` fields. ``root``
        is the bundle's contained root: read every file it names through it."""
        raise NotImplementedError

    def manifest_of(self, name: str, root: Path, file: Path | None, out: Collector, **fields: Any) -> BundleManifest:
        """The manifest of the plugin ``name`` at ``root`` in this format, read from ``file``:
        what ``out`` collected (contributions, and the warnings found reading it) and ``fields``
        (the other :class:`BundleManifest` fields)."""
        return BundleManifest(
            name=name,
            format=self.name,
            root=root,
            manifest_file=file,
            contributions=tuple(out.items),
            problems=tuple(out.problems),
            **fields,
        )

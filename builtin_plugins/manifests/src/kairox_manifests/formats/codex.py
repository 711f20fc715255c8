"""Codex plugins: ``.codex-plugin/plugin.json``.

``name`` falls back to the directory name. ``skills``, ``mcpServers`` and
``apps`` are paths that must start with ``./`` and may not contain ``..``;
as in Codex, a bad path is a warning and the field is ignored.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Optional

import attrs

from .._schema import parse_document
from ..errors import ManifestError, Problem
from ..model import BundleManifest
from ..paths import resolve_inside
from ._common import Collector, add_components, check_name, mcp_servers
from ._meta import BaseFormat, fields_set, person_from

__all__ = ["CodexFormat", "CodexManifestDoc"]


@attrs.frozen
class CodexManifestDoc:
    """The fields of ``.codex-plugin/plugin.json`` (plus the metadata real plugins carry)."""

    name: str = ""
    version: Optional[str] = None
    description: Optional[str] = None
    author: Any = None
    homepage: Optional[str] = None
    repository: Optional[str] = None
    license: Optional[str] = None
    keywords: list[str] = attrs.field(factory=list)
    skills: Optional[str] = None
    mcpServers: Optional[str] = None
    apps: Optional[str] = None
    interface: Optional[dict[str, Any]] = None


def codex_path(root: Path, value: str | None, field: str, file: str, problems: list[Problem]) -> Path | None:
    """Codex's path rule: ``./``-relative, no ``..``, inside the root; otherwise warn and ignore."""
    if value is None or value == "":
        return None
    reason = ""
    if not value.startswith("./"):
        reason = "path must start with ./ (relative to the plugin root)"
    elif value.rstrip("/") == ".":
        reason = "path must not be the plugin root itself"
    elif ".." in PurePosixPath(value).parts:
        reason = "path must not contain '..'"
    if not reason:
        try:
            return resolve_inside(root, value, file=file, path=field, allow_root=False)
        except ManifestError as exc:
            reason = exc.message
    problems.append(Problem(f"{reason}; {field} ignored", file=file, path=field))
    return None


class CodexFormat(BaseFormat):
    name = "codex"
    priority = 20
    manifest = ".codex-plugin/plugin.json"

    def parse(self, root: Path, data: Any, file: Path) -> BundleManifest:
        f = str(file)
        problems: list[Problem] = []
        doc = parse_document(data, CodexManifestDoc, file=f, problems=problems)
        raw_name = doc.name.strip()
        name = check_name(raw_name or root.name, file=f, path="name" if raw_name else "name (directory name)")
        out = Collector(problems)
        skills = codex_path(root, doc.skills, "skills", f, problems)
        if skills is not None:
            add_components(root, "skill", [(doc.skills or "", "skills")], (), out, problems, file=f)
        elif doc.skills is None:
            add_components(root, "skill", [], ("skills",), out, problems, file=f)
        mcp = codex_path(root, doc.mcpServers, "mcpServers", f, problems)
        if mcp is not None:
            mcp_servers(root, doc.mcpServers, out, file=f, path="mcpServers")
        elif doc.mcpServers is None and (root / ".mcp.json").is_file():
            mcp_servers(root, "./.mcp.json", out, file=f, path="(.mcp.json)")
        apps = codex_path(root, doc.apps, "apps", f, problems)
        metadata = fields_set(doc, "repository", "license", "keywords", "interface")
        if apps is not None:
            metadata["apps"] = str(apps)
        description = doc.description
        if not description and doc.interface and isinstance(doc.interface.get("shortDescription"), str):
            description = doc.interface["shortDescription"]
        return self.manifest_of(
            name,
            root,
            file,
            out,
            version=(doc.version or "").strip() or None,
            description=description or "",
            homepage=doc.homepage,
            publisher=person_from(doc.author, file=f, path="author", problems=problems),
            metadata=metadata,
        )

"""Codex plugins: ``.codex-plugin/plugin.json``.

What Codex's own manifest reader takes (``codex-rs/core-plugins``):

- ``name`` (falls back to the directory name), ``version``, ``description``,
  ``keywords``, ``interface`` (kept as metadata), ``apps`` (a path);
- ``skills``: a path or a list of paths; absent: ``skills/``;
- ``mcpServers``: a path to a JSON file (``{"mcpServers": {...}}`` or a bare table of
  servers) or an inline table of servers; absent: ``.mcp.json``. Each server is read with
  Codex's server schema (``[mcp_servers.NAME]`` of ``config.toml``; the mapping is
  :func:`kairox_mcp.codex_server`'s): a key kairox does not take over is a warning naming
  the file and field, a relative ``cwd`` is the plugin root's (as Codex resolves it) and
  may not leave it;
- ``hooks``: a path, a list of paths, an inline hooks table (``{"hooks": {Event:
  [...]}}``, Claude's shape) or a list of those; absent: ``hooks/hooks.json``.

Paths must start with ``./`` and may not contain ``..``; as in Codex, a bad path is
a warning and that path is ignored, and when nothing usable is declared the
default location is read. A value of the wrong type (a number for ``skills``) is
an error naming the field, as in every kairox format.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any, Optional

import attrs

from kairox.errors import ConfigError
from kairox.ext import describe_value
from kairox.files import Root

from .._schema import join, read_json
from ..errors import ManifestError, Problem
from ..model import Contribution
from ..paths import resolve_inside
from ._common import Collector, add_components, check_name, claude_hooks, default_inside, mcp_servers, path_list
from ._meta import BaseFormat, fields_set, person_from

__all__ = ["CodexFormat", "CodexManifestDoc"]

DEFAULT_HOOKS = "hooks/hooks.json"


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
    skills: Any = None
    mcpServers: Any = None
    apps: Optional[str] = None
    hooks: Any = None
    interface: Optional[dict[str, Any]] = None


def codex_path(root: Root, value: str | None, field: str, file: str, problems: list[Problem]) -> Path | None:
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


def _hooks(root: Root, value: Any, out: Collector, problems: list[Problem], file: str) -> None:
    """``hooks``: a path, a list of paths, an inline table, or a list of tables; absent
    (or nothing usable declared): ``hooks/hooks.json``."""
    used = False
    if value is not None:
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            ipath = join("hooks", i) if isinstance(value, list) else "hooks"
            if isinstance(item, str):
                src = codex_path(root, item, ipath, file, problems)
                if src is None:
                    continue
                if root.kind(src) in ("missing", "dir"):
                    problems.append(Problem(f"{item!r} does not exist; no hooks from it", file=file, path=ipath))
                    continue
                used = True
                claude_hooks(root, read_json(src, root), out, problems, file=str(src), path="")
            elif isinstance(item, dict):
                used = True
                claude_hooks(root, item, out, problems, file=file, path=ipath)
            else:
                raise ManifestError(
                    f"expected a path to a hooks file or a hooks table, got {describe_value(item)}",
                    file=file,
                    path=ipath,
                )
    if not used:
        src = default_inside(root, DEFAULT_HOOKS, problems, want="file")
        if src is not None:
            claude_hooks(root, read_json(src, root), out, problems, file=str(src), path="")


def _server_reader(root: Root, problems: list[Problem]) -> Any:
    """What reads one server entry of a Codex plugin into its contribution (see the module)."""
    try:
        from kairox_mcp import codex_server
    except ImportError:  # no MCP client: the entry stays as written, and routing says why it does not start
        return None

    def read(name: str, entry: Any, source: Path, file: str | None, path: str) -> Contribution:
        if not isinstance(entry, dict):
            raise ManifestError(f"expected a server table, got {describe_value(entry)}", file=file, path=path)
        try:
            mapped = codex_server(entry, file=file or "", path=path)
        except ConfigError as exc:
            raise ManifestError(exc.message, file=file, path=exc.path) from None
        problems.extend(Problem(p.message, file=file, path=p.path) for p in mapped.problems)
        fields = dict(mapped.fields)
        cwd = fields.get("cwd")
        if isinstance(cwd, str) and not os.path.isabs(cwd):
            fields["cwd"] = str(resolve_inside(root, cwd, file=file, path=join(path, "cwd")))
        return Contribution("mcp_server", name, source, fields, schema="kairox")

    return read


class CodexFormat(BaseFormat):
    name = "codex"
    priority = 20
    manifest = ".codex-plugin/plugin.json"

    document = CodexManifestDoc

    def plugin_name(self, root: Path, doc: Any, file: str) -> str:
        """The manifest's ``name``, else the directory's."""
        raw_name = doc.name.strip()
        return check_name(raw_name or root.name, file=file, path="name" if raw_name else "name (directory name)")

    def read(self, root: Root, file: Path, doc: Any, name: str, out: Collector) -> dict[str, Any]:
        f, problems = str(file), out.problems
        # skills: the declared paths that are usable, else skills/
        declared = []
        if doc.skills is not None:
            for value, fpath in path_list(doc.skills, file=f, path="skills"):
                if codex_path(root, value, fpath, f, problems) is not None:
                    declared.append((value, fpath))
        add_components(root, "skill", declared, () if declared else ("skills",), out, problems, file=f)
        # MCP servers: an inline table, or a path; else .mcp.json
        mcp = doc.mcpServers
        reader = _server_reader(root, problems)
        if isinstance(mcp, dict):
            mcp_servers(root, mcp, out, file=f, path="mcpServers", entry_reader=reader)
        elif mcp is not None and not isinstance(mcp, str):
            raise ManifestError(
                f"expected a path to a JSON file or a table of servers, got {describe_value(mcp)}",
                file=f,
                path="mcpServers",
            )
        elif isinstance(mcp, str) and codex_path(root, mcp, "mcpServers", f, problems) is not None:
            mcp_servers(root, mcp, out, file=f, path="mcpServers", entry_reader=reader)
        elif default_inside(root, ".mcp.json", problems, want="file") is not None:
            mcp_servers(root, "./.mcp.json", out, file=f, path="(.mcp.json)", entry_reader=reader)
        _hooks(root, doc.hooks, out, problems, f)
        apps = codex_path(root, doc.apps, "apps", f, problems)
        metadata = fields_set(doc, "repository", "license", "keywords", "interface")
        if apps is not None:
            metadata["apps"] = str(apps)
        description = doc.description
        if not description and doc.interface and isinstance(doc.interface.get("shortDescription"), str):
            description = doc.interface["shortDescription"]
        return dict(
            version=(doc.version or "").strip() or None,
            description=description or "",
            homepage=doc.homepage,
            publisher=person_from(doc.author, file=f, path="author", problems=problems),
            metadata=metadata,
        )

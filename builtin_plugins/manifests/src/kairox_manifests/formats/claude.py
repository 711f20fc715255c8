"""Claude Code plugins: ``.claude-plugin/plugin.json``, and the manifest-less default layout.

Only ``name`` is required. Components sit in default locations (``skills/``,
``commands/``, ``agents/``, ``hooks/hooks.json``, ``.mcp.json``, ``.lsp.json``,
``output-styles/``); paths declared in the manifest add to them. Hook events
map onto kairox's (``PreToolUse`` -> ``pre_tool_call``...); the others are
reported and skipped.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Optional

import attrs

from kairox.files import Refused, Root

from .._schema import join, read_json
from ..dependencies import parse_dependencies
from ..errors import ManifestError, Problem
from ..model import BundleManifest
from ..paths import bundle_root, resolve_inside
from ..userconfig import parse_user_config
from ._common import (
    Collector,
    add_components,
    check_name,
    claude_hooks,
    default_inside,
    lsp_servers,
    mcp_servers,
    path_list,
)
from ._meta import BaseFormat, fields_set, person_from

__all__ = ["ClaudeDefaultLayout", "ClaudeFormat", "ClaudeManifestDoc"]

KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*\Z")
DEFAULT_DIRS = {"skill": "skills", "command": "commands", "agent": "agents", "output_style": "output-styles"}
DEFAULT_HOOKS = "hooks/hooks.json"
DEFAULT_MONITORS = "monitors/monitors.json"


@attrs.frozen
class ClaudeManifestDoc:
    """The fields of ``.claude-plugin/plugin.json``."""

    name: str
    version: Optional[str] = None
    description: Optional[str] = None
    displayName: Optional[str] = None
    author: Any = None
    homepage: Optional[str] = None
    repository: Any = None
    license: Optional[str] = None
    keywords: list[str] = attrs.field(factory=list)
    metadata: Optional[dict[str, Any]] = None
    defaultEnabled: Optional[bool] = None
    commands: Any = None
    agents: Any = None
    skills: Any = None
    hooks: Any = None
    mcpServers: Any = None
    lspServers: Any = None
    outputStyles: Any = None
    dependencies: Any = None
    monitors: Any = None
    channels: Any = None
    userConfig: Any = None


def _declared_hooks(root: Root, value: Any, out: Collector, problems: list[Problem], *, file: str) -> set[Path]:
    """Hooks from ``plugin.json``: a path, an inline table, or a list of either. Returns the files read."""
    seen: set[Path] = set()
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        ipath = join("hooks", i) if isinstance(value, list) else "hooks"
        if isinstance(item, str):
            src = resolve_inside(root, item, file=file, path=ipath)
            if root.kind(src) in ("missing", "dir"):
                problems.append(Problem(f"{item!r} does not exist; no hooks from it", file=file, path=ipath))
                continue
            seen.add(src)
            claude_hooks(root, read_json(src, root), out, problems, file=str(src), path="")
        elif isinstance(item, dict):
            claude_hooks(root, item, out, problems, file=file, path=ipath)
        else:
            from kairox.ext import describe_value

            raise ManifestError(
                f"expected a path to a hooks file or a hooks table, got {describe_value(item)}", file=file, path=ipath
            )
    return seen


def _components(root: Root, doc: ClaudeManifestDoc | None, file: str | None, out: Collector) -> None:
    problems = out.problems
    for kind, default in DEFAULT_DIRS.items():
        field = {"skill": "skills", "command": "commands", "agent": "agents", "output_style": "outputStyles"}[kind]
        declared = path_list(getattr(doc, field), file=file, path=field) if doc else []
        add_components(root, kind, declared, (default,), out, problems, file=file)
    read: set[Path] = set()
    if doc is not None and doc.hooks is not None:
        read = _declared_hooks(root, doc.hooks, out, problems, file=file or "")
    src = default_inside(root, DEFAULT_HOOKS, problems, want="file")
    if src is not None and src not in read:
        claude_hooks(root, read_json(src, root), out, problems, file=str(src), path="")
    for field, default, load in (("mcpServers", ".mcp.json", mcp_servers), ("lspServers", ".lsp.json", lsp_servers)):
        value = getattr(doc, field) if doc else None
        declared_files: set[Path] = set()
        if value is not None:
            load(root, value, out, file=file, path=field)
            for v, p in _string_items(value, field):
                declared_files.add(resolve_inside(root, v, file=file, path=p))
        default_file = default_inside(root, default, problems, want="file")
        if default_file is not None and default_file not in declared_files:
            load(root, f"./{default}", out, file=file, path=f"({default})")


def _bin_dir(root: Root, problems: list[Problem]) -> Path | None:
    """The plugin's ``bin/`` folder (inside the bundle), first on the ``PATH`` of its own
    servers and hooks (never anyone else's)."""
    return default_inside(root, "bin", problems, want="dir")


def _unsupported(root: Root, doc: ClaudeManifestDoc | None, file: str | None, problems: list[Problem]) -> None:
    """``monitors`` and ``channels``: kairox has no session a background monitor's lines or a
    channel's messages could be pushed into, so each entry is reported, never dropped silently."""
    why = {
        "monitors": "kairox has no background monitor feeding the session; not run",
        "channels": "kairox has no message channel into the session; not connected",
    }
    for field, reason in why.items():
        value = getattr(doc, field) if doc is not None else None
        if value is None:
            continue
        entries = value if isinstance(value, list) else list(value) if isinstance(value, dict) else [value]
        for i, entry in enumerate(entries):
            path = (
                join(field, i)
                if isinstance(value, list)
                else join(field, str(entry))
                if isinstance(value, dict)
                else field
            )
            label = entry.get("name") if isinstance(entry, dict) and isinstance(entry.get("name"), str) else None
            what = f"{field[:-1]} {label!r}" if label else f"{field[:-1]}"
            problems.append(Problem(f"{what}: {reason}", file=file, path=path, kind=f"unsupported:{field}"))
    default = default_inside(root, DEFAULT_MONITORS, problems, want="file")
    if default is not None and (doc is None or doc.monitors is None):
        problems.append(Problem(f"monitors: {why['monitors']}", file=str(default), kind="unsupported:monitors"))


def _string_items(value: Any, field: str) -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(value, field)]
    if isinstance(value, list):
        return [(v, join(field, i)) for i, v in enumerate(value) if isinstance(v, str)]
    return []


class ClaudeFormat(BaseFormat):
    name = "claude"
    priority = 30
    manifest = ".claude-plugin/plugin.json"

    document = ClaudeManifestDoc

    def read(self, root: Root, file: Path, doc: Any, name: str, out: Collector) -> dict[str, Any]:
        f, problems = str(file), out.problems
        if not KEBAB.match(name):
            problems.append(Problem(f"{name!r} is not kebab-case (lowercase words joined by -)", file=f, path="name"))
        _components(root, doc, f, out)
        _unsupported(root, doc, f, problems)
        return dict(
            dependencies=parse_dependencies(doc.dependencies, file=f),
            bin_dir=_bin_dir(root, problems),
            version=doc.version,
            description=doc.description or "",
            homepage=doc.homepage,
            publisher=person_from(doc.author, file=f, path="author", problems=problems),
            default_enabled=doc.defaultEnabled,
            metadata=fields_set(doc, "displayName", "repository", "license", "metadata", "keywords"),
            user_config=parse_user_config(doc.userConfig, file=f, problems=problems),
        )


class ClaudeDefaultLayout(BaseFormat):
    """A Claude plugin without a manifest: recognised by its default component
    locations; its name is the directory's. Probed last."""

    name = "claude-layout"
    priority = 100
    #: asked only when no manifest format recognises the directory
    fallback = True

    MARKERS = ("skills", "commands", "agents", DEFAULT_HOOKS, ".mcp.json", ".lsp.json", "output-styles")

    def probe(self, root: Path, *, reader: Root | None = None) -> BundleManifest | None:
        contained = bundle_root(root) if reader is None else reader
        if not os.path.isdir(contained.real) or not any(_present(contained, m) for m in self.MARKERS):
            return None
        name = check_name(contained.real.name, file=str(contained.real), path="(directory name)")
        out = Collector([])
        _components(contained, None, None, out)
        _unsupported(contained, None, None, out.problems)
        return self.manifest_of(name, contained.real, None, out, bin_dir=_bin_dir(contained, out.problems))


def _present(root: Root, rel: str) -> bool:
    """Whether the bundle has something at ``rel``: a link leading outside counts (the
    bundle is recognised, and the refusal shown as its problem)."""
    try:
        return root.kind(rel) != "missing"
    except Refused:
        return True

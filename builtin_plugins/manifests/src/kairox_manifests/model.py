"""The normalised plugin manifest every format produces, and its flat view.

A :class:`BundleManifest` is what a manifest format's ``probe(root)`` returns:
identity, declared permissions, compatibility, trust, publisher, and one
:class:`Contribution` per thing the plugin adds (a skill, a hook, an MCP
server...). It never depends on the runtime; :class:`BundleManifestView` adds
what the loader decided (enabled, trusted, compatible, loaded) for display.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from kairox.ext import ApprovalPolicy, Permissions, SandboxPolicy, StrEnum

from .errors import Problem
from .userconfig import UserOption

__all__ = [
    "CONTRIBUTION_KINDS",
    "METADATA_FIELDS",
    "CodeEntry",
    "Compatibility",
    "Contribution",
    "Dependency",
    "HookDecl",
    "InventoryItem",
    "BundleManifest",
    "BundleManifestView",
    "Publisher",
    "Requirement",
    "Trust",
    "permissions_from_dict",
    "permissions_to_dict",
]

#: every kind of contribution, in the order inventories list them
CONTRIBUTION_KINDS = ("skill", "command", "agent", "tool", "hook", "mcp_server", "lsp_server", "output_style")
#: the descriptive fields a Claude Code, Codex and Agent Plugins ``plugin.json`` share (besides ``name``)
METADATA_FIELDS = ("version", "description", "author", "homepage", "repository", "license", "keywords")


class Trust(StrEnum):
    """How much a plugin is trusted, most first. A declared level is information,
    never permission: a workspace plugin still asks before it loads."""

    OFFICIAL = "official"
    VERIFIED = "verified"
    COMMUNITY = "community"
    UNKNOWN = "unknown"


@attrs.frozen
class Publisher:
    name: str = ""
    email: str | None = None
    url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "email": self.email, "url": self.url}


@attrs.frozen
class Requirement:
    """One ``requires`` entry: a binary on ``PATH``, optionally with a version specifier
    (``"node >=20"`` is ``Requirement("node", ">=20")``)."""

    binary: str
    spec: str = ""

    def __str__(self) -> str:
        return f"{self.binary} {self.spec}".strip()


@attrs.frozen
class Compatibility:
    kairox_version: str | None = None
    platforms: tuple[str, ...] = ()
    requires: tuple[Requirement, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kairoxVersion": self.kairox_version,
            "platforms": list(self.platforms),
            "requires": [str(r) for r in self.requires],
        }


@attrs.frozen
class Dependency:
    """Another plugin this one needs (Claude's ``dependencies``): its ``name``, and
    optionally an npm-style ``version`` range (``~2.1.0``) and the ``marketplace`` it
    comes from (which kairox does not check: it resolves among the plugins it found)."""

    name: str
    version: str = ""
    marketplace: str | None = None

    def __str__(self) -> str:
        return f"{self.name} {self.version}".strip()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "marketplace": self.marketplace}


@attrs.frozen
class HookDecl:
    """A hook a manifest declares: run ``script`` (or the shell ``command``) on ``event``.

    ``event`` is one of kairox's lifecycle events (``pre_turn``...); ``source_event``
    is the name the manifest used (``UserPromptSubmit`` for Claude). ``matcher``
    (tool hooks only) is a regular expression over the tool's canonical id and
    exported name. ``condition`` is Claude's ``if`` (one permission rule,
    ``Bash(git commit *)``, see :mod:`kairox_manifests.rules`): a tool hook runs only
    for calls it matches. ``run_async`` (Claude's and Codex's ``async``) runs the
    script in the background: it never blocks or rewrites the call, and what it
    answers as context reaches the session's next turn.
    """

    event: str
    script: Path | None = None
    command: str | None = None
    matcher: str | None = None
    timeout: float | None = None
    source_event: str = ""
    #: ``ignore``: a failing script is reported and the call goes on; ``block``: a failing
    #: ``pre_tool_call`` script blocks the call (a guard fails closed)
    on_error: str = "ignore"
    condition: str | None = None
    run_async: bool = False
    #: Claude's handler ``type``: ``command`` (``script`` or ``command`` runs), ``http`` (the
    #: payload is POSTed to ``target["url"]``) or ``mcp_tool`` (``target["tool"]`` of MCP server
    #: ``target["server"]`` is called with ``target["input"]``, through the policy)
    handler: str = "command"
    target: dict[str, Any] | None = attrs.field(default=None, hash=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "handler": self.handler,
            "target": self.target,
            "event": self.event,
            "script": str(self.script) if self.script else None,
            "command": self.command,
            "matcher": self.matcher,
            "timeout": self.timeout,
            "source_event": self.source_event,
            "on_error": self.on_error,
            "if": self.condition,
            "async": self.run_async,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HookDecl:
        return cls(
            event=data["event"],
            script=Path(data["script"]) if data.get("script") else None,
            command=data.get("command"),
            matcher=data.get("matcher"),
            timeout=data.get("timeout"),
            source_event=data.get("source_event", ""),
            on_error=data.get("on_error", "ignore"),
            condition=data.get("if"),
            run_async=bool(data.get("async", False)),
            handler=data.get("handler", "command"),
            target=data.get("target"),
        )


@attrs.frozen
class CodeEntry:
    """Code a plugin runs (a Philont ``main``): which format activates it, and how."""

    runtime: str
    main: Path
    sandbox: str = "direct"
    requires_env: tuple[str, ...] = ()
    tool_prefix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "main": str(self.main),
            "sandbox": self.sandbox,
            "requires_env": list(self.requires_env),
            "tool_prefix": self.tool_prefix,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CodeEntry:
        return cls(
            runtime=data["runtime"],
            main=Path(data["main"]),
            sandbox=data.get("sandbox", "direct"),
            requires_env=tuple(data.get("requires_env", ())),
            tool_prefix=data.get("tool_prefix", ""),
        )


@attrs.frozen
class Contribution:
    """One thing a plugin adds. ``key`` (``kind/name``) names it in settings.

    ``config`` depends on the kind: the server table for ``mcp_server`` and
    ``lsp_server`` (plugin-root variables already expanded), a :class:`HookDecl`
    for ``hook``, a dict (``description``) for a declared ``tool``, ``None`` for
    file contributions (skills, commands, agents, output styles), whose ``source``
    is the file or directory.

    ``schema`` says which schema an ``mcp_server`` table is in: ``"mcp.json"`` (the
    ``.mcp.json`` entry Claude Code reads) or ``"kairox"`` (a ``[mcp_servers.NAME]`` table
    of kairox's own, what the Codex format makes of Codex's entries).
    """

    kind: str
    name: str
    source: Path
    config: Any = None
    schema: str = "mcp.json"

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        config = self.config.to_dict() if isinstance(self.config, HookDecl) else self.config
        out = {"kind": self.kind, "name": self.name, "source": str(self.source), "config": config}
        if self.schema != "mcp.json":
            out["schema"] = self.schema
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Contribution:
        config = data.get("config")
        if data["kind"] == "hook" and isinstance(config, dict):
            config = HookDecl.from_dict(config)
        return cls(
            kind=data["kind"],
            name=data["name"],
            source=Path(data["source"]),
            config=config,
            schema=data.get("schema", "mcp.json"),
        )


def permissions_to_dict(perms: Permissions | None) -> dict[str, Any] | None:
    if perms is None:
        return None
    return {
        "approvalPolicy": perms.approval.value if perms.approval else None,
        "sandboxPolicy": perms.sandbox.value if perms.sandbox else None,
        "tools": list(perms.tools) if perms.tools is not None else None,
    }


def permissions_from_dict(data: dict[str, Any] | None) -> Permissions | None:
    if data is None:
        return None
    approval = data.get("approvalPolicy")
    sandbox = data.get("sandboxPolicy")
    tools = data.get("tools")
    return Permissions(
        approval=ApprovalPolicy(approval) if approval else None,
        sandbox=SandboxPolicy(sandbox) if sandbox else None,
        tools=tuple(tools) if tools is not None else None,
    )


@attrs.frozen
class BundleManifest:
    """A plugin as its manifest describes it, whatever the format.

    ``problems`` holds the warnings found while reading it (unknown fields,
    a declared directory that does not exist); errors raise
    :class:`~kairox_manifests.ManifestError` instead.

    ``formats`` names every manifest format that read the directory, in resolution
    order (a directory with ``.codex-plugin/`` and ``.claude-plugin/`` is read by
    both: see :mod:`kairox_manifests.merge`); ``format`` is the first of them.
    """

    name: str
    format: str
    root: Path
    manifest_file: Path | None = None
    version: str | None = None
    description: str = ""
    homepage: str | None = None
    publisher: Publisher | None = None
    trust: Trust = Trust.UNKNOWN
    permissions: Permissions | None = None
    compatibility: Compatibility = Compatibility()
    contributions: tuple[Contribution, ...] = ()
    problems: tuple[Problem, ...] = ()
    #: ``defaultEnabled`` as the manifest declares it; ``None``: not declared (enabled)
    default_enabled: bool | None = None
    metadata: dict[str, Any] = attrs.field(factory=dict, hash=False)
    code: CodeEntry | None = None
    formats: tuple[str, ...] = ()
    #: the plugins this one needs loaded (resolved by :mod:`kairox_manifests.dependencies`)
    dependencies: tuple[Dependency, ...] = ()
    #: the plugin's ``bin/`` folder: first on the ``PATH`` of its own servers and hooks
    bin_dir: Path | None = None
    #: the options the plugin asks its user for (Claude's ``userConfig``: :mod:`.userconfig`)
    user_config: tuple[UserOption, ...] = ()

    @property
    def all_formats(self) -> tuple[str, ...]:
        """``formats``, or just ``format`` when one format read the directory."""
        return self.formats or (self.format,)

    def by_kind(self, kind: str) -> list[Contribution]:
        return [c for c in self.contributions if c.kind == kind]

    def contribution(self, key: str) -> Contribution | None:
        for c in self.contributions:
            if c.key == key:
                return c
        return None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form; :meth:`from_dict` reads it back to an equal manifest."""
        return {
            "name": self.name,
            "format": self.format,
            "root": str(self.root),
            "manifest_file": str(self.manifest_file) if self.manifest_file else None,
            "version": self.version,
            "description": self.description,
            "homepage": self.homepage,
            "publisher": self.publisher.to_dict() if self.publisher else None,
            "trust": self.trust.value,
            "permissions": permissions_to_dict(self.permissions),
            "compatibility": self.compatibility.to_dict(),
            "contributions": [c.to_dict() for c in self.contributions],
            "problems": [p.to_dict() for p in self.problems],
            "default_enabled": self.default_enabled,
            "metadata": self.metadata,
            "code": self.code.to_dict() if self.code else None,
            "formats": list(self.formats),
            "dependencies": [d.to_dict() for d in self.dependencies],
            "bin_dir": str(self.bin_dir) if self.bin_dir else None,
            "user_config": [o.to_dict() for o in self.user_config],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BundleManifest:
        compat = data.get("compatibility") or {}
        publisher = data.get("publisher")
        return cls(
            name=data["name"],
            format=data["format"],
            root=Path(data["root"]),
            manifest_file=Path(data["manifest_file"]) if data.get("manifest_file") else None,
            version=data.get("version"),
            description=data.get("description", ""),
            homepage=data.get("homepage"),
            publisher=Publisher(**publisher) if publisher else None,
            trust=Trust(data.get("trust", "unknown")),
            permissions=permissions_from_dict(data.get("permissions")),
            compatibility=Compatibility(
                kairox_version=compat.get("kairoxVersion"),
                platforms=tuple(compat.get("platforms", ())),
                requires=tuple(_parse_requirement(r) for r in compat.get("requires", ())),
            ),
            contributions=tuple(Contribution.from_dict(c) for c in data.get("contributions", ())),
            problems=tuple(Problem(**p) for p in data.get("problems", ())),
            default_enabled=data.get("default_enabled"),
            metadata=dict(data.get("metadata") or {}),
            code=CodeEntry.from_dict(data["code"]) if data.get("code") else None,
            formats=tuple(data.get("formats") or ()),
            dependencies=tuple(Dependency(**d) for d in data.get("dependencies") or ()),
            bin_dir=Path(data["bin_dir"]) if data.get("bin_dir") else None,
            user_config=tuple(UserOption.from_dict(o) for o in data.get("user_config") or ()),
        )


def _parse_requirement(text: str) -> Requirement:
    binary, _, spec = text.strip().partition(" ")
    return Requirement(binary, spec.strip())


@attrs.frozen
class InventoryItem:
    """One row of a plugin's flat inventory."""

    kind: str
    name: str
    source: str
    enabled: bool = True
    loaded: bool = False
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class BundleManifestView:
    """A plugin as ``kairox plugin list/inspect`` shows it: the manifest plus
    what settings, trust and compatibility made of it.

    ``state`` is ``loaded``, ``available`` (found, not started yet), ``disabled``,
    ``incompatible``, ``untrusted``, ``shadowed`` (another plugin of the same name
    wins) or ``failed``; ``reason`` says why when it is not loaded.
    """

    name: str
    format: str
    root: str
    scope: str
    state: str
    reason: str = ""
    version: str | None = None
    description: str = ""
    enabled: bool = True
    inventory: tuple[InventoryItem, ...] = ()
    permissions: dict[str, Any] | None = None
    compatibility: dict[str, Any] = attrs.field(factory=dict)
    compatible: bool = True
    incompatibilities: tuple[str, ...] = ()
    trust: str = Trust.UNKNOWN.value
    trusted: bool = False
    publisher: dict[str, Any] | None = None
    problems: tuple[Problem, ...] = ()
    #: every format that read the directory (``format`` is the first)
    formats: tuple[str, ...] = ()
    #: the manifest's :attr:`BundleManifest.metadata` (Agent Plugins' ``extensions`` among it)
    metadata: dict[str, Any] = attrs.field(factory=dict, hash=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "format": self.format,
            "formats": list(self.formats or (self.format,)),
            "root": self.root,
            "scope": self.scope,
            "state": self.state,
            "reason": self.reason,
            "version": self.version,
            "description": self.description,
            "enabled": self.enabled,
            "inventory": [i.to_dict() for i in self.inventory],
            "permissions": self.permissions,
            "compatibility": {
                **self.compatibility,
                "compatible": self.compatible,
                "problems": list(self.incompatibilities),
            },
            "trust": self.trust,
            "trusted": self.trusted,
            "publisher": self.publisher,
            "problems": [p.to_dict() for p in self.problems],
            "metadata": self.metadata,
        }

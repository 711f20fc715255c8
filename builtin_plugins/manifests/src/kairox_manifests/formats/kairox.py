"""The native format: ``.kairox-plugin/plugin.json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional

import attrs

from kairox.files import Root

from ..model import Trust
from ._common import Collector, add_components, default_inside, kairox_hooks, lsp_servers, mcp_servers, path_list
from ._meta import (
    BaseFormat,
    RawCompatibility,
    RawPermissions,
    compatibility_from,
    fields_set,
    permissions_from,
    person_from,
)

__all__ = ["KairoxFormat", "KairoxHook", "KairoxManifestDoc"]


@attrs.frozen
class KairoxHook:
    event: str
    script: str
    timeout: Optional[float] = None
    matcher: Optional[str] = None
    #: what a failure of the script (crash, timeout, unreadable answer) means: ``ignore``
    #: (the call goes on, as Claude Code and Codex do) or ``block`` (a guard fails closed)
    onError: Literal["ignore", "block"] = "ignore"


@attrs.frozen
class KairoxManifestDoc:
    """The fields of ``.kairox-plugin/plugin.json``."""

    name: str
    version: Optional[str] = None
    description: str = ""
    homepage: Optional[str] = None
    license: Optional[str] = None
    keywords: list[str] = attrs.field(factory=list)
    skills: Any = None
    commands: Any = None
    agents: Any = None
    mcpServers: Any = None
    lspServers: Any = None
    hooks: list[KairoxHook] = attrs.field(factory=list)
    permissions: Optional[RawPermissions] = None
    compatibility: Optional[RawCompatibility] = None
    publisher: Any = None
    trust: Trust = Trust.UNKNOWN
    defaultEnabled: Optional[bool] = None


class KairoxFormat(BaseFormat):
    """Declared component paths replace the defaults (``skills/``, ``commands/``,
    ``agents/``); MCP servers come from ``mcpServers`` or a sibling ``.mcp.json``,
    LSP servers from ``lspServers`` or ``.lsp.json``."""

    name = "kairox"
    priority = 10
    manifest = ".kairox-plugin/plugin.json"

    document = KairoxManifestDoc

    def read(self, root: Root, file: Path, doc: Any, name: str, out: Collector) -> dict[str, Any]:
        f = str(file)
        for kind, field, default in (
            ("skill", "skills", "skills"),
            ("command", "commands", "commands"),
            ("agent", "agents", "agents"),
        ):
            declared = path_list(getattr(doc, field), file=f, path=field)
            add_components(root, kind, declared, () if declared else (default,), out, out.problems, file=f)
        kairox_hooks(root, doc.hooks, out, file=f, path="hooks")
        for field, default, load in (
            ("mcpServers", ".mcp.json", mcp_servers),
            ("lspServers", ".lsp.json", lsp_servers),
        ):
            declared = getattr(doc, field)
            if declared is not None:
                load(root, declared, out, file=f, path=field)
            elif default_inside(root, default, out.problems, want="file") is not None:
                load(root, f"./{default}", out, file=f, path=f"({default})")
        return dict(
            version=doc.version,
            description=doc.description,
            homepage=doc.homepage,
            publisher=person_from(doc.publisher, file=f, path="publisher", problems=out.problems),
            trust=doc.trust,
            permissions=permissions_from(doc.permissions),
            compatibility=compatibility_from(doc.compatibility, file=f, path="compatibility", problems=out.problems),
            default_enabled=doc.defaultEnabled,
            metadata=fields_set(doc, "license", "keywords"),
        )

"""A manifest format of your own: ``.acme-pack/pack.json`` (the example of docs/writing-a-format.md).

    {"name": "review-kit", "version": "1.0.0", "description": "...",
     "skills": ["./skills"], "servers": {"lint": {"command": "acme-lint", "args": ["--mcp"]}}}

Everything a plugin directory names is read through the bundle's contained reader (``root``):
``add_components`` and ``mcp_servers`` refuse a path that leads outside the plugin, and
``Collector`` keeps every warning with its file and field. Register it from your package's
``hooks`` module::

    kairox_register_manifest_formats = adds("acme_pack.format:PackFormat")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import attrs

from kairox.files import Root
from kairox_manifests import BaseFormat, Collector, add_components, mcp_servers, path_list


@attrs.frozen
class PackDoc:
    """The fields of ``pack.json``; any other field is a warning naming it."""

    name: str
    version: Optional[str] = None
    description: str = ""
    skills: Any = None
    servers: Any = None


class PackFormat(BaseFormat):
    name = "acme-pack"
    priority = 50  # after the built-in formats: a directory they read is theirs
    manifest = ".acme-pack/pack.json"
    document = PackDoc

    def read(self, root: Root, file: Path, doc: Any, name: str, out: Collector) -> dict[str, Any]:
        f = str(file)
        declared = path_list(doc.skills, file=f, path="skills")
        add_components(root, "skill", declared, () if declared else ("skills",), out, out.problems, file=f)
        if doc.servers is not None:
            mcp_servers(root, doc.servers, out, file=f, path="servers")
        return {"version": doc.version, "description": doc.description}

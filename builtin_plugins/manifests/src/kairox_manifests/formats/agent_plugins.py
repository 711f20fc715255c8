"""Agent Plugins 1.0.0 (``agentplugins/agent-plugins-spec``, ``spec/1.0.0.md``): a root ``plugin.json``.

Which ``plugin.json`` is this format's: a JSON object whose ``$schema`` is a string under
``https://agent-plugins.org/schemas/``. Philont's ``plugin.json`` (also at the root) has an
``id`` and no such ``$schema``; kairox-philont leaves a document this format claims alone
(:func:`is_agent_plugins_document`), so one file is never read by both. A ``plugin.json``
with neither is some other tool's and is not read by either.

The manifest (§5) is closed: ``$schema`` (exactly the 1.0.0 identifier; another Agent
Plugins version is refused, as §5.2 says), ``name`` (1-64 of ``a-z0-9.-``, alphanumeric at
both ends, no ``--`` or ``..``), ``version``, ``description``, ``author`` (only ``name``,
``email``, ``url``), ``homepage``, ``repository``, ``license``, ``keywords`` and
``extensions``. Any other top-level field is reported and ignored (a warning naming it);
an ``extensions`` that is not an object likewise. Every other violation refuses the plugin
(a :class:`ManifestError` naming the file and the field).

``extensions`` holds client data by reverse-domain namespace (§8). Kairox implements no
namespace: each is kept in ``metadata["extensions"]`` and shown by ``kairox plugin inspect``,
never validated beyond being an object, never run. Extension folders are not read.

Components sit in fixed places (§6): ``skills/<name>/SKILL.md`` (immediate children only)
and ``mcp.json`` (:mod:`.agent_plugins_mcp`). A component that fails (a place that is not
a folder or file, or leads outside the plugin; a skill folder that does; a bad server entry)
is an error of its own and the rest of the plugin loads (§11.3).

The plugin's data folder (``${PLUGIN_DATA}``) is :func:`kairox_manifests.plugindata.plugin_data_dir`
under the kairox home given to :meth:`AgentPluginsFormat.probe` (discovery gives the runtime's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kairox.ext import describe_value
from kairox.files import Refused, Root

from .._schema import join, read_json
from ..errors import ManifestError, Problem
from ..model import METADATA_FIELDS, BundleManifest, Contribution, Publisher
from ..paths import bundle_root, refusal
from ..plugindata import plugin_data_dir
from ._common import Collector, check_name
from ._meta import BaseFormat, manifest_present
from .agent_plugins_mcp import mcp_servers

__all__ = [
    "MANIFEST_FIELDS",
    "PLUGIN_SCHEMA",
    "SCHEMA_PREFIX",
    "AgentPluginsFormat",
    "is_agent_plugins_document",
    "plugin_name_problem",
]

SCHEMA_PREFIX = "https://agent-plugins.org/schemas/"
PLUGIN_SCHEMA = SCHEMA_PREFIX + "1.0.0/plugin.schema.json"
#: the top-level fields of a 1.0.0 manifest (§5.2)
MANIFEST_FIELDS = ("$schema", "name", *METADATA_FIELDS, "extensions")
_STRING_FIELDS = ("version", "description", "homepage", "repository", "license")
_AUTHOR_FIELDS = ("name", "email", "url")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-")
SKILLS_DIR = "skills"


def is_agent_plugins_document(data: Any) -> bool:
    """Whether a root ``plugin.json`` document is an Agent Plugins manifest: an object whose
    ``$schema`` is a string under :data:`SCHEMA_PREFIX`."""
    return isinstance(data, dict) and isinstance(data.get("$schema"), str) and data["$schema"].startswith(SCHEMA_PREFIX)


def plugin_name_problem(name: str) -> str:
    """Why ``name`` is not an Agent Plugins name (§5.5), or ``""`` when it is one."""
    if not 1 <= len(name) <= 64:
        return "must be 1 to 64 characters"
    if any(c not in _NAME_CHARS for c in name):
        return "may hold only lowercase letters, digits, '-' and '.'"
    if not (name[0].isalnum() and name[-1].isalnum()):
        return "must start and end with a letter or digit"
    if "--" in name or ".." in name:
        return "may not hold '--' or '..'"
    return ""


class AgentPluginsFormat(BaseFormat):
    """The Agent Plugins 1.0.0 format (see the module)."""

    name = "agent-plugins"
    #: first in resolution order: §5.1, no other manifest overrides the core fields of plugin.json
    priority = 5
    manifest = "plugin.json"

    def probe(self, root: Path, *, reader: Root | None = None, home: Path | None = None) -> BundleManifest | None:
        """The plugin at ``root`` when its ``plugin.json`` is an Agent Plugins manifest, else
        ``None``; ``home`` is the kairox home its data folder is under (default: the user's)."""
        contained = bundle_root(root) if reader is None else reader
        file = self.manifest_file(contained.path)
        if not manifest_present(contained, file):  # one leading outside the plugin refuses it (§4.1)
            return None
        data = read_json(file, contained)
        if not is_agent_plugins_document(data):
            return None
        return self.parse(contained, data, file, home=home)

    def parse(self, root: Path | Root, data: Any, file: Path, *, home: Path | None = None) -> BundleManifest:
        """The plugin at ``root`` from ``data``, its ``plugin.json`` (see the module)."""
        f = str(file)
        contained = bundle_root(root)
        if not isinstance(data, dict):
            raise ManifestError(f"expected a JSON object, got {describe_value(data)}", file=f)
        problems: list[Problem] = []
        _check_schema(data, f)
        name = _check_name(data, f)
        for key in data:
            if key not in MANIFEST_FIELDS:
                problems.append(
                    Problem(
                        "unknown field (ignored): Agent Plugins 1.0.0 allows no other top-level field; "
                        "a client's own data goes under extensions",
                        file=f,
                        path=join("", key),
                    )
                )
        fields = {key: _string_field(data, key, f) for key in _STRING_FIELDS}
        publisher = _author(data, f)
        keywords = _keywords(data, f)
        extensions = _extensions(data, f, problems)
        out = Collector(problems)
        # components last: the manifest is whole before anything is discovered (§5.1)
        _skills(contained, out)
        data_dir = plugin_data_dir(name, contained.real, home)
        mcp_servers(contained, out, data=data_dir, schema_prefix=SCHEMA_PREFIX)
        metadata: dict[str, Any] = {"agentPlugins": "1.0.0"}
        for key in ("repository", "license"):
            if fields[key] is not None:
                metadata[key] = fields[key]
        if keywords:
            metadata["keywords"] = keywords
        if extensions:
            metadata["extensions"] = extensions
        if any(c.kind == "mcp_server" and c.config.get("type") == "stdio" for c in out.items):
            metadata["pluginData"] = str(data_dir)
        return self.manifest_of(
            name,
            contained.real,
            file,
            out,
            version=fields["version"],
            description=fields["description"] or "",
            homepage=fields["homepage"],
            publisher=publisher,
            metadata=metadata,
        )


def _check_schema(data: dict[str, Any], file: str) -> None:
    if "$schema" not in data:
        raise ManifestError(f"required field is missing (write {PLUGIN_SCHEMA!r})", file=file, path="$schema")
    schema = data["$schema"]
    if schema == PLUGIN_SCHEMA:
        return
    if isinstance(schema, str) and schema.startswith(SCHEMA_PREFIX):
        raise ManifestError(
            f"{schema!r}: kairox reads Agent Plugins 1.0.0 ({PLUGIN_SCHEMA!r}); this plugin targets another version",
            file=file,
            path="$schema",
        )
    raise ManifestError(f"expected {PLUGIN_SCHEMA!r}, got {describe_value(schema)}", file=file, path="$schema")


def _check_name(data: dict[str, Any], file: str) -> str:
    if "name" not in data:
        raise ManifestError("required field is missing", file=file, path="name")
    name = data["name"]
    if not isinstance(name, str):
        raise ManifestError(f"expected a string, got {describe_value(name)}", file=file, path="name")
    why = plugin_name_problem(name)
    if why:
        raise ManifestError(f"{name!r} is not a plugin name: it {why}", file=file, path="name")
    return check_name(name, file=file, path="name")  # an Agent Plugins name is always a kairox one


def _string_field(data: dict[str, Any], key: str, file: str) -> str | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, str):
        raise ManifestError(f"expected a string, got {describe_value(value)}", file=file, path=key)
    return value


def _author(data: dict[str, Any], file: str) -> Publisher | None:
    if "author" not in data:
        return None
    author = data["author"]
    if not isinstance(author, dict):
        raise ManifestError(
            f"expected an object {{name, email, url}}, got {describe_value(author)}", file=file, path="author"
        )
    for key, value in author.items():
        if key not in _AUTHOR_FIELDS:
            raise ManifestError("not a field of author (name, email, url)", file=file, path=join("author", key))
        if not isinstance(value, str):
            raise ManifestError(f"expected a string, got {describe_value(value)}", file=file, path=join("author", key))
    return Publisher(name=author.get("name", ""), email=author.get("email"), url=author.get("url"))


def _keywords(data: dict[str, Any], file: str) -> list[str]:
    if "keywords" not in data:
        return []
    keywords = data["keywords"]
    if not isinstance(keywords, list):
        raise ManifestError(f"expected a list of strings, got {describe_value(keywords)}", file=file, path="keywords")
    for i, word in enumerate(keywords):
        if not isinstance(word, str):
            raise ManifestError(f"expected a string, got {describe_value(word)}", file=file, path=join("keywords", i))
    return list(keywords)


def _reverse_domain(namespace: str) -> bool:
    labels = namespace.split(".")
    return len(labels) >= 2 and all(labels) and not any(c.isspace() or c == "/" for c in namespace)


def _extensions(data: dict[str, Any], file: str, problems: list[Problem]) -> dict[str, Any]:
    """§8.1: kept by namespace, never read into; a non-object ``extensions`` is reported and ignored."""
    if "extensions" not in data:
        return {}
    extensions = data["extensions"]
    if not isinstance(extensions, dict):
        problems.append(
            Problem(
                f"expected an object of extension namespaces, got {describe_value(extensions)}; ignored",
                file=file,
                path="extensions",
            )
        )
        return {}
    for namespace, value in extensions.items():
        path = join("extensions", namespace)
        if not isinstance(value, dict):
            raise ManifestError(
                f"expected an object (the namespace's data), got {describe_value(value)}", file=file, path=path
            )
        if not _reverse_domain(namespace):
            problems.append(
                Problem(f"{namespace!r} is not a reverse-domain namespace (com.example.client)", file=file, path=path)
            )
    return dict(extensions)


def _skills(root: Root, out: Collector) -> None:
    """§7.1: each immediate folder of ``skills/`` holding a regular ``SKILL.md`` is one skill."""
    try:
        kind = root.kind(SKILLS_DIR)
    except Refused as exc:  # §4.1: the whole component type is invalid, the rest loads
        out.problems.append(refusal(exc, "skill"))
        return
    if kind == "missing":
        return
    if kind != "dir":
        out.problems.append(
            Problem(
                f"{SKILLS_DIR} is not a folder ({kind}); the plugin's skills are not loaded",
                file=str(root.path / SKILLS_DIR),
                severity="error",
            )
        )
        return
    folder = root.locate(SKILLS_DIR)
    for entry in root.entries(folder):
        if entry.refused:
            if entry.kind in ("dir", "missing"):  # a folder (or a link) leading outside
                out.problems.append(refusal(entry, "skill"))
            continue
        if entry.kind != "dir":
            continue
        skill_md = entry.path / "SKILL.md"
        try:
            what = root.kind(skill_md)
        except Refused as exc:  # §4.1: that skill is skipped
            out.problems.append(refusal(exc, "skill"))
            continue
        if what == "file":
            out.add(Contribution("skill", entry.name, entry.path), file=str(skill_md), path="")
        elif what != "missing":
            out.problems.append(
                Problem(
                    f"not a regular file ({what}); skill {entry.name!r} not loaded",
                    file=str(skill_md),
                    severity="error",
                )
            )

"""Skills an MCP server offers through the skills extension (``io.modelcontextprotocol/skills``,
SEP-2640) become kairox skills ``<server>:<name>`` in ``runtime.skills``.

:class:`McpSkillSource` (the skill source ``mcp``, registered with
``kairox_register_skill_sources``) lists a server's skills (``skills/list``) when the server
becomes ready and again when it says its resources changed (the extension defines no change
notification of its own; skill files are resources), and forgets them when it stops or fails.
What a server says is untrusted: every entry is checked (:func:`read_listing`) and one that
fails is an error naming the server and the field, the others load; the listing, each skill's
manifest and each ``SKILL.md`` are bounded.

Nothing is fetched before a skill is activated: an entry carries what the registry needs
(name, description, the manifest). :class:`McpSkillLoader` reads the ``SKILL.md`` when
:meth:`kairox.Session.activate_skill` asks, and uses it only if its size, its SHA-256 digest
and its frontmatter are what the entry said; the body is tagged with the server it came from.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

import attrs

from kairox import Event
from kairox.errors import KairoxError
from kairox.ext import (
    SkillDef,
    SkillError,
    SkillFrontmatter,
    SkillScope,
    SkillWarning,
    split_frontmatter,
    terminal_safe,
)

from .events import McpResourcesChanged, McpServerFailed, McpServerReady, McpServerStopped

if TYPE_CHECKING:
    from kairox import Runtime

    from .client import McpClient

__all__ = [
    "EXTENSION",
    "MAX_RESOURCES",
    "MAX_SKILLS",
    "MAX_SKILL_MD_BYTES",
    "MAX_TOTAL_BYTES",
    "SOURCE",
    "McpSkillLoader",
    "McpSkillSource",
    "SkillEntry",
    "read_listing",
]

logger = logging.getLogger(__name__)

#: the extension's identifier (capabilities.extensions of both sides)
EXTENSION = "io.modelcontextprotocol/skills"
#: the skill source's name in ``runtime.skills``
SOURCE = "mcp"
#: skills kept of one server (the extension bounds no listing: this host does)
MAX_SKILLS = 256
#: pages of ``skills/list`` asked for
MAX_PAGES = 50
#: files of one skill, and their total size: the extension's limits (hosts must support up to them)
MAX_RESOURCES = 512
MAX_TOTAL_BYTES = 16 * 1024 * 1024
#: a SKILL.md read: what kairox reads of any skill file (:class:`kairox.files.Limits`)
MAX_SKILL_MD_BYTES = 4 * 1024 * 1024
#: a URI, a description (the Agent Skills limit), an entry's frontmatter as JSON
MAX_URI = 2048
MAX_DESCRIPTION = 1024
MAX_FRONTMATTER_BYTES = 64 * 1024
#: how long one request may take, seconds
REQUEST_TIMEOUT = 60.0
#: the Agent Skills name rule: 1-64 lowercase letters, digits and single inner hyphens
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_NAME_MAX = 64
#: a prefix segment that may join a name to tell two same-named skills apart
_SEGMENT = re.compile(r"[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,63}")
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]{0,31}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SKILL_MD = "/SKILL.md"

Problem = Union[SkillError, SkillWarning]


def _where(server: str) -> str:
    return f"MCP server {server}"


@attrs.frozen
class SkillEntry:
    """One checked entry of a server's ``skills/list``."""

    uri: str
    #: the skill path's segments (``skill://acme/billing/refunds/SKILL.md``: acme, billing, refunds)
    path: tuple[str, ...]
    #: the entry's frontmatter as canonical JSON: what the served SKILL.md's must equal
    frontmatter_json: str
    #: the manifest: (uri, digest, size) of each file, SKILL.md included
    files: tuple[tuple[str, str, int], ...]

    @property
    def name(self) -> str:
        return self.path[-1]

    @property
    def frontmatter(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.frontmatter_json)
        return value

    @property
    def own_file(self) -> tuple[str, str, int]:
        return next(f for f in self.files if f[0] == self.uri)


class _Bad(Exception):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message


def _shown(value: object, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    return terminal_safe(text[:limit] + ("..." if len(text) > limit else ""))


def _skill_path(uri: object) -> tuple[str, tuple[str, ...]]:
    """``(root, segments)`` of an entry's ``uri`` (``scheme://<skill-path>/SKILL.md``)."""
    if not isinstance(uri, str) or not uri:
        raise _Bad("uri", "is missing or not a string")
    if len(uri) > MAX_URI:
        raise _Bad("uri", f"is {len(uri)} characters (at most {MAX_URI})")
    if _CONTROL.search(uri) or "\\" in uri:
        raise _Bad("uri", f"{_shown(uri)} has a control character or a backslash")
    scheme, sep, rest = uri.partition("://")
    if not sep or not _SCHEME.fullmatch(scheme) or not rest.endswith(_SKILL_MD):
        raise _Bad("uri", f"{_shown(uri)} is not <scheme>://<skill-path>/SKILL.md")
    segments = tuple(rest[: -len(_SKILL_MD)].split("/"))
    if any(s in ("", ".", "..") for s in segments):
        raise _Bad("uri", f"{_shown(uri)} has an empty, '.' or '..' path segment")
    return uri[: -len(_SKILL_MD)], segments


def _json_of(frontmatter: Mapping[str, Any]) -> str:
    try:
        text = json.dumps(frontmatter, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise _Bad("frontmatter", f"is not plain JSON: {exc}") from None
    if len(text.encode()) > MAX_FRONTMATTER_BYTES:
        raise _Bad("frontmatter", f"is over {MAX_FRONTMATTER_BYTES // 1024} KiB")
    return text


def _manifest(uri: str, root: str, resources: object) -> tuple[tuple[str, str, int], ...]:
    if resources == "dynamic":
        raise _Bad("resources", 'is "dynamic": the content cannot be verified, and kairox does not load such a skill')
    if not isinstance(resources, list):
        raise _Bad("resources", 'is neither a list of files nor "dynamic"')
    if len(resources) > MAX_RESOURCES:
        raise _Bad("resources", f"lists {len(resources)} files (at most {MAX_RESOURCES})")
    files: list[tuple[str, str, int]] = []
    seen: set[str] = set()
    total = 0
    for i, item in enumerate(resources):
        field = f"resources[{i}]"
        if not isinstance(item, dict):
            raise _Bad(field, "is not an object")
        file_uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
        if not isinstance(file_uri, str) or len(file_uri) > MAX_URI or _CONTROL.search(file_uri):
            raise _Bad(f"{field}.uri", "is not a URI string")
        relative = file_uri[len(root) + 1 :] if file_uri.startswith(root + "/") else None
        if relative is None or any(p in ("", ".", "..") for p in relative.split("/")) or "\\" in relative:
            raise _Bad(f"{field}.uri", f"{_shown(file_uri)} is not a file inside the skill ({_shown(root)})")
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            raise _Bad(f"{field}.digest", "is not sha256: and 64 lowercase hex digits")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise _Bad(f"{field}.size", "is not a byte count")
        if file_uri in seen:
            raise _Bad(f"{field}.uri", f"{_shown(file_uri)} is listed twice")
        seen.add(file_uri)
        total += size
        files.append((file_uri, digest, size))
    if total > MAX_TOTAL_BYTES:
        raise _Bad("resources", f"total {total} bytes (at most {MAX_TOTAL_BYTES}, 16 MiB)")
    own = next((f for f in files if f[0] == uri), None)
    if own is None:
        raise _Bad("resources", "does not list the skill's own SKILL.md")
    if own[2] > MAX_SKILL_MD_BYTES:
        raise _Bad("resources", f"its SKILL.md is {own[2]} bytes (kairox reads at most {MAX_SKILL_MD_BYTES})")
    return tuple(files)


def read_entry(raw: object) -> SkillEntry:
    """One entry of ``skills/list``, checked; :class:`_Bad` names the field that fails."""
    if not isinstance(raw, dict):
        raise _Bad("", "is not an object")
    uri = raw.get("uri")
    root, path = _skill_path(uri)
    assert isinstance(uri, str)
    frontmatter = raw.get("frontmatter")
    if not isinstance(frontmatter, dict):
        raise _Bad("frontmatter", "is missing or not an object")
    name = frontmatter.get("name")
    if not isinstance(name, str) or len(name) > _NAME_MAX or not _NAME.fullmatch(name):
        raise _Bad(
            "frontmatter.name",
            f"{_shown(name)} is not a skill name (1-64 lowercase letters, digits and inner hyphens)",
        )
    if path[-1] != name:
        raise _Bad("uri", f"its last path segment {_shown(path[-1])} is not the skill's name {name!r}")
    description = frontmatter.get("description")
    if not isinstance(description, str) or not description.strip():
        raise _Bad("frontmatter.description", "is missing or empty")
    if len(description) > MAX_DESCRIPTION:
        raise _Bad("frontmatter.description", f"is {len(description)} characters (at most {MAX_DESCRIPTION})")
    text = _json_of(frontmatter)
    return SkillEntry(uri, path, text, _manifest(uri, root, raw.get("resources")))


def _strings(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def _skill_of(server: str, entry: SkillEntry, shown_name: str, runtime: Runtime) -> SkillDef:
    """The kairox skill of an entry: the Agent Skills fields (kairox's own, such as ``tools``,
    ``model`` or ``arguments``, are kept as extras and mean nothing here), the description
    with control characters written visibly."""
    fm = entry.frontmatter
    description = fm["description"]
    warnings: list[SkillWarning] = []
    if _CONTROL.search(description):
        description = terminal_safe(description)
        warnings.append(
            SkillWarning("the description has control characters (shown escaped)", _where(server), None, entry.uri)
        )
    known = {"name", "description", "license", "compatibility", "metadata", "allowed-tools", "disable-model-invocation"}
    frontmatter = SkillFrontmatter(
        name=shown_name,
        description=description,
        license=terminal_safe(fm["license"]) if isinstance(fm.get("license"), str) else None,
        compatibility=terminal_safe(fm["compatibility"]) if isinstance(fm.get("compatibility"), str) else None,
        metadata=fm["metadata"] if isinstance(fm.get("metadata"), dict) else {},
        # kept as said, never a grant: kairox enforces no skill's allowed-tools (docs/skills.md)
        allowed_tools=_strings(fm.get("allowed-tools")),
        extra={k: v for k, v in fm.items() if k not in known},
        # it only narrows (the model is not offered the skill)
        disable_model_invocation=fm.get("disable-model-invocation") is True,
    )
    return SkillDef(
        frontmatter,
        SkillScope.PLUGIN,
        source=SOURCE,
        namespace=server,
        origin=SOURCE,  # in its scope it loses a tie with a plugin's own skill
        warnings=tuple(warnings),
        loader=McpSkillLoader(server, entry, runtime),
    )


def read_listing(server: str, entries: Sequence[object], runtime: Runtime) -> list[SkillDef | Problem]:
    """The skills of a server's listing, and a problem for each entry that fails its checks
    (the server, the entry and the field). Two entries of one name are told apart by their
    paths (``acme.billing.refunds``), neither dropped."""
    out: list[SkillDef | Problem] = []
    good: list[SkillEntry] = []
    for i, raw in enumerate(entries):
        try:
            good.append(read_entry(raw))
        except _Bad as bad:
            field = f"skills[{i}]" + (f".{bad.field}" if bad.field else "")
            out.append(SkillError(f"skill entry {bad.message}; not loaded", file=_where(server), field=field))
    by_name: dict[str, list[SkillEntry]] = {}
    for entry in good:
        by_name.setdefault(entry.name, []).append(entry)
    for name, same in by_name.items():
        if len(same) == 1:
            out.append(_skill_of(server, same[0], name, runtime))
            continue
        uris = ", ".join(e.uri for e in same)
        for entry in same:
            if not all(_SEGMENT.fullmatch(s) for s in entry.path):
                out.append(
                    SkillError(
                        f"skill {name!r} is served at several URIs ({uris}) and its path cannot tell it apart",
                        file=_where(server),
                        field=entry.uri,
                    )
                )
                continue
            shown = ".".join(entry.path)
            skill = _skill_of(server, entry, shown, runtime)
            note = SkillWarning(
                f"skill {name!r} is served at several URIs ({uris}): this one is {skill.name}", _where(server)
            )
            out.append(attrs.evolve(skill, warnings=(*skill.warnings, note)))
    return out


# -- loading: the SKILL.md when a skill is activated ---------------------------------------------


def _served_bytes(contents: Sequence[Any], uri: str) -> bytes:
    """The bytes of ``uri`` in a ``resources/read`` result (text as UTF-8, a blob decoded)."""
    mine = [c for c in contents if str(getattr(c, "uri", "")) == uri] or list(contents[:1])
    if not mine:
        raise SkillError(f"the server returned no contents for {uri}")
    block = mine[0]
    text, blob = getattr(block, "text", None), getattr(block, "blob", None)
    if isinstance(text, str):
        if len(text) > MAX_SKILL_MD_BYTES:
            raise SkillError(f"{uri} is over {MAX_SKILL_MD_BYTES} bytes")
        return text.encode("utf-8")
    if isinstance(blob, str) and len(blob) <= MAX_SKILL_MD_BYTES * 4 // 3 + 4:
        try:
            return base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError):
            raise SkillError(f"{uri}: the blob is not base64") from None
    raise SkillError(f"{uri}: neither text nor a blob of at most {MAX_SKILL_MD_BYTES} bytes")


def _same(a: object, b: object) -> bool:
    """JSON equality (``true`` is not ``1``; ``1`` is ``1.0``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def verify(entry: SkillEntry, data: bytes) -> str:
    """The body of a served SKILL.md, if it is what ``entry`` said: its size, its digest, its
    frontmatter field by field. Anything else is a :class:`SkillError` (the content is not used)."""
    _uri, digest, size = entry.own_file
    if len(data) != size:
        raise SkillError(f"{entry.uri} is {len(data)} bytes; the listing said {size}")
    if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
        raise SkillError(f"{entry.uri} does not match its digest in the listing")
    try:
        text = data.decode("utf-8")
        fm_text, body = split_frontmatter(text)
    except (UnicodeDecodeError, SkillError) as exc:
        raise SkillError(f"{entry.uri} is not a skill file: {exc}") from None
    if fm_text is None:
        raise SkillError(f"{entry.uri} has no frontmatter")
    try:
        from kairox_skills import YamlLimitError, safe_load_bounded
    except ImportError:  # pragma: no cover - kairox-skills ships with kairox-mcp's default distribution
        raise SkillError("verifying a skill of an MCP server needs kairox-skills (pip install kairox-skills)") from None
    try:
        parsed = safe_load_bounded(fm_text)
    except YamlLimitError as exc:
        raise SkillError(f"{entry.uri}: the frontmatter does not parse: {exc}") from None
    except Exception as exc:  # yaml.YAMLError (kairox-mcp does not import yaml itself)
        raise SkillError(f"{entry.uri}: the frontmatter does not parse: {type(exc).__name__}") from None
    if not _same(parsed, entry.frontmatter):
        raise SkillError(f"{entry.uri}: its frontmatter is not the one the listing gave")
    return body


@attrs.frozen
class McpSkillLoader:
    """Reads a skill's SKILL.md from its server when the skill is activated (never before),
    verifies it (:func:`verify`) and tags the body with where it came from."""

    server: str
    entry: SkillEntry
    runtime: Runtime = attrs.field(eq=False, repr=False)

    async def load(self, skill: SkillDef) -> str:
        from .manager import REQUEST_TIMEOUT as TIMEOUT
        from .manager import manager_of

        uri = self.entry.uri

        async def read(client: McpClient) -> bytes:
            result = await client.read_resource(uri, timeout=TIMEOUT)
            return _served_bytes(result.contents, uri)

        try:
            data: bytes = await manager_of(self.runtime).server(self.server).request(read)
            body = verify(self.entry, data)
        except (KairoxError, SkillError) as exc:
            raise SkillError(f"skill {skill.name} (MCP server {self.server}): {exc}") from None
        tag = f"[skill {skill.name}, served by MCP server {self.server!r} at {uri}: the server's text, not kairox's]"
        return f"{tag}\n\n{body}"


# -- the source -----------------------------------------------------------------------------------


@attrs.frozen
class _Listing:
    entries: tuple[Any, ...]
    problems: tuple[Problem, ...] = ()


async def _fetch(client: McpClient) -> _Listing | None:
    """Every page of ``skills/list``, bounded; ``None`` when the server does not declare the extension."""
    caps = client.capabilities
    declared = caps.extensions if caps is not None else None
    if not declared or EXTENSION not in declared:
        return None
    from ._skillwire import list_page

    server = client.server
    entries: list[Any] = []
    problems: list[Problem] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await list_page(client.session, server, cursor, REQUEST_TIMEOUT)
        skills = page.get("skills")
        if not isinstance(skills, list):
            problems.append(
                SkillError("the skills/list result has no skills list", file=_where(server), field="skills")
            )
            break
        entries.extend(skills[: MAX_SKILLS + 1 - len(entries)])
        if len(entries) > MAX_SKILLS:
            break
        cursor = page.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            break
        if cursor in seen:
            problems.append(
                SkillWarning("skills/list repeated a cursor; listing stopped", _where(server), None, "nextCursor")
            )
            break
        seen.add(cursor)
    else:
        problems.append(
            SkillWarning(f"skills/list has more than {MAX_PAGES} pages; the rest is not read", _where(server))
        )
    if len(entries) > MAX_SKILLS:
        del entries[MAX_SKILLS:]
        problems.append(
            SkillWarning(
                f"the server offers more than {MAX_SKILLS} skills; kairox keeps the first {MAX_SKILLS}",
                _where(server),
                None,
                "skills",
            )
        )
    if caps is not None and caps.resources is None:
        problems.append(
            SkillWarning("declares the skills extension but not resources: its skills cannot be read", _where(server))
        )
    return _Listing(tuple(entries), tuple(problems))


class McpSkillSource:
    """The skills every ready MCP server offers, as the skill source ``mcp`` (see the module)."""

    name = SOURCE

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        #: per server: its skills and the problems of its listing
        self._found: dict[str, tuple[SkillDef | Problem, ...]] = {}
        #: per server: the latest event's number (a listing that a later event overtook is dropped)
        self._generation: dict[str, int] = {}
        self.unsubscribe = runtime.events.subscribe(
            self._on_event, McpServerReady, McpResourcesChanged, McpServerStopped, McpServerFailed
        )

    def quick_scan(self, runtime: Runtime | None) -> list[SkillDef | Problem]:
        """What the servers offer now (known without blocking: the registry asks no thread)."""
        items = [item for server in sorted(self._found) for item in self._found[server]]
        return items + self._collisions(items)

    def scan(self, runtime: Runtime | None) -> Iterable[SkillDef | Problem]:
        return self.quick_scan(runtime)

    def _collisions(self, items: Sequence[SkillDef | Problem]) -> list[Problem]:
        """A warning for each server skill whose name another origin's skill has: that one
        is the one the name (or ``/name``) means; the server's answers to its full name only."""
        others: dict[str, SkillDef] = {}
        for s in self.runtime.skills.all_found():
            if s.source != SOURCE:
                others.setdefault(s.name, s)
        out: list[Problem] = []
        for skill in items:
            if not isinstance(skill, SkillDef):
                continue
            for name in dict.fromkeys((skill.name, skill.frontmatter.name)):
                other = others.get(name)
                if other is not None:
                    out.append(
                        SkillWarning(
                            f"skill {skill.name} has the name of the {other.scope.value} skill {other.name} "
                            f"({other.file or other.source}); {name} means that one",
                            _where(skill.namespace or ""),
                            None,
                            "name",
                        )
                    )
        return out

    async def _on_event(self, event: Event) -> None:
        server = getattr(event, "server", "")
        number = self._generation[server] = self._generation.get(server, 0) + 1
        if isinstance(event, (McpServerStopped, McpServerFailed)):
            if self._found.pop(server, None) is None:
                return
        else:
            found = await self._list(server)
            if self._generation.get(server) != number:
                return  # a later event (a stop, another change) decides
            if not found and server not in self._found:
                return
            self._found[server] = tuple(found)
        await self.runtime.skills.add_source(self, self.runtime)

    async def _list(self, server: str) -> list[SkillDef | Problem]:
        from .manager import manager_of

        try:
            listing: _Listing | None = await manager_of(self.runtime).server(server).request(_fetch)
        except KairoxError as exc:
            return [SkillError(f"skills/list failed: {exc}", file=_where(server), field="skills/list")]
        if listing is None:
            return []
        return [*listing.problems, *read_listing(server, listing.entries, self.runtime)]

"""MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865) on the Tools page.

A tool whose ``_meta.ui.resourceUri`` names a ``ui://`` resource of its MCP server has a
view: HTML (``text/html;profile=mcp-app``) the dashboard reads with ``resources/read``
and shows in a frame. What the server sends is untrusted, so:

- the HTML is capped at :data:`MAX_HTML` bytes;
- each domain the resource declares (``_meta.ui.csp``) must be a plain ``https://`` or
  ``wss://`` origin (a host name, ``*.`` for subdomains, an optional port): anything else
  (``*``, a keyword, a ``;``, a path, a loopback or IP-literal host) refuses the whole
  app, naming the field;
- the HTML is served once, at an unguessable ``/apps/frame/TICKET``, with a
  ``Content-Security-Policy`` built from those domains alone (``default-src 'none'``,
  never ``'self'``: that would be the dashboard) and ``sandbox allow-scripts``, and the
  page frames it with ``sandbox="allow-scripts"``: the view runs in an opaque origin,
  so it cannot read the dashboard's ``sessionStorage`` (the token), its DOM or its API.

A ``srcdoc`` frame would inherit the dashboard's own policy (``script-src 'self'``: no
inline script), and loosening that policy for every page is what the frame avoids.

A view's ``tools/call`` (relayed by the page, see ``static/apps.js``) may name only a tool
of the same server whose ``_meta.ui.visibility`` includes ``"app"``, and runs through the
policy and the dashboard's approver like any call.
"""

from __future__ import annotations

import base64
import binascii
import collections
import logging
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from kairox import KairoxError, Runtime, ToolError, ToolSpec

from .actions import ActionError, call_tool

if TYPE_CHECKING:
    from kairox import Session

__all__ = [
    "CSP_FIELDS",
    "FRAME_PREFIX",
    "MAX_HTML",
    "MIME_TYPE",
    "AppCsp",
    "AppRecord",
    "Apps",
    "app_call",
    "content_security_policy",
    "open_app",
    "parse_csp",
    "resource_uri_of",
    "visibility_of",
]

logger = logging.getLogger(__name__)

MIME_TYPE = "text/html;profile=mcp-app"
#: bytes of HTML a view may have (single-file builds of real apps are well under this)
MAX_HTML = 2 * 1024 * 1024
#: domains per list of ``_meta.ui.csp``
MAX_DOMAINS = 32
#: where a view's HTML is served, once
FRAME_PREFIX = "/apps/frame/"
#: seconds a frame ticket stays valid (the page loads it at once)
TICKET_TTL = 60.0
#: open views remembered (for their calls); the oldest is forgotten first
MAX_APPS = 32
#: ``_meta.ui.csp`` lists -> what each becomes
CSP_FIELDS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
_SCHEMES = ("https", "wss")
_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


@attrs.frozen
class AppCsp:
    """The origins a view declared, each checked by :func:`parse_csp`."""

    connect: tuple[str, ...] = ()
    resource: tuple[str, ...] = ()
    frame: tuple[str, ...] = ()
    base_uri: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, list[str]]:
        return {
            "connectDomains": list(self.connect),
            "resourceDomains": list(self.resource),
            "frameDomains": list(self.frame),
            "baseUriDomains": list(self.base_uri),
        }


def resource_uri_of(meta: Mapping[str, Any] | None) -> str | None:
    """The ``ui://`` URI of a tool's view: ``_meta.ui.resourceUri`` (or the deprecated flat
    ``_meta["ui/resourceUri"]``); ``None`` when it names none or something else."""
    if not isinstance(meta, Mapping):
        return None
    ui = meta.get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, Mapping) else None
    if uri is None:
        uri = meta.get("ui/resourceUri")
    if isinstance(uri, str) and uri.startswith("ui://") and len(uri) <= 2048 and uri.isprintable():
        return uri
    return None


def visibility_of(meta: Mapping[str, Any] | None) -> tuple[str, ...]:
    """``_meta.ui.visibility`` (default ``("model", "app")``)."""
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    value = ui.get("visibility") if isinstance(ui, Mapping) else None
    if value is None:
        return ("model", "app")
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def _refuse(field: str, message: str) -> ActionError:
    return ActionError(f"{field}: {message}", 422)


def _origin(value: Any, field: str) -> str:
    """A declared domain as a CSP source: ``https|wss://host[:port]``, ``host`` a DNS name
    (``*.`` first for its subdomains). Parsed by hand: no regex runs over outside input."""
    if not isinstance(value, str):
        raise _refuse(field, f"expected a string, got {type(value).__name__}")
    if len(value) > 260 or not value.isascii() or not value.isprintable():
        raise _refuse(field, "is not a short ASCII origin")
    scheme, sep, rest = value.lower().partition("://")
    if not sep or scheme not in _SCHEMES:
        raise _refuse(field, f"{value!r} is not an https:// or wss:// origin")
    if rest.endswith("/"):
        rest = rest[:-1]
    host, colon, port = rest.partition(":")
    if colon and not (port.isdigit() and len(port) <= 5 and not port.startswith("0") and int(port) < 65536):
        raise _refuse(field, f"{value!r} has no valid port")
    labels = host.split(".")
    if labels[0] == "*":
        labels = labels[1:]
        if len(labels) < 2:
            raise _refuse(field, f"{value!r}: a wildcard needs a domain under it (https://*.example.com)")
    for label in labels:
        if not (0 < len(label) <= 63 and set(label) <= _LABEL_CHARS and label[0] != "-" and label[-1] != "-"):
            raise _refuse(field, f"{value!r} is not an origin (scheme://host[:port], nothing else)")
    if labels[-1].isdigit() or labels[-1] == "localhost":
        raise _refuse(field, f"{value!r}: an IP address or localhost is not an app's domain")
    return f"{scheme}://{host}{colon}{port}"


def parse_csp(meta: Mapping[str, Any] | None) -> AppCsp:
    """``_meta.ui.csp`` of a view's content: every domain checked (:func:`_origin`), or
    :class:`ActionError` naming the field. Absent means none (the restrictive default)."""
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    if ui is None:
        return AppCsp()
    if not isinstance(ui, Mapping):
        raise _refuse("_meta.ui", "expected an object")
    csp = ui.get("csp")
    if csp is None:
        return AppCsp()
    if not isinstance(csp, Mapping):
        raise _refuse("_meta.ui.csp", "expected an object")
    lists: list[tuple[str, ...]] = []
    for name in CSP_FIELDS:
        value = csp.get(name)
        field = f"_meta.ui.csp.{name}"
        if value is None:
            lists.append(())
            continue
        if not isinstance(value, list):
            raise _refuse(field, "expected a list of origins")
        if len(value) > MAX_DOMAINS:
            raise _refuse(field, f"more than {MAX_DOMAINS} origins")
        lists.append(tuple(dict.fromkeys(_origin(v, f"{field}[{i}]") for i, v in enumerate(value))))
    return AppCsp(*lists)


def content_security_policy(csp: AppCsp) -> str:
    """The view's ``Content-Security-Policy``: nothing but inline code, ``data:`` images and
    what it declared. No ``'self'`` (the frame's URL is the dashboard's origin), no
    ``'unsafe-eval'``, no forms, framed only by the dashboard, and an opaque origin
    (``sandbox allow-scripts``) even when the URL is opened on its own."""
    res = list(csp.resource)
    directives: Sequence[tuple[str, list[str]]] = (
        ("default-src", ["'none'"]),
        ("script-src", ["'unsafe-inline'", *res]),
        ("style-src", ["'unsafe-inline'", *res]),
        ("img-src", ["data:", *res]),
        ("font-src", res or ["'none'"]),
        ("media-src", ["data:", *res]),
        ("connect-src", list(csp.connect) or ["'none'"]),
        ("frame-src", list(csp.frame) or ["'none'"]),
        ("object-src", ["'none'"]),
        ("base-uri", list(csp.base_uri) or ["'none'"]),
        ("form-action", ["'none'"]),
        ("frame-ancestors", ["'self'"]),
        ("sandbox", ["allow-scripts"]),
    )
    return "; ".join(f"{name} {' '.join(sources)}" for name, sources in directives)


def view_document(uri: str, contents: Sequence[Any]) -> tuple[bytes, Mapping[str, Any] | None]:
    """The HTML (bytes, at most :data:`MAX_HTML`) and ``_meta`` of a ``resources/read`` result."""
    block = next((c for c in contents if c.uri == uri), None)
    if block is None and len(contents) == 1:
        block = contents[0]
    if block is None:
        raise _refuse("contents", f"resources/read of {uri} returned no content for it")
    mime = (block.mime_type or "").replace(" ", "").lower()
    if mime != MIME_TYPE:
        raise _refuse("mimeType", f"{block.mime_type!r}, expected {MIME_TYPE!r}")
    if block.text is not None:
        if len(block.text) > MAX_HTML:
            raise _refuse("text", f"the view is over {MAX_HTML} bytes")
        html = block.text.encode("utf-8", "replace")
    elif block.blob is not None:
        if len(block.blob) > (MAX_HTML + 2) // 3 * 4:
            raise _refuse("blob", f"the view is over {MAX_HTML} bytes")
        try:
            html = base64.b64decode(block.blob, validate=True)
        except (binascii.Error, ValueError):
            raise _refuse("blob", "is not base64") from None
    else:
        raise _refuse("contents", "neither text nor blob")
    if len(html) > MAX_HTML:
        raise _refuse("text", f"the view is over {MAX_HTML} bytes")
    meta = block.meta if isinstance(block.meta, Mapping) else None
    return html, meta


@attrs.frozen
class AppRecord:
    """An open view: whose it is (its calls may name only that server's tools)."""

    id: str
    server: str
    prefix: str
    tool: str
    resource_uri: str


@attrs.frozen
class Frame:
    html: bytes
    csp: str
    deadline: float


class Apps:
    """Open views and their one-time frame tickets, both bounded."""

    def __init__(self) -> None:
        self._apps: collections.OrderedDict[str, AppRecord] = collections.OrderedDict()
        self._frames: collections.OrderedDict[str, Frame] = collections.OrderedDict()

    def add(self, server: str, prefix: str, tool: str, uri: str, html: bytes, csp: str) -> tuple[AppRecord, str]:
        record = AppRecord(secrets.token_urlsafe(16), server, prefix, tool, uri)
        ticket = secrets.token_urlsafe(32)
        self._apps[record.id] = record
        self._frames[ticket] = Frame(html, csp, time.monotonic() + TICKET_TTL)
        for table in (self._apps, self._frames):
            while len(table) > MAX_APPS:
                table.popitem(last=False)
        return record, ticket

    def get(self, app_id: str) -> AppRecord | None:
        return self._apps.get(app_id)

    def take_frame(self, ticket: str) -> Frame | None:
        """The frame of ``ticket``, once, within :data:`TICKET_TTL`."""
        frame = self._frames.pop(ticket, None)
        if frame is None or frame.deadline < time.monotonic():
            return None
        return frame


def _find(rt: Runtime, name: str) -> ToolSpec | None:
    return next((s for s in rt.tools.specs() if name in (s.id, s.exported_name)), None)


def _server_of(spec: ToolSpec) -> str | None:
    return spec.provider[len("mcp:") :] if spec.provider.startswith("mcp:") else None


async def open_app(rt: Runtime, apps: Apps, name: str) -> dict[str, Any]:
    """Read the view of tool ``name`` from its server, check it, and hand out its frame."""
    spec = _find(rt, name)
    if spec is None:
        raise ActionError(f"no tool named {name!r}", 404)
    uri = resource_uri_of(spec.meta)
    server = _server_of(spec)
    if uri is None or server is None:
        raise ActionError(f"{spec.id} has no MCP App (no _meta.ui.resourceUri of its MCP server)", 404)
    try:
        from kairox_mcp import manager_of
    except ImportError:
        raise ActionError("kairox-mcp is not installed", 404) from None
    manager = manager_of(rt)
    try:
        contents = await manager.read_resource(server, uri)
    except (KairoxError, ToolError, KeyError) as exc:
        raise ActionError(f"cannot read {uri} from {server}: {exc}", 502) from None
    try:
        html, meta = view_document(uri, contents)
        declared = parse_csp(meta)
    except ActionError as exc:
        raise ActionError(f"the app of {spec.id} ({server} {uri}) is refused: {exc}", exc.status) from None
    policy = content_security_policy(declared)
    definition = manager.definitions.get(server)
    prefix = (definition.config.tool_prefix if definition is not None else None) or server
    tool_name = spec.id[len(prefix) + 1 :] if spec.id.startswith(prefix + ".") else spec.id
    record, ticket = apps.add(server, prefix, spec.id, uri, html, policy)
    # the spec asks hosts to log each view's CSP for review
    logger.info("MCP App %s of %s (%s): %s", uri, spec.id, server, policy)
    ui = meta.get("ui") if meta is not None else None
    return {
        "app": record.id,
        "frame": FRAME_PREFIX + ticket,
        "server": server,
        "resource_uri": uri,
        "csp": policy,
        "declared": declared.to_dict(),
        "prefers_border": bool(ui.get("prefersBorder", True)) if isinstance(ui, Mapping) else True,
        "tool": {"name": tool_name, "description": spec.description, "inputSchema": dict(spec.input_schema)},
    }


async def app_call(
    rt: Runtime, apps: Apps, app_id: str, name: str, arguments: dict[str, Any], session: Session | None
) -> dict[str, Any]:
    """A view's ``tools/call``: a tool of its own server that it may call, through the policy."""
    record = apps.get(app_id)
    if record is None:
        raise ActionError("no such app (closed, or the dashboard restarted)", 404)
    wanted = f"{record.prefix}.{name}"
    spec = next(
        (s for s in rt.tools.specs() if s.id == wanted and s.provider == f"mcp:{record.server}"),
        None,
    )
    if spec is None:
        raise ActionError(f"{record.server} has no tool {name!r}", 404)
    if "app" not in visibility_of(spec.meta):
        raise ActionError(f"{spec.id} is not callable from an app (its _meta.ui.visibility)", 403)
    logger.info("MCP App %s of %s calls %s", record.resource_uri, record.tool, spec.id)
    return await call_tool(rt, spec.id, arguments, session)

"""Where servers are declared, lowest precedence first.

1. Philont's ``mcp.json`` (``$PHILONT_MCP_CONFIG``, else ``~/.philont/mcp.json``;
   ``PHILONT_MCP_BROWSER=1`` appends the Playwright server).
2. The workspace ``.mcp.json`` (Claude Code / Cursor format).
3. ``kairox.toml`` ``[mcp_servers.NAME]`` (user, then workspace files).

A later source replaces a whole entry of the same name. Reading never raises:
each problem becomes a :class:`~kairox.ConfigError` (file + field path) and
drops only the entry it concerns.

The workspace's ``.mcp.json`` is read inside the workspace (:class:`kairox.files.Root`):
a link leading outside it, or to a device, is a config error naming the file, and
nothing of what it leads to is read. Philont's ``mcp.json`` is the user's own: read
wherever its links lead, as a regular file within a size cap.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from kairox import Capability, Domain, ServerState
from kairox.errors import ConfigError
from kairox.ext import Declared, WorkspaceTrust, expand_env, structure
from kairox.files import Refused, Root, read_user_file

from ._declared import browser_wanted, philont_config_path
from .config import McpServerConfig, ServerDefinition, normalize_transport

__all__ = [
    "PLAYWRIGHT_SERVER",
    "UnavailableServer",
    "load_definitions",
    "load_workspace_mcp_json",
    "parse_mcp_json",
    "parse_philont_mcp_json",
    "parse_server_table",
    "philont_config_path",
    "read_config_file",
]

logger = logging.getLogger(__name__)

#: what ``PHILONT_MCP_BROWSER=1`` appends (unless a server named "browser" exists)
PLAYWRIGHT_SERVER = McpServerConfig(
    command="npx",
    args=["-y", "@playwright/mcp@latest", "--headless", "--isolated"],
    domain=Domain.NETWORK,
    capability=Capability.EXECUTE,
    tool_timeout=60.0,
)

_MCP_JSON_TYPES = ("stdio", "http", "streamable-http", "streamable_http", "sse")
_MCP_JSON_KEYS = {"type", "command", "args", "env", "cwd", "url", "headers", "disabled", "enabled"}


@attrs.frozen
class _McpJsonServer:
    """One ``mcpServers`` entry of a ``.mcp.json`` (the fields kairox understands)."""

    type: str | None = None
    command: str | None = None
    args: list[str] = attrs.field(factory=list)
    env: dict[str, str] = attrs.field(factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    disabled: bool = False
    enabled: bool = True


def read_config_file(
    path: Path, errors: list[ConfigError], loads: Callable[[str], Any], kind: str, *, root: Root | None
) -> Any | None:
    """A config document (``kind``: ``"JSON"``, ``"TOML"``) parsed by ``loads``, read inside
    ``root`` (a file the workspace contains), or, with ``root`` ``None``, as a file of the
    user's own (:func:`kairox.files.read_user_file`: a regular file within a size cap).
    Missing is ``None`` alone; refused, unreadable, not UTF-8 or invalid adds a
    :class:`ConfigError` naming the file to ``errors`` and is ``None``."""
    try:
        raw = root.read_bytes(path) if root is not None else read_user_file(path)
    except FileNotFoundError:
        return None
    except Refused as exc:
        errors.append(ConfigError(exc.reason, file=str(path)))
        return None
    except OSError as exc:
        errors.append(ConfigError(f"cannot read: {exc.strerror or exc}", file=str(path)))
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        errors.append(ConfigError(f"cannot read: {exc}", file=str(path)))
        return None
    try:
        return loads(text)
    except (ValueError, RecursionError) as exc:  # json.JSONDecodeError and TOMLDecodeError are ValueErrors
        errors.append(ConfigError(f"invalid {kind}: {exc}", file=str(path)))
        return None


def _expand(value: Any, env: Mapping[str, str], path: str, file: str) -> Any:
    if isinstance(value, str):
        return expand_env(value, env, path=path, file=file)
    if isinstance(value, list):
        return [_expand(v, env, f"{path}[{i}]", file) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _expand(v, env, f"{path}.{k}", file) for k, v in value.items()}
    return value


def _to_config(fields: dict[str, Any], *, path: str, file: str) -> McpServerConfig:
    try:
        return structure(fields, McpServerConfig, path=path, file=file)
    except ConfigError:
        raise
    except Exception as exc:  # pragma: no cover - structure() wraps everything
        raise ConfigError(str(exc), file=file, path=path) from exc


def parse_mcp_json(
    data: Any, *, file: str, env: Mapping[str, str], origin: str = ".mcp.json"
) -> tuple[list[ServerDefinition], list[ConfigError]]:
    """Servers of a ``.mcp.json`` document (``{"mcpServers": {NAME: {...}}}``).

    ``type`` is stdio (default), ``http`` / ``streamable-http`` or ``sse``; an entry
    with a ``url`` and no ``type`` or ``command`` is streamable HTTP. ``${VAR}`` and
    ``${VAR:-default}`` expand in every string. Unknown keys are ignored (other
    tools add their own); a known key of the wrong type drops the entry.
    """
    errors: list[ConfigError] = []
    out: list[ServerDefinition] = []
    if not isinstance(data, dict):
        return [], [ConfigError("expected a JSON object with an `mcpServers` object", file=file)]
    servers = data.get("mcpServers", data.get("servers"))
    if servers is None:
        return [], []
    if not isinstance(servers, dict):
        return [], [ConfigError("expected an object of servers by name", file=file, path="mcpServers")]
    for name, raw in servers.items():
        path = f"mcpServers.{name}"
        if not name.strip():
            errors.append(ConfigError("a server needs a non-empty name", file=file, path=path))
            continue
        if not isinstance(raw, dict):
            errors.append(ConfigError("expected an object", file=file, path=path))
            continue
        unknown = sorted(set(raw) - _MCP_JSON_KEYS)
        if unknown:
            logger.debug("%s: %s: ignoring keys %s", file, path, ", ".join(unknown))
        known = {k: v for k, v in raw.items() if k in _MCP_JSON_KEYS}
        try:
            entry: _McpJsonServer = structure(_expand(known, env, path, file), _McpJsonServer, path=path, file=file)
            kind = entry.type
            if kind is None:
                kind = "streamable_http" if entry.url and not entry.command else "stdio"
            elif kind not in _MCP_JSON_TYPES:
                choices = ", ".join(repr(t) for t in _MCP_JSON_TYPES)
                raise ConfigError(f"expected one of {choices}, got {kind!r}", file=file, path=f"{path}.type")
            fields: dict[str, Any] = {"type": normalize_transport(kind)}
            for key in ("command", "cwd", "url"):
                if getattr(entry, key) is not None:
                    fields[key] = getattr(entry, key)
            for key in ("args", "env", "headers"):
                if getattr(entry, key):
                    fields[key] = getattr(entry, key)
            fields["enabled"] = entry.enabled and not entry.disabled
            config = _to_config(fields, path=path, file=file)
        except ConfigError as exc:
            errors.extend(exc.errors)
            continue
        out.append(ServerDefinition(name=str(name), config=config, source=file, origin=origin))
    return out, errors


def parse_server_table(raw: Any, *, file: str, path: str, env: Mapping[str, str]) -> McpServerConfig:
    """One ``[mcp_servers.NAME]`` table of kairox's own schema (what :func:`kairox_mcp.codex_server`
    makes of a Codex entry), ``${VAR}`` expanded from ``env``. Raises :class:`ConfigError`
    naming the file and the field."""
    if not isinstance(raw, dict):
        raise ConfigError("expected a table", file=file, path=path)
    return _to_config(_expand(raw, env, path, file), path=path, file=file)


def parse_philont_mcp_json(
    data: Any, *, file: str, env: Mapping[str, str]
) -> tuple[list[ServerDefinition], list[ConfigError]]:
    """Servers of a Philont ``mcp.json``: ``{"servers": [entry, ...]}`` or a bare list.

    Entry: ``{name, transport: {transport: stdio|sse|http, command, args, env, cwd | url,
    headers}, timeout (ms), toolPrefix, domain, capability, enabled}``.
    """
    errors: list[ConfigError] = []
    out: list[ServerDefinition] = []
    items = data if isinstance(data, list) else data.get("servers") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return [], [ConfigError('expected {"servers": [...]} or a list of servers', file=file)]
    for index, item in enumerate(items):
        path = f"servers[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].strip():
            errors.append(ConfigError("expected an object with a `name`", file=file, path=path))
            continue
        name = item["name"]
        transport = item.get("transport")
        if not isinstance(transport, dict):
            errors.append(ConfigError("expected an object", file=file, path=f"{path}.transport"))
            continue
        try:
            t = _expand(transport, env, f"{path}.transport", file)
            kind = t.get("transport", t.get("type", "stdio"))
            if kind not in _MCP_JSON_TYPES:
                choices = ", ".join(repr(k) for k in _MCP_JSON_TYPES)
                raise ConfigError(f"expected one of {choices}", file=file, path=f"{path}.transport.transport")
            fields: dict[str, Any] = {"type": normalize_transport(kind)}
            for key in ("command", "args", "env", "cwd", "url", "headers"):
                if key in t:
                    fields[key] = t[key]
            timeout = item.get("timeout")
            if timeout is not None:
                if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
                    raise ConfigError("expected a number of milliseconds > 0", file=file, path=f"{path}.timeout")
                fields["tool_timeout"] = timeout / 1000.0
            for src, dst in (("toolPrefix", "tool_prefix"), ("domain", "domain"), ("capability", "capability")):
                if item.get(src) is not None:
                    fields[dst] = item[src]
            if item.get("enabled") is False or item.get("disabled") is True:
                fields["enabled"] = False
            config = _to_config(fields, path=path, file=file)
        except ConfigError as exc:
            for err in exc.errors:
                # field paths of the flattened entry point into `transport` for transport keys
                errors.append(err)
            continue
        out.append(ServerDefinition(name=name, config=config, source=file, origin="philont"))
    return out, errors


@attrs.frozen
class UnavailableServer:
    """A declared server that cannot start: held until the workspace is trusted
    (``state`` untrusted) or broken (``state`` failed: an unset ``${VAR}``, a bad field)."""

    name: str
    source: str
    state: ServerState
    reason: str
    #: the prefix its tools would have (to explain a call of one of them)
    prefix: str = ""
    origin: str = ""


def _prefix_of(name: str, raw: Any) -> str:
    if isinstance(raw, Mapping):
        for key in ("tool_prefix", "toolPrefix"):
            value = raw.get(key)
            if isinstance(value, str) and value.strip():
                return value
    return name


def load_workspace_mcp_json(
    path: Path, *, env: Mapping[str, str], trust: WorkspaceTrust | None, root: Root | None = None
) -> tuple[list[ServerDefinition], list[UnavailableServer], list[ConfigError]]:
    """A workspace ``.mcp.json``, entry by entry: an entry the user's trust does not cover is
    held (unexpanded); one that fails to parse or expand is a failed server, not a silent loss.
    Read inside the workspace's contained ``root`` (default: the file's folder, the workspace)."""
    errors: list[ConfigError] = []
    contained = root if root is not None else Root(path.parent, label="the workspace")
    data = read_config_file(path, errors, json.loads, "JSON", root=contained)
    if data is None:
        return [], [], errors
    file = str(path)
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):  # let the parser say what is wrong with the document
        defs, errs = parse_mcp_json(data, file=file, env=env)
        return defs, [], errors + errs
    out: list[ServerDefinition] = []
    held: list[UnavailableServer] = []
    for name, raw in servers.items():
        prefix = _prefix_of(str(name), raw)
        if trust is not None and isinstance(raw, dict):
            key = f".mcp.json:{name}"
            item = Declared.entry(key, "mcp_server", str(name), file, raw, workspace=path.parent, env=env)
            if not trust.check(item).allowed:
                reason = trust.explain(item.key)
                held.append(UnavailableServer(str(name), file, ServerState.UNTRUSTED, reason, prefix, ".mcp.json"))
                continue
        defs, errs = parse_mcp_json({"mcpServers": {name: raw}}, file=file, env=env)
        out.extend(defs)
        if errs and not defs and isinstance(name, str) and name.strip():
            reason = "; ".join(str(e) for e in errs)
            held.append(UnavailableServer(name, file, ServerState.FAILED, reason, prefix, ".mcp.json"))
        errors.extend(errs)
    return out, held, errors


def load_definitions(
    *,
    workspace: Path,
    env: Mapping[str, str],
    toml_servers: Mapping[str, McpServerConfig],
    toml_source: Mapping[str, str],
    home: Path | None = None,
    trust: WorkspaceTrust | None = None,
    unavailable: list[UnavailableServer] | None = None,
    workspace_root: Root | None = None,
) -> tuple[dict[str, ServerDefinition], list[ConfigError]]:
    """Every configured server by name (later sources replace earlier ones) and the problems found.

    With ``trust``, the workspace ``.mcp.json`` entries it does not cover are not
    expanded or defined; they (and entries that failed) are appended to ``unavailable``.
    ``workspace_root`` is what the workspace's ``.mcp.json`` is read inside
    (:attr:`kairox.Runtime.workspace_root`; default: the workspace)."""
    errors: list[ConfigError] = []
    merged: dict[str, ServerDefinition] = {}

    philont_path = philont_config_path(env, home)
    data = read_config_file(philont_path, errors, json.loads, "JSON", root=None)
    if data is not None:
        defs, errs = parse_philont_mcp_json(data, file=str(philont_path), env=env)
        errors.extend(errs)
        merged.update((d.name, d) for d in defs)
    if browser_wanted(env) and "browser" not in merged:
        merged["browser"] = ServerDefinition(
            "browser", PLAYWRIGHT_SERVER, source="PHILONT_MCP_BROWSER", origin="philont"
        )

    root = workspace_root if workspace_root is not None else Root(workspace, label="the workspace")
    defs, held, errs = load_workspace_mcp_json(workspace / ".mcp.json", env=env, trust=trust, root=root)
    errors.extend(errs)
    merged.update((d.name, d) for d in defs)
    if unavailable is not None:
        unavailable.extend(held)  # a same-named server of the user's own stays (the manager notes it)

    for name, config in toml_servers.items():
        merged[name] = ServerDefinition(name, config, source=toml_source.get(name, ""), origin="kairox.toml")
    return merged, errors

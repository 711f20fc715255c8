"""Agent Plugins 1.0.0 ``mcp.json`` (§7.2): one closed object, one closed variant per server.

Failure boundaries are the specification's (§7.2.2): ``mcp.json`` that is not a regular
file of the plugin, not JSON, not the 1.0.0 MCP schema or not closed disables the plugin's
MCP servers (one error, the rest of the plugin loads); a server entry that breaks a rule of
its variant is left out with an error naming the file and the field (the other servers
load). Nothing here starts anything.

Each server becomes a kairox server table (``mcp_server`` contribution):

- ``stdio``: ``command`` a bare executable name (found on the server's ``PATH``) or a
  ``./`` path resolved inside the plugin, never expanded; ``args``, ``env`` values and
  ``cwd`` with ``${PLUGIN_ROOT}`` / ``${PLUGIN_DATA}`` expanded (§9.2); ``cwd`` the plugin
  root when absent, else resolved and kept inside the root or the data folder; ``env`` then
  sets ``PLUGIN_ROOT`` and ``PLUGIN_DATA`` (§9.1);
- ``streamable-http`` / ``sse``: ``url`` (absolute http(s), no user information or
  fragment, plain http only to ``localhost`` or a loopback address) and ``headers``, never
  expanded.

Every string is written with :func:`~kairox_manifests.plugindata.literal`, so kairox's own
``${VAR}`` expansion of server tables leaves it as the plugin wrote it (§9.2: no other
expansion). An ``env`` value ``""`` is left out with an error: a kairox server table reads
``""`` as "the same variable of kairox's environment", which is not what the plugin says.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kairox.ext import describe_value
from kairox.files import Refused, Root
from kairox_cli import is_loopback_host

from .._schema import join, read_json
from ..errors import ManifestError, Problem
from ..model import Contribution
from ..paths import is_inside, refusal, resolve_inside
from ..plugindata import expand_placeholders, literal
from ._common import Collector

__all__ = ["MCP_FILE", "MCP_SCHEMA", "mcp_servers", "server_table"]

MCP_FILE = "mcp.json"
MCP_SCHEMA = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"
_VARIANTS = {
    "stdio": ("type", "command", "args", "env", "cwd"),
    "streamable-http": ("type", "url", "headers"),
    "sse": ("type", "url", "headers"),
}
#: the transport names of kairox's server tables
_KAIROX_TYPES = {"stdio": "stdio", "streamable-http": "streamable_http", "sse": "sse"}
_RESERVED_ENV = ("PLUGIN_ROOT", "PLUGIN_DATA")
#: RFC 9110 ``tchar``: what a header name is made of
_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def mcp_servers(root: Root, out: Collector, *, data: Path, schema_prefix: str) -> None:
    """The servers of the plugin's ``mcp.json`` into ``out``; what keeps them (or one of them)
    from loading is an error in ``out.problems``, never an exception. ``data`` is the plugin's
    data folder, ``schema_prefix`` what every Agent Plugins ``$schema`` starts with."""
    problems = out.problems
    try:
        kind = root.kind(MCP_FILE)
    except Refused as exc:  # §4.1: a fixed location outside the root invalidates that component type
        problems.append(refusal(exc, "mcp_server"))
        return
    if kind == "missing":
        return
    file = root.path / MCP_FILE
    if kind != "file":
        problems.append(_error(f"not a regular file ({kind}); the plugin's MCP servers are not loaded", file, ""))
        return
    try:
        data_doc = read_json(file, root)
        servers = _top_level(data_doc, str(file), schema_prefix)
    except ManifestError as exc:
        problems.append(_error(f"{exc.message}; the plugin's MCP servers are not loaded", file, exc.path))
        return
    for name, entry in servers.items():
        path = join("mcpServers", name)
        try:
            if not name.strip():
                raise ManifestError("a server needs a non-empty name", file=str(file), path=path)
            table = server_table(entry, root=root, data=data, file=str(file), path=path)
        except ManifestError as exc:
            problems.append(_error(f"{exc.message}; server not loaded", file, exc.path))
            continue
        out.add(Contribution("mcp_server", name, file, table), file=str(file), path=path)


def _error(message: str, file: Path, path: str) -> Problem:
    return Problem(message, file=str(file), path=path, severity="error")


def _top_level(data: Any, file: str, schema_prefix: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ManifestError(f"expected a JSON object, got {describe_value(data)}", file=file)
    schema = data.get("$schema")
    if "$schema" not in data:
        raise ManifestError(f"required field is missing (write {MCP_SCHEMA!r})", file=file, path="$schema")
    if schema != MCP_SCHEMA:
        if isinstance(schema, str) and schema.startswith(schema_prefix):
            why = "targets another Agent Plugins version than plugin.json (1.0.0), or one kairox does not read"
        else:
            why = "is not an Agent Plugins MCP configuration schema"
        raise ManifestError(f"{describe_value(schema)} {why} (expected {MCP_SCHEMA!r})", file=file, path="$schema")
    for key in data:
        if key not in ("$schema", "mcpServers"):
            raise ManifestError(
                "unknown field: mcp.json holds only $schema and mcpServers", file=file, path=join("", key)
            )
    if "mcpServers" not in data:
        raise ManifestError("required field is missing", file=file, path="mcpServers")
    servers = data["mcpServers"]
    if not isinstance(servers, dict):
        raise ManifestError(
            f"expected an object of servers by name, got {describe_value(servers)}", file=file, path="mcpServers"
        )
    return servers


def _string(value: Any, *, file: str, path: str, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise ManifestError(f"expected a string, got {describe_value(value)}", file=file, path=path)
    if not empty and not value:
        raise ManifestError("expected a non-empty string", file=file, path=path)
    return value


def _strings(value: Any, *, file: str, path: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ManifestError(f"expected an object of strings, got {describe_value(value)}", file=file, path=path)
    for k, v in value.items():
        _string(v, file=file, path=join(path, k))
    return value


def server_table(entry: Any, *, root: Root, data: Path, file: str, path: str) -> dict[str, Any]:
    """The kairox server table of one ``mcpServers`` entry (see the module), or a
    :class:`ManifestError` naming the field that breaks its variant's rules."""
    if not isinstance(entry, dict):
        raise ManifestError(f"expected a server object, got {describe_value(entry)}", file=file, path=path)
    if "type" not in entry:
        raise ManifestError(
            f"required field is missing (one of {', '.join(_VARIANTS)})", file=file, path=join(path, "type")
        )
    kind = entry["type"]
    if not isinstance(kind, str) or kind not in _VARIANTS:
        raise ManifestError(
            f"expected one of {', '.join(_VARIANTS)}, got {describe_value(kind)}", file=file, path=join(path, "type")
        )
    for key in entry:
        if key not in _VARIANTS[kind]:
            raise ManifestError(f"not a field of a {kind} server", file=file, path=join(path, key))
    if kind == "stdio":
        return _stdio(entry, root=root, data=data, file=file, path=path)
    return _remote(entry, kind, file=file, path=path)


def _stdio(entry: dict[str, Any], *, root: Root, data: Path, file: str, path: str) -> dict[str, Any]:
    values = {"PLUGIN_ROOT": str(root.real), "PLUGIN_DATA": str(data)}
    if "command" not in entry:
        raise ManifestError("required field is missing", file=file, path=join(path, "command"))
    command = _command(entry["command"], root, file=file, path=join(path, "command"))
    args: list[str] = []
    if "args" in entry:
        raw_args = entry["args"]
        if not isinstance(raw_args, list):
            raise ManifestError(
                f"expected a list of strings, got {describe_value(raw_args)}", file=file, path=join(path, "args")
            )
        for i, arg in enumerate(raw_args):
            text = _string(arg, file=file, path=join(join(path, "args"), i))
            _passable(text, file=file, path=join(join(path, "args"), i))
            args.append(literal(expand_placeholders(text, values)))
    env: dict[str, str] = {}
    for key, value in _strings(entry.get("env", {}), file=file, path=join(path, "env")).items():
        kpath = join(join(path, "env"), key)
        if key in _RESERVED_ENV:
            raise ManifestError(f"{key} is set by the client; a server may not set it", file=file, path=kpath)
        if not key or "=" in key or "\x00" in key:
            raise ManifestError(f"{key!r} is not an environment variable name", file=file, path=kpath)
        _passable(value, file=file, path=kpath)
        if value == "":
            raise ManifestError(
                "an empty value cannot be passed on: kairox reads an empty env value as "
                "'the same variable of kairox's environment'",
                file=file,
                path=kpath,
            )
        env[key] = literal(expand_placeholders(value, values))
    cwd = root.real
    if "cwd" in entry:
        cwd = _cwd(_string(entry["cwd"], file=file, path=join(path, "cwd")), root, data, file, join(path, "cwd"))
    # §9.1: after the server's own env, the client's PLUGIN_ROOT and PLUGIN_DATA
    env.update({k: literal(v) for k, v in values.items()})
    table: dict[str, Any] = {"type": "stdio", "command": literal(command), "cwd": literal(str(cwd)), "env": env}
    if args:
        table["args"] = args
    return table


def _passable(text: str, *, file: str, path: str) -> None:
    if "\x00" in text:
        raise ManifestError("holds a NUL character, which no process can be given", file=file, path=path)


def _command(value: Any, root: Root, *, file: str, path: str) -> str:
    """§7.2.1: one executable token, a bare name or a ``./`` path inside the plugin; never expanded."""
    command = _string(value, file=file, path=path, empty=False)
    _passable(command, file=file, path=path)
    if command.startswith("./"):
        return str(resolve_inside(root, command, file=file, path=path, require_dot_slash=True, allow_root=False))
    if "/" in command or "\\" in command:
        raise ManifestError(
            f"{command!r} is neither a bare executable name nor a path starting with ./ (inside the plugin)",
            file=file,
            path=path,
        )
    if command in (".", "..") or any(c.isspace() for c in command):
        raise ManifestError(
            f"{command!r} is not one executable (a bare name; arguments go in args)", file=file, path=path
        )
    return command


def _cwd(value: str, root: Root, data: Path, file: str, path: str) -> Path:
    """§7.2.1: ``./...``, ``${PLUGIN_ROOT}[/...]`` or ``${PLUGIN_DATA}[/...]``, expanded, then
    resolved (links followed) and kept inside the plugin root or the data folder."""
    values = {"PLUGIN_ROOT": str(root.real), "PLUGIN_DATA": str(data)}
    _passable(value, file=file, path=path)
    if value.startswith("./"):
        base, text = "root", os.path.join(str(root.real), expand_placeholders(value, values))
    elif value == "${PLUGIN_ROOT}" or value.startswith("${PLUGIN_ROOT}/"):
        base, text = "root", expand_placeholders(value, values)
    elif value == "${PLUGIN_DATA}" or value.startswith("${PLUGIN_DATA}/"):
        base, text = "data", expand_placeholders(value, values)
    else:
        raise ManifestError(f"{value!r} must start with ./, ${{PLUGIN_ROOT}} or ${{PLUGIN_DATA}}", file=file, path=path)
    if base == "root":
        try:
            return root.locate(text)
        except Refused as exc:
            raise ManifestError(f"{value!r}: {exc.reason}", file=file, path=path) from None
    real_data = Path(os.path.realpath(data))
    real = Path(os.path.realpath(text))
    if not is_inside(real, real_data):
        raise ManifestError(f"{value!r} leads to {real}, outside the plugin's data folder", file=file, path=path)
    return real


def _remote(entry: dict[str, Any], kind: str, *, file: str, path: str) -> dict[str, Any]:
    if "url" not in entry:
        raise ManifestError("required field is missing", file=file, path=join(path, "url"))
    url = _string(entry["url"], file=file, path=join(path, "url"), empty=False)
    check_url(url, file=file, path=join(path, "url"))
    table: dict[str, Any] = {"type": _KAIROX_TYPES[kind], "url": literal(url)}
    if "headers" in entry:
        hpath = join(path, "headers")
        headers = _strings(entry["headers"], file=file, path=hpath)
        seen: dict[str, str] = {}
        for name, value in headers.items():
            check_header(name, value, file=file, path=join(hpath, name))
            if name.lower() in seen:
                raise ManifestError(
                    f"the header {name!r} is also given as {seen[name.lower()]!r}", file=file, path=join(hpath, name)
                )
            seen[name.lower()] = name
        if headers:
            table["headers"] = {k: literal(v) for k, v in headers.items()}
    return table


def check_url(url: str, *, file: str, path: str) -> None:
    """§7.2.1: an absolute http(s) URL, no user information or fragment; plain http only to
    ``localhost`` or a loopback address."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError as exc:
        raise ManifestError(f"{url!r} is not a URL ({exc})", file=file, path=path) from None
    if parts.scheme not in ("http", "https") or not host:
        raise ManifestError(f"{url!r} is not an absolute http(s) URL", file=file, path=path)
    if "@" in parts.netloc:
        raise ManifestError("a URL may not hold user information", file=file, path=path)
    if "#" in url:
        raise ManifestError("a URL may not hold a fragment", file=file, path=path)
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        raise ManifestError(f"{url!r} holds blanks or control characters", file=file, path=path)
    if parts.scheme == "http" and not is_loopback_host(host):
        raise ManifestError(
            f"plain http is allowed only to localhost or a loopback address, not {host!r}; use https",
            file=file,
            path=path,
        )


def check_header(name: str, value: str, *, file: str, path: str) -> None:
    """An HTTP header field (RFC 9110): a token for a name; a value of visible characters,
    spaces and tabs, without blanks at either end."""
    if not name or any(c not in _TCHAR for c in name):
        raise ManifestError(f"{name!r} is not an HTTP header name", file=file, path=path)
    if value != value.strip(" \t") or any(
        (ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F or ord(c) > 0xFF for c in value
    ):
        raise ManifestError(f"{value!r} is not an HTTP header value", file=file, path=path)

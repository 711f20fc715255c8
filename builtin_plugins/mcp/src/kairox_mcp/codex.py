"""Codex's MCP server schema as a kairox ``[mcp_servers]`` entry: the one place that maps it.

Codex reads ``[mcp_servers.NAME]`` of ``config.toml`` and each entry of a Codex plugin's
``.mcp.json`` with one schema (``codex-rs/config/src/mcp_types.rs``, ``RawMcpServerConfig``;
a plugin's entries first pass ``codex-rs/codex-mcp/src/plugin_config.rs``, which drops
``type`` and reads ``oauth.clientId`` as ``client_id``):

========================================= ===========================================================
Codex key                                 kairox entry
========================================= ===========================================================
``command``, ``args``, ``env``, ``cwd``   the same (a stdio server)
``env_vars``                              the same; ``{name, source}`` entries by ``name`` (``source``
                                          ``"remote"`` is reported: kairox has no remote executor)
``url``                                   the same (a streamable HTTP server)
``http_headers``                          ``headers`` (``headers``, kairox's name, is merged below them)
``env_http_headers`` (header -> variable) ``headers``: ``"${VAR}"``
``bearer_token_env_var``                  ``headers``: ``Authorization = "Bearer ${VAR}"``
``startup_timeout_sec`` | ``_ms``         ``startup_timeout`` (seconds; ``_sec`` wins, as in Codex)
``tool_timeout_sec``                      ``tool_timeout``
``enabled``, ``required``                 the same
``enabled_tools``, ``disabled_tools``     the same
``scopes``, ``oauth.client_id``           ``oauth.scopes``, ``oauth.client_id``
========================================= ===========================================================

A header read from a variable becomes a ``${VAR}`` reference, so what reads the entry (the
trust prompt, its fingerprint, ``kairox mcp list``) names the variable, and an unset one is
an error naming it (Codex leaves such a header out). Codex's own refusals are kairox's
(:class:`~kairox.ConfigError` naming the file and field): a value of the wrong type, an
inline ``bearer_token``, an HTTP key on a stdio server and the reverse, neither ``command``
nor ``url``. Every other key (``supports_parallel_tool_calls``, ``default_tools_approval_mode``,
``tools``, ``oauth_resource``, ``experimental_environment``, ``name``, ``type``, unknown keys)
is not taken over and is reported, naming the field. Strings are kept as written.

This module never imports ``mcp``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from kairox.errors import ConfigError

__all__ = ["CODEX_SERVER_KEYS", "CodexServer", "codex_server", "type_name"]

#: every key of Codex's server schema, and what kairox makes of it ("" : taken over)
CODEX_SERVER_KEYS: dict[str, str] = {
    "command": "",
    "args": "",
    "env": "",
    "env_vars": "",
    "cwd": "",
    "url": "",
    "http_headers": "",
    "env_http_headers": "",
    "bearer_token_env_var": "",
    "bearer_token": "",
    "startup_timeout_sec": "",
    "startup_timeout_ms": "",
    "tool_timeout_sec": "",
    "enabled": "",
    "required": "",
    "enabled_tools": "",
    "disabled_tools": "",
    "scopes": "",
    "oauth": "",
    "supports_parallel_tool_calls": "not taken over: kairox decides which calls run at once",
    "default_tools_approval_mode": "not taken over: kairox's policy decides each call",
    "tools": "not taken over: kairox's policy decides each call (per-tool approval_mode)",
    "oauth_resource": "not taken over: kairox's OAuth has no resource parameter",
    "experimental_environment": "not taken over: kairox starts servers on this machine",
    "name": "ignored (a legacy display name; Codex ignores it too)",
    "type": "",
}

_STDIO_ONLY = ("args", "env", "env_vars", "cwd")
_HTTP_ONLY = ("url", "bearer_token_env_var", "http_headers", "env_http_headers", "oauth", "oauth_resource")
_TRANSPORTS = ("stdio", "http", "streamable_http", "streamable-http")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@attrs.frozen
class CodexServer:
    """One Codex server entry as kairox reads it."""

    #: the kairox ``[mcp_servers.NAME]`` table (strings as the source wrote them)
    fields: dict[str, Any]
    #: the header names whose value is a ``${VAR}`` reference made from ``env_http_headers``
    #: or ``bearer_token_env_var`` (not text of the source)
    references: tuple[str, ...] = ()
    #: each key of the source kairox does not take over, naming the file and field
    problems: tuple[ConfigError, ...] = ()


def type_name(value: Any) -> str:
    """What JSON or TOML calls ``value``'s type, for errors (``an object``, ``a list``)."""
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)


def _field(path: str, key: str) -> str:
    return f"{path}.{key}" if path and key else path or key


class _Reader:
    def __init__(self, raw: Mapping[str, Any], file: str, path: str) -> None:
        self.raw, self.file, self.path = raw, file, path
        self.problems: list[ConfigError] = []

    def error(self, message: str, key: str) -> ConfigError:
        return ConfigError(message, file=self.file, path=_field(self.path, key))

    def report(self, message: str, key: str) -> None:
        self.problems.append(self.error(message, key))

    def get(self, key: str, kind: type | tuple[type, ...], what: str) -> Any:
        value = self.raw.get(key)
        if value is None:
            return None
        if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
            raise self.error(f"expected {what}, got {type_name(value)}", key)
        return value

    def strings(self, key: str) -> list[str] | None:
        value = self.get(key, list, "a list of strings")
        for i, item in enumerate(value or ()):
            if not isinstance(item, str):
                raise self.error(f"expected a string, got {type_name(item)}", f"{key}[{i}]")
        return None if value is None else list(value)

    def table(self, key: str) -> dict[str, str] | None:
        value = self.get(key, dict, "a table of strings")
        for k, item in (value or {}).items():
            if not isinstance(item, str):  # never shown: env and header tables hold secrets
                raise self.error(f"expected a string, got {type_name(item)}", f"{key}.{k}")
        return None if value is None else dict(value)

    def seconds(self, key: str, scale: float = 1.0) -> float | None:
        value = self.get(key, (int, float), "a number")
        if value is None:
            return None
        if not value > 0:
            raise self.error(f"expected a number > 0, got {value!r}", key)
        seconds = value / scale
        return int(seconds) if float(seconds).is_integer() else seconds

    def variable(self, key: str, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise self.error(f"expected an environment variable name, got {value!r}", key)
        return "${" + value + "}"


def _env_vars(r: _Reader) -> list[str] | None:
    value = r.get("env_vars", list, "a list of variable names")
    if value is None:
        return None
    out: list[str] = []
    for i, item in enumerate(value):
        key = f"env_vars[{i}]"
        if isinstance(item, dict):
            extra = sorted(set(item) - {"name", "source"})
            if extra:
                raise r.error(f"unknown key {extra[0]!r}", f"{key}.{extra[0]}")
            name, source = item.get("name"), item.get("source")
            if not isinstance(name, str):
                raise r.error(f"expected a variable name, got {type_name(name)}", f"{key}.name")
            if source not in (None, "local", "remote"):
                raise r.error(f"unsupported env_vars source {source!r}; expected 'local' or 'remote'", f"{key}.source")
            if source == "remote":
                r.report("not taken over: kairox has no remote executor to read it from", f"{key}.source")
                continue
            item = name
        if not isinstance(item, str):
            raise r.error(f"expected a variable name, got {type_name(item)}", key)
        out.append(item)
    return out


def _oauth(r: _Reader, scopes: list[str] | None) -> dict[str, Any] | None:
    value = r.get("oauth", dict, "a table")
    out: dict[str, Any] = {}
    for key, item in (value or {}).items():
        if key in ("client_id", "clientId"):  # clientId: a plugin's name for it (plugin_config.rs)
            if not isinstance(item, str):
                raise r.error(f"expected a string, got {type_name(item)}", f"oauth.{key}")
            out.setdefault("client_id", item)
        elif key == "callbackPort":
            r.report(
                "ignored: Codex uses its global OAuth callback settings, kairox any free port", "oauth.callbackPort"
            )
        else:
            r.report("not a key of Codex's oauth table; ignored", f"oauth.{key}")
    if scopes is not None:
        out["scopes"] = scopes
    return out or None


def codex_server(raw: Mapping[str, Any], *, file: str, path: str = "") -> CodexServer:
    """``raw`` (one entry of Codex's schema) as a kairox entry; raises :class:`ConfigError`
    naming the file and the field (``path``: the entry's own) where Codex refuses it."""
    r = _Reader(raw, file, path)
    command = r.get("command", str, "a string")
    url = r.get("url", str, "a string")
    if r.raw.get("bearer_token") is not None:
        raise r.error(
            "an inline token is not allowed: name the variable holding it (bearer_token_env_var)", "bearer_token"
        )
    if command is not None:
        for key in _HTTP_ONLY:
            if r.raw.get(key) is not None:
                raise r.error("not supported for a stdio server (it has `command`)", key)
    elif url is not None:
        for key in _STDIO_ONLY:
            if r.raw.get(key) is not None:
                raise r.error("not supported for a streamable HTTP server (it has `url`)", key)
    else:
        raise r.error("a server needs `command` (stdio) or `url` (streamable HTTP)", "")
    fields: dict[str, Any] = {"type": "stdio" if command is not None else "streamable_http"}
    declared = r.raw.get("type")
    # a plugin's entry may say its type (plugin_config.rs drops it): the same transport is no news
    same = declared == "stdio" if command is not None else declared in _TRANSPORTS[1:]
    if declared is not None and not same:
        r.report(f"ignored: Codex reads the transport from `command` or `url` ({fields['type']})", "type")
    references: list[str] = []
    if command is not None:
        fields["command"] = command
        for key, value in (("args", r.strings("args")), ("env", r.table("env")), ("env_vars", _env_vars(r))):
            if value:
                fields[key] = value
        cwd = r.get("cwd", str, "a string")
        if cwd is not None:
            fields["cwd"] = cwd
        if r.raw.get("headers") is not None:
            r.table("headers")
            r.report("ignored: a stdio server sends no headers", "headers")
        if r.raw.get("scopes") is not None:
            r.report("ignored: a stdio server has no OAuth", "scopes")
    else:
        fields["url"] = url
        headers: dict[str, str] = {**(r.table("headers") or {}), **(r.table("http_headers") or {})}
        for header, var in (r.table("env_http_headers") or {}).items():
            headers[header] = r.variable(f"env_http_headers.{header}", var)
            references.append(header)
        bearer = r.get("bearer_token_env_var", str, "a string")
        if bearer is not None:
            # the bearer token replaces any Authorization header, as McpServerConfig.resolve_headers does
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            references = [h for h in references if h.lower() != "authorization"]
            headers["Authorization"] = "Bearer " + r.variable("bearer_token_env_var", bearer)
            references.append("Authorization")
        if headers:
            fields["headers"] = headers
        oauth = _oauth(r, r.strings("scopes"))
        if oauth is not None:
            fields["oauth"] = oauth
    startup = r.seconds("startup_timeout_sec")
    startup_ms = r.seconds("startup_timeout_ms", scale=1000)
    if startup is not None and startup_ms is not None:
        r.report("ignored: startup_timeout_sec is set (it wins, as in Codex)", "startup_timeout_ms")
    if startup is not None or startup_ms is not None:
        fields["startup_timeout"] = startup if startup is not None else startup_ms
    tool = r.seconds("tool_timeout_sec")
    if tool is not None:
        fields["tool_timeout"] = tool
    for key in ("enabled", "required"):
        flag = r.get(key, bool, "true or false")
        if flag is not None:
            fields[key] = flag
    for key in ("enabled_tools", "disabled_tools"):
        names = r.strings(key)
        if names is not None:
            fields[key] = names
    for key in raw:
        if key in ("headers", "scopes") or CODEX_SERVER_KEYS.get(key) == "":
            continue
        reason = CODEX_SERVER_KEYS.get(key)
        r.report(reason or "not a key of Codex's server schema; ignored", str(key))
    return CodexServer(fields, tuple(references), tuple(r.problems))

"""The MCP servers other clients configured, as ``kairox.toml`` entries (``kairox mcp import``).

Reading, in order (workspace files first, then the user's):

=============== ==================================================================
kind            files
=============== ==================================================================
claude-code     ``.mcp.json``; ``~/.claude.json`` (``projects[WORKSPACE].mcpServers``,
                then the top-level ``mcpServers``; ``$CLAUDE_CONFIG_DIR/.claude.json``)
cursor          ``.cursor/mcp.json``, ``~/.cursor/mcp.json``
vscode          ``.vscode/mcp.json``, the user profile's ``Code/User/mcp.json``
codex           ``.codex/config.toml``, ``$CODEX_HOME/config.toml`` (``~/.codex``)
gemini          ``.gemini/settings.json``, ``~/.gemini/settings.json``
zed             ``.zed/settings.json``, ``$XDG_CONFIG_HOME/zed/settings.json``
claude-desktop  ``$XDG_CONFIG_HOME/Claude/claude_desktop_config.json`` (macOS:
                ``~/Library/Application Support/Claude/``; Windows: ``%APPDATA%\\Claude\\``)
windsurf        ``~/.codeium/windsurf/mcp_config.json``
=============== ==================================================================

A file in the workspace is read inside the workspace (:class:`kairox.files.Root`: a link
leading outside it, or a device, is an error naming the file, and nothing it leads to is
read); the user's own files are read wherever their links lead, as regular files within a
size cap. Every JSON file is read as JSONC (comments and trailing commas, as VS Code, Zed and
Gemini CLI write them). Each client's variable syntax becomes kairox's ``${VAR}``; a
literal secret (an ``env`` value, an ``Authorization`` header, a token in a URL or an
argument) becomes a ``${VAR}`` reference and a :class:`Variable` the user must set. Nothing
here prints or logs a value. A broken file or entry is a :class:`~kairox.ConfigError`
naming the file and the field path; the other files and entries are still read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import tomlkit
import tomlkit.exceptions

from kairox.errors import ConfigError
from kairox.ext import expand_env, redact, redact_url
from kairox.files import Refused, Root, check_toml_keys, update_text

from .codex import codex_server, type_name
from .sources import read_config_file

__all__ = [
    "KINDS",
    "ImportPlan",
    "JsoncError",
    "PlannedServer",
    "Skipped",
    "SourceFile",
    "Variable",
    "escape_literal",
    "loads_jsonc",
    "read_sources",
    "server_names_in",
    "source_files",
    "strip_jsonc",
    "translate",
    "write_servers",
]

KINDS = ("claude-code", "cursor", "vscode", "codex", "gemini", "zed", "claude-desktop", "windsurf")

# -- JSONC ------------------------------------------------------------------------------


class JsoncError(ValueError):
    """A JSONC document that cannot be read (the message names the line and column)."""


def _position(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"line {line} column {column}"


def strip_jsonc(text: str) -> str:
    """``text`` with every comment (``//`` to the end of the line, ``/* ... */``) and every
    trailing comma (before ``}`` or ``]``) replaced by spaces. Newlines stay, so line and
    column numbers of an error in the result are those of the original; strings (and a
    ``//`` or ``/*`` inside them) are never touched. Raises :class:`JsoncError` for an
    unterminated block comment."""
    out = list(text)
    n = len(text)
    i = 0
    last = ""  # the last significant character outside strings and comments
    last_comma = -1
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\n":  # an unterminated string: leave it to the JSON parser
                    break
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            last, last_comma = '"', -1
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            if j < 0:
                raise JsoncError(f"unterminated /* comment at {_position(text, i)}")
            for k in range(i, j + 2):
                if text[k] not in "\r\n":
                    out[k] = " "
            i = j + 2
            continue
        if c in " \t\r\n\ufeff":
            i += 1
            continue
        if c in "}]" and last_comma >= 0:
            out[last_comma] = " "
        if c == "," and last not in ("", ",", "[", "{"):
            last_comma = i
        else:
            last_comma = -1
        last = c
        i += 1
    return "".join(out)


def loads_jsonc(text: str) -> Any:
    """Parse JSON with comments and trailing commas (a leading BOM is ignored)."""
    stripped = strip_jsonc(text.removeprefix("\ufeff"))
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise JsoncError(f"{exc.msg} at {_position(stripped, exc.pos)}") from None


def _loads_toml(text: str) -> Any:
    check_toml_keys(text)  # a ValueError naming the line: bounded time before tomlkit reads it
    try:
        return tomlkit.parse(text).unwrap()
    except tomlkit.exceptions.ParseError as exc:
        raise ValueError(str(exc)) from None


# -- where the files are -------------------------------------------------------------------


@attrs.frozen
class SourceFile:
    """One file a client keeps MCP servers in."""

    kind: str
    path: Path
    #: the file lies in the workspace (its servers go to the workspace's kairox.toml only)
    in_workspace: bool
    #: ``~/.claude.json``: "project" reads ``projects[WORKSPACE]``, "user" the top level
    part: str = ""


def _home(env: Mapping[str, str]) -> Path:
    value = env.get("HOME") or env.get("USERPROFILE")
    return Path(value) if value else Path.home()


def _config_home(env: Mapping[str, str], platform: str) -> Path:
    """Where the user's application settings live (``XDG_CONFIG_HOME``, the macOS and Windows places)."""
    if platform == "darwin":
        return _home(env) / "Library" / "Application Support"
    if platform == "win32" and env.get("APPDATA"):
        return Path(env["APPDATA"])
    xdg = env.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg else _home(env) / ".config"


def source_files(
    workspace: Path, env: Mapping[str, str], *, kinds: tuple[str, ...] = KINDS, platform: str = sys.platform
) -> list[SourceFile]:
    """Every file of ``kinds`` in reading order (those that do not exist included)."""
    home = _home(env)
    apps = _config_home(env, platform)
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    claude_json = (
        Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json" if env.get("CLAUDE_CONFIG_DIR") else home / ".claude.json"
    )
    codex_home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    table: dict[str, list[SourceFile]] = {
        "claude-code": [
            SourceFile("claude-code", workspace / ".mcp.json", True),
            SourceFile("claude-code", claude_json, False, "project"),
            SourceFile("claude-code", claude_json, False, "user"),
        ],
        "cursor": [
            SourceFile("cursor", workspace / ".cursor" / "mcp.json", True),
            SourceFile("cursor", home / ".cursor" / "mcp.json", False),
        ],
        "vscode": [
            SourceFile("vscode", workspace / ".vscode" / "mcp.json", True),
            SourceFile("vscode", apps / "Code" / "User" / "mcp.json", False),
        ],
        "codex": [
            SourceFile("codex", workspace / ".codex" / "config.toml", True),
            SourceFile("codex", codex_home / "config.toml", False),
        ],
        "gemini": [
            SourceFile("gemini", workspace / ".gemini" / "settings.json", True),
            SourceFile("gemini", home / ".gemini" / "settings.json", False),
        ],
        "zed": [
            SourceFile("zed", workspace / ".zed" / "settings.json", True),
            SourceFile("zed", xdg / "zed" / "settings.json", False),
        ],
        "claude-desktop": [SourceFile("claude-desktop", apps / "Claude" / "claude_desktop_config.json", False)],
        "windsurf": [SourceFile("windsurf", home / ".codeium" / "windsurf" / "mcp_config.json", False)],
    }
    workspace_first = [s for k in KINDS if k in kinds for s in table[k] if s.in_workspace or s.part == "project"]
    user = [s for k in KINDS if k in kinds for s in table[k] if s not in workspace_first]
    return workspace_first + user


# -- variables: each client's syntax as kairox's ---------------------------------------------

# A braced variable ends at a ``}``: each pattern below that has one is applied only up to
# the value's last ``}`` (:func:`_through_last_brace`). There, a default's or a body's
# ``[^}]*`` always reaches a ``}``, so a try matches or fails within the name it read, and
# the text is read in linear time; over the whole value, each unclosed ``${`` was read to
# its end again (quadratic). A ``$`` before ``{NAME}`` or ``{NAME:-`` there is a variable
# of kairox's (so :data:`_KAIROX_VAR` need not read the default to its ``}``).
_KAIROX_VAR = re.compile(r"\$(?=\{[A-Za-z_][A-Za-z0-9_]*(?:\}|:-))")
_REFERENCE = re.compile(r"(?<!\$)\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACED = re.compile(r"\$\{([^}]*)\}")
_GEMINI = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([^}]*)\})")
#: Gemini's variables after the last ``}``: ``$NAME`` only (group 2, the braced form, is empty)
_GEMINI_NAME = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)()")


def _through_last_brace(value: str) -> int:
    """Where the part of ``value`` that a braced variable can be in ends."""
    return value.rfind("}") + 1


def _variables(value: str, syntax: str) -> Iterator[re.Match[str]]:
    """The variables of ``value`` in a ``claude``/``vscode`` (``${...}``) or ``gemini``
    (also ``$NAME``) file, in order."""
    end = _through_last_brace(value)
    if syntax == "gemini":
        yield from _GEMINI.finditer(value, 0, end)
        yield from _GEMINI_NAME.finditer(value, end)
    else:
        yield from _BRACED.finditer(value, 0, end)


#: the variable syntax of each kind: "literal" (no expansion), "claude" (``${VAR}``,
#: ``${VAR:-default}``), "vscode" (``${env:NAME}``, ``${input:ID}``, ``${workspaceFolder}``, ...),
#: "gemini" (``$VAR``, ``${VAR}``)
SYNTAX = {
    "claude-desktop": "literal",
    "claude-code": "claude",
    "cursor": "vscode",
    "vscode": "vscode",
    "windsurf": "vscode",
    "codex": "literal",
    "zed": "literal",
    "gemini": "gemini",
}


def escape_literal(text: str) -> str:
    """``text`` written so that kairox reads it back unchanged (``${`` of a variable becomes ``$${``)."""
    end = _through_last_brace(text)
    return _KAIROX_VAR.sub("$$", text[:end]) + text[end:]


@attrs.frozen
class Input:
    """A VS Code ``inputs`` entry (``${input:ID}``)."""

    id: str
    description: str = ""
    password: bool = False
    default: str | None = None


@attrs.define
class _Scope:
    """What a translation of one server's strings knows and collects."""

    server: str
    file: str
    workspace: Path
    #: what ``${workspaceFolder}`` becomes: "." (a stdio server runs in the workspace) or the path
    workspace_token: str = "."
    inputs: Mapping[str, Input] = attrs.field(factory=dict)
    used_inputs: list[Input] = attrs.field(factory=list)
    references: list[str] = attrs.field(factory=list)


def input_variable(input_id: str) -> str:
    """The environment variable an input becomes: ``github-token`` -> ``GITHUB_TOKEN``."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", input_id).upper().strip("_") or "INPUT"
    return name if not name[0].isdigit() else f"INPUT_{name}"


def _sentinel(name: str) -> str:
    return f"\x00{name}\x00"


def translate(value: str, syntax: str, scope: _Scope, path: str) -> str:
    """``value`` (a string of a ``syntax`` file) as a ``kairox.toml`` string: the same text
    once kairox expands it. Raises :class:`ConfigError` for a variable kairox cannot express
    (and for the rare text that cannot be written exactly, a ``$`` right before a variable)."""
    if syntax == "literal":
        out = [escape_literal(value)]
        meaning = [value]
    else:
        out, meaning = [], []
        pos = 0
        for m in _variables(value, syntax):
            out.append(escape_literal(value[pos : m.start()]))
            meaning.append(value[pos : m.start()])
            pos = m.end()
            text, means = _variable(m, syntax, scope, path)
            out.append(text)
            meaning.append(means)
        out.append(escape_literal(value[pos:]))
        meaning.append(value[pos:])
    result = "".join(out)
    # read it back the way kairox will: each variable set to a marker of its own
    probe = {name: _sentinel(name) for name in _NAMES_IN.findall(result)}
    try:
        exact = expand_env(result, probe) == "".join(meaning)
    except ConfigError:
        exact = False
    if not exact:
        raise ConfigError(
            "cannot be written exactly in kairox.toml (a `$` right before a variable)", file=scope.file, path=path
        )
    return result


_NAMES_IN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


def _unsupported(inner: str, scope: _Scope, path: str) -> ConfigError:
    return ConfigError(f"${{{inner}}} cannot be expressed in kairox.toml", file=scope.file, path=path)


def _variable(m: re.Match[str], syntax: str, scope: _Scope, path: str) -> tuple[str, str]:
    """What one variable of the source becomes in kairox.toml, and what it means (a variable as its marker)."""
    if syntax == "gemini":
        name = m.group(1) or m.group(2)
        if not _NAME.fullmatch(name):
            raise _unsupported(m.group(2), scope, path)
        scope.references.append(name)
        return "${" + name + "}", _sentinel(name)
    inner = m.group(1)
    if syntax == "claude":
        name, sep, default = inner.partition(":-")
        if not _NAME.fullmatch(name):
            raise _unsupported(inner, scope, path)
        scope.references.append(name)
        return "${" + name + (":-" + default if sep else "") + "}", _sentinel(name)
    kind, sep, arg = inner.partition(":")
    if sep and kind == "env" and _NAME.fullmatch(arg):
        scope.references.append(arg)
        return "${" + arg + "}", _sentinel(arg)
    if sep and kind == "input":
        item = scope.inputs.get(arg)
        if item is None:
            raise ConfigError(f"${{input:{arg}}}: no input {arg!r} is declared in `inputs`", file=scope.file, path=path)
        if item not in scope.used_inputs:
            scope.used_inputs.append(item)
        var = input_variable(arg)
        default = item.default
        if default is not None and not item.password and "}" not in default:
            return "${" + var + ":-" + default + "}", _sentinel(var)
        return "${" + var + "}", _sentinel(var)
    if not sep and inner == "workspaceFolder":
        return scope.workspace_token, scope.workspace_token
    if not sep and inner == "workspaceFolderBasename":
        return escape_literal(scope.workspace.name), scope.workspace.name
    if not sep and inner == "userHome":
        scope.references.append("HOME")
        return "${HOME}", _sentinel("HOME")
    if not sep and inner in ("pathSeparator", "/"):
        return os.sep, os.sep
    raise _unsupported(inner, scope, path)


# -- secrets -------------------------------------------------------------------------------

_SECRET_NAME = re.compile(
    r"(token|secret|passw|api[_-]?key|apikey|authori[sz]ation|(^|[_-])auth($|[_-])|credential|cookie"
    r"|private[_-]?key|access[_-]?key|(^|[_-])pat($|[_-])|(^|[_-])key$)",
    re.I,
)
_SECRET_PARAM = re.compile(r"(token|secret|password|passwd|api[_-]?key|auth|key|sig|signature|credential|^code$)", re.I)
_TOKEN_PREFIX = re.compile(
    r"^(gh[pousr]_|github_pat_|sk-|sk_live_|sk_test_|rk_live_|xox[abprs]-|glpat-|AKIA|ASIA|AIza|hf_|npm_|pypi-|eyJ)"
    r"[A-Za-z0-9_\-.=+/]{8,}$"
)
_OPAQUE = re.compile(r"[A-Za-z0-9_\-+=]{20,}")
_SCHEME = re.compile(r"(?i)^(bearer|basic|token|apikey)\s+")


def looks_like_token(value: str) -> bool:
    """A credential by its shape: a known token prefix, or 20+ characters mixing letters and digits."""
    if _TOKEN_PREFIX.match(value):
        return True
    return bool(_OPAQUE.fullmatch(value)) and bool(re.search(r"\d", value)) and bool(re.search(r"[A-Za-z]", value))


def _has_reference(value: str) -> bool:
    return bool(_REFERENCE.search(value, 0, _through_last_brace(value)))


@attrs.frozen
class Variable:
    """An environment variable an imported server reads."""

    name: str
    server: str
    #: "secret" (a value found in the source, moved out of the file: set it to that value),
    #: "input" (a VS Code input: set it to what the input asked for), "reference" (the source
    #: already read this variable)
    kind: str
    #: the source file and the field path the value came from
    file: str
    where: str
    description: str = ""

    def to_dict(self) -> dict[str, str]:
        return attrs.asdict(self)


def _variable_name(*parts: str) -> str:
    name = re.sub(r"[^A-Za-z0-9]+", "_", "_".join(p for p in parts if p)).upper().strip("_") or "SECRET"
    return name if not name[0].isdigit() else f"V_{name}"


@attrs.define
class _Secrets:
    """The secrets of one plan: each gets a variable; two different values never share one."""

    taken: dict[str, str] = attrs.field(factory=dict)  # variable -> sha256 of its value

    def name_for(self, preferred: str, server: str, value: str) -> str:
        digest = hashlib.sha256(value.encode("utf-8")).hexdigest()
        candidates = [preferred, _variable_name(server, preferred)]
        candidates += [f"{candidates[1]}_{i}" for i in range(2, 100)]
        for name in candidates:
            if self.taken.get(name, digest) == digest:
                self.taken[name] = digest
                return name
        raise AssertionError("unreachable")  # pragma: no cover


@attrs.define
class _Collector:
    secrets: _Secrets
    scope: _Scope
    variables: list[Variable] = attrs.field(factory=list)

    def secret(self, preferred: str, value: str, where: str, description: str) -> str:
        name = self.secrets.name_for(preferred, self.scope.server, value)
        self.variables.append(Variable(name, self.scope.server, "secret", self.scope.file, where, description))
        return "${" + name + "}"

    def env_value(self, key: str, value: str, where: str) -> str:
        if _has_reference(value) or not value:
            return value
        if _SECRET_NAME.search(key) or looks_like_token(value):
            preferred = key if _NAME.fullmatch(key) else _variable_name(key)
            return self.secret(preferred, value, where, f"environment variable {key} of the server")
        if "://" in value:
            return self.url(value, where)
        return value

    def header(self, header: str, value: str, where: str) -> str:
        if _has_reference(value) or not value:
            return value
        scheme = _SCHEME.match(value)
        credential = value[scheme.end() :] if scheme else value
        if not (_SECRET_NAME.search(header) or looks_like_token(credential) or header.lower() == "proxy-authorization"):
            return value
        preferred = "TOKEN" if header.lower() == "authorization" else header
        if scheme:
            ref = self.secret(_variable_name(self.scope.server, preferred), credential, where, f"header {header}")
            return scheme.group(0) + ref
        return self.secret(_variable_name(self.scope.server, preferred), value, where, f"header {header}")

    def url(self, url: str, where: str) -> str:
        try:
            parts = urllib.parse.urlsplit(url)
        except ValueError:
            return url
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            user, sep, password = userinfo.partition(":")
            if sep and password and not _has_reference(password):
                netloc = f"{user}:{self.secret(_variable_name(self.scope.server, 'PASSWORD'), password, where, 'the password in the URL')}@{host}"
            elif not sep and userinfo and not _has_reference(userinfo) and looks_like_token(userinfo):
                netloc = f"{self.secret(_variable_name(self.scope.server, 'TOKEN'), userinfo, where, 'the token in the URL')}@{host}"
        query = parts.query
        if query:
            pieces = []
            for piece in query.split("&"):
                key, sep, value = piece.partition("=")
                if (
                    sep
                    and value
                    and not _has_reference(value)
                    and (_SECRET_PARAM.search(key) or looks_like_token(value))
                ):
                    value = self.secret(
                        _variable_name(self.scope.server, urllib.parse.unquote(key)),
                        urllib.parse.unquote(value),
                        where,
                        f"the {urllib.parse.unquote(key)} parameter of the URL",
                    )
                pieces.append(key + sep + value)
            query = "&".join(pieces)
        if netloc == parts.netloc and query == parts.query:
            return url
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))

    def args(self, args: list[str], where: str) -> list[str]:
        marker = redact({"token": "x"})["token"]
        shown = redact(args)
        out: list[str] = []
        for i, (arg, safe) in enumerate(zip(args, shown, strict=True)):
            path = f"{where}[{i}]"
            if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", arg):
                out.append(self.url(arg, path))
                continue
            if safe == arg or marker not in safe:
                out.append(arg)
                continue
            flag = re.match(r"^-+([A-Za-z0-9_-]+)", args[i - 1] if i and safe == marker else arg)
            preferred = _variable_name(self.scope.server, flag.group(1) if flag else "SECRET")
            pieces = safe.split(marker)
            pattern = "(.+?)".join(re.escape(p) for p in pieces)
            m = re.fullmatch(pattern, arg, re.S)
            if m is None:
                out.append(arg if _has_reference(arg) else self.secret(preferred, arg, path, "a command-line argument"))
                continue
            # a reference the source wrote (``TOKEN=${input:key}``, translated) is no secret, even
            # where the redaction's idea of the value covers only part of it (``${KEY`` without ``}``)
            references = [r.span() for r in _REFERENCE.finditer(arg, 0, _through_last_brace(arg))]
            rebuilt, pos = [], 0
            for g in range(1, len(pieces)):
                rebuilt.append(arg[pos : m.start(g)])
                secret = m.group(g)
                overlaps = any(start < m.end(g) and m.start(g) < end for start, end in references)
                rebuilt.append(secret if overlaps else self.secret(preferred, secret, path, "a command-line argument"))
                pos = m.end(g)
            rebuilt.append(arg[pos:])
            out.append("".join(rebuilt))
        return out


# -- one entry of a client's file -------------------------------------------------------------


def _expect(raw: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str, file: str, path: str) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) and kind is not bool:
        raise ConfigError(f"expected {what}, got a boolean", file=file, path=f"{path}.{key}")
    if not isinstance(value, kind):
        raise ConfigError(f"expected {what}, got {type_name(value)}", file=file, path=f"{path}.{key}")
    return value


def _strings(raw: Mapping[str, Any], key: str, file: str, path: str) -> list[str] | None:
    value = _expect(raw, key, list, "a list of strings", file, path)
    if value is None:
        return None
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigError(f"expected a string, got {type_name(item)}", file=file, path=f"{path}.{key}[{i}]")
    return list(value)


def _table(raw: Mapping[str, Any], key: str, file: str, path: str) -> dict[str, str] | None:
    value = _expect(raw, key, dict, "an object of strings", file, path)
    if value is None:
        return None
    for k, item in value.items():
        if not isinstance(item, str):  # never show the value: env and header tables hold secrets
            raise ConfigError(f"expected a string, got {type_name(item)}", file=file, path=f"{path}.{key}.{k}")
    return dict(value)


def _seconds(raw: Mapping[str, Any], key: str, file: str, path: str, *, scale: float = 1.0) -> float | None:
    value = _expect(raw, key, (int, float), "a number", file, path)
    if value is None:
        return None
    if not value > 0:
        raise ConfigError(f"expected a number > 0, got {value!r}", file=file, path=f"{path}.{key}")
    seconds = value / scale
    return int(seconds) if float(seconds).is_integer() else seconds


_TRANSPORTS = {
    "stdio": "stdio",
    "local": "stdio",
    "sse": "sse",
    "http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamable_http": "streamable_http",
    "streamablehttp": "streamable_http",
    "remote": "streamable_http",
}


@attrs.frozen
class PlannedServer:
    """One server to write: its ``[mcp_servers.NAME]`` table holds no literal secret."""

    name: str
    kind: str
    file: str
    transport: str
    values: dict[str, Any]
    variables: tuple[Variable, ...] = ()
    #: what of the source entry kairox does not take over (said to the user)
    notes: tuple[str, ...] = ()

    def row(self) -> dict[str, Any]:
        """What ``--dry-run --json`` prints: name, from, file, transport, command | url (secrets redacted)."""
        out: dict[str, Any] = {"name": self.name, "from": self.kind, "file": self.file, "transport": self.transport}
        if "url" in self.values:
            out["url"] = redact_url(self.values["url"])
        else:
            out["command"] = self.values.get("command", "")
            out["args"] = redact(list(self.values.get("args", [])))
        out["variables"] = [v.name for v in self.variables if v.kind != "reference"]
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@attrs.frozen
class Skipped:
    """A server of a source that is not imported, and why."""

    name: str
    kind: str
    file: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "from": self.kind, "file": self.file, "reason": self.reason}


@attrs.define
class ImportPlan:
    servers: list[PlannedServer] = attrs.field(factory=list)
    skipped: list[Skipped] = attrs.field(factory=list)
    errors: list[ConfigError] = attrs.field(factory=list)
    #: the files that exist and were read
    files: list[str] = attrs.field(factory=list)

    def skip(self, present: Mapping[str, str]) -> None:
        """Move the servers whose name is in ``present`` (name -> why) to :attr:`skipped`."""
        keep: list[PlannedServer] = []
        for server in self.servers:
            if server.name in present:
                self.skipped.append(Skipped(server.name, server.kind, server.file, present[server.name]))
            else:
                keep.append(server)
        self.servers = keep

    def variables(self) -> list[Variable]:
        return [v for s in self.servers for v in s.variables]

    def to_dict(self) -> dict[str, Any]:
        return {
            "servers": [s.row() for s in self.servers],
            "skipped": [s.to_dict() for s in self.skipped],
            "variables": [v.to_dict() for v in self.variables()],
            "errors": [str(e) for e in self.errors],
            "files": list(self.files),
        }


def _entry(
    kind: str, name: str, raw: dict[str, Any], path: str, scope: _Scope, secrets: _Secrets
) -> PlannedServer | Skipped:
    """One source entry as a :class:`PlannedServer` (raises :class:`ConfigError`)."""
    file = scope.file
    syntax = SYNTAX[kind]
    notes: list[str] = []
    fields: dict[str, Any] = {}
    # Codex's schema is mapped in one place (codex.py); its strings are still translated here
    codex = codex_server(raw, file=file, path=path) if kind == "codex" else None
    command: Any = raw.get("command")
    args = None
    env = None
    if kind == "zed":
        if raw.get("source") == "extension" or ("command" not in raw and "url" not in raw and "settings" in raw):
            return Skipped(name, kind, file, "provided by a Zed extension (install the server itself to import it)")
        if isinstance(command, dict):  # the older {"command": {"path", "args", "env"}} form
            args = _strings(command, "args", file, f"{path}.command")
            env = _table(command, "env", file, f"{path}.command")
            command = _expect(command, "path", str, "a string", file, f"{path}.command")
    if command is not None and not isinstance(command, str):
        raise ConfigError(f"expected a string, got {type_name(command)}", file=file, path=f"{path}.command")
    args = args if args is not None else _strings(raw, "args", file, path)
    env = env if env is not None else _table(raw, "env", file, path)
    cwd = _expect(raw, "cwd", str, "a string", file, path)
    url_key = {"windsurf": "serverUrl", "gemini": "httpUrl"}.get(kind)
    url = _expect(raw, url_key, str, "a string", file, path) if url_key and raw.get(url_key) is not None else None
    if url is None:
        url = _expect(raw, "url", str, "a string", file, path)
        url_key = "url"
    headers = _table(raw, "http_headers" if kind == "codex" else "headers", file, path)
    if kind == "codex" and raw.get("headers") is not None:
        headers = {**(_table(raw, "headers", file, path) or {}), **(headers or {})}
    declared = _expect(raw, "type", str, "a string", file, path)
    if declared is not None and declared.lower() not in _TRANSPORTS:
        choices = ", ".join(sorted(set(_TRANSPORTS)))
        raise ConfigError(f"expected one of {choices}, got {declared!r}", file=file, path=f"{path}.type")
    if declared is not None:
        transport = _TRANSPORTS[declared.lower()]
    elif command:
        transport = "stdio"
    elif url is not None:
        transport = "sse" if kind == "gemini" and url_key == "url" else "streamable_http"
    else:
        raise ConfigError("expected `command` or a URL", file=file, path=path)
    if transport == "stdio" and not command:
        raise ConfigError("a stdio server needs `command`", file=file, path=path)
    if transport != "stdio" and not url:
        raise ConfigError(f"a {transport} server needs a URL", file=file, path=path)
    if cwd is not None:
        scope.workspace_token = str(scope.workspace)
    collector = _Collector(secrets, scope)
    fields["type"] = transport
    if transport == "stdio":
        fields["command"] = translate(str(command), syntax, scope, f"{path}.command")
        if args:
            translated = [translate(a, syntax, scope, f"{path}.args[{i}]") for i, a in enumerate(args)]
            fields["args"] = collector.args(translated, f"{path}.args")
        if cwd is not None:
            fields["cwd"] = translate(cwd, syntax, scope, f"{path}.cwd")
        if url is not None:
            notes.append(f"`{url_key}` is ignored: a stdio server runs `command`")
    else:
        fields["url"] = collector.url(translate(url, syntax, scope, f"{path}.{url_key}"), f"{path}.{url_key}")
        if headers:
            hkey = "http_headers" if kind == "codex" and raw.get("http_headers") is not None else "headers"
            fields["headers"] = {
                h: collector.header(h, translate(v, syntax, scope, f"{path}.{hkey}.{h}"), f"{path}.{hkey}.{h}")
                for h, v in headers.items()
            }
        if codex is not None and codex.references:  # headers from variables: already ${VAR}
            mapped = codex.fields["headers"]
            kept = {h: v for h, v in fields.get("headers", {}).items() if h in mapped and h not in codex.references}
            fields["headers"] = {**kept, **{h: mapped[h] for h in codex.references}}
            scope.references.extend(_NAMES_IN.findall(" ".join(mapped[h] for h in codex.references)))
        if command:
            notes.append("`command` is ignored: a remote server connects to its URL")
    if env:
        fields["env"] = {
            k: collector.env_value(k, translate(v, syntax, scope, f"{path}.env.{k}"), f"{path}.env.{k}")
            for k, v in env.items()
        }
    if codex is not None:
        for key in ("env_vars", "startup_timeout", "tool_timeout", "enabled_tools", "disabled_tools", "oauth"):
            if key in codex.fields:
                fields[key] = codex.fields[key]
        if codex.fields.get("required"):
            fields["required"] = True
        notes.extend(f"`{p.path.removeprefix(path + '.')}`: {p.message}" for p in codex.problems)
    _extras(kind, raw, fields, notes, file, path)
    for item in scope.used_inputs:
        collector.variables.append(
            Variable(
                input_variable(item.id),
                name,
                "secret" if item.password else "input",
                file,
                f"inputs.{item.id}",
                item.description,
            )
        )
    for ref in dict.fromkeys(scope.references):
        collector.variables.append(Variable(ref, name, "reference", file, path, "read by the source too"))
    if raw.get("envFile") is not None:
        notes.append("`envFile` is not read: set its variables in kairox's environment")
    return PlannedServer(name, kind, file, transport, fields, tuple(collector.variables), tuple(notes))


def _extras(kind: str, raw: dict[str, Any], fields: dict[str, Any], notes: list[str], file: str, path: str) -> None:
    """The fields beyond launching: enabled, timeouts, tool filters."""
    enabled = _expect(raw, "enabled", bool, "a boolean", file, path)
    disabled = None if kind == "codex" else _expect(raw, "disabled", bool, "a boolean", file, path)
    if enabled is False or disabled is True:
        fields["enabled"] = False
    if kind == "codex":
        return  # codex_server took them over (see _entry)
    if kind == "gemini":
        timeout = _seconds(raw, "timeout", file, path, scale=1000)
        if timeout is not None:
            fields["tool_timeout"] = timeout
        for src, dst in (("includeTools", "enabled_tools"), ("excludeTools", "disabled_tools")):
            value = _strings(raw, src, file, path)
            if value is not None:
                fields[dst] = value
        if raw.get("trust") is True:
            notes.append("`trust: true` is not taken over: kairox's policy decides each call")
    elif kind == "windsurf":
        value = _strings(raw, "disabledTools", file, path)
        if value:
            fields["disabled_tools"] = value
    for key in ("oauth", "auth", "headersHelper", "authProviderType"):
        if raw.get(key) is not None:
            notes.append(f"`{key}` is not taken over")


# -- a whole file ---------------------------------------------------------------------------


def _servers_of(
    source: SourceFile, data: Any, workspace: Path
) -> tuple[dict[str, Any] | None, str, ConfigError | None]:
    """The servers object of a document, its field path and an error."""
    file = str(source.path)
    if not isinstance(data, dict):
        return None, "", ConfigError("expected an object at the top level", file=file)
    key = {"vscode": "servers", "codex": "mcp_servers", "zed": "context_servers"}.get(source.kind, "mcpServers")
    base: Any = data
    prefix = ""
    if source.part == "project":
        projects = data.get("projects")
        if not isinstance(projects, dict):
            return None, "", None
        for candidate in (str(workspace), str(workspace.resolve())):
            if isinstance(projects.get(candidate), dict):
                base, prefix = projects[candidate], f"projects.{json.dumps(candidate)}."
                break
        else:
            return None, "", None
    if source.kind == "vscode" and "servers" not in base and isinstance(base.get("mcp"), dict):
        base, prefix = base["mcp"], "mcp."  # the older settings.json form
    servers = base.get(key)
    if servers is None and source.kind == "claude-code" and source.path.name == ".mcp.json":
        servers = base.get("servers")
        key = "servers" if servers is not None else key
    if servers is None:
        return None, "", _other_clients_key(base, key, source.kind, file, prefix)
    if not isinstance(servers, dict):
        return None, "", ConfigError("expected an object of servers by name", file=file, path=prefix + key)
    return servers, prefix + key, None


#: where each client keeps its servers in a document
_SERVER_KEYS = ("mcpServers", "servers", "mcp_servers", "context_servers")


def _other_clients_key(base: Any, key: str, kind: str, file: str, prefix: str) -> ConfigError | None:
    """An error naming servers kept under another client's key (VS Code's ``servers`` in a
    ``.cursor/mcp.json``): the client does not read them, so neither does the import, but it
    says so rather than find nothing."""
    for other in _SERVER_KEYS:
        table = base.get(other) if other != key else None
        if isinstance(table, dict) and any(
            isinstance(v, dict) and ("command" in v or "url" in v) for v in table.values()
        ):
            return ConfigError(
                f"servers under `{other}` are not imported: {kind} reads its servers from `{key}`",
                file=file,
                path=prefix + other,
            )
    return None


def _inputs(data: Any, file: str, errors: list[ConfigError]) -> dict[str, Input]:
    out: dict[str, Input] = {}
    items = data.get("inputs") if isinstance(data, dict) else None
    if items is None:
        return out
    if not isinstance(items, list):
        errors.append(ConfigError("expected a list", file=file, path="inputs"))
        return out
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            errors.append(ConfigError("expected an object with an `id`", file=file, path=f"inputs[{i}]"))
            continue
        desc = item.get("description")
        default = item.get("default")
        out[item["id"]] = Input(
            item["id"],
            desc if isinstance(desc, str) else "",
            item.get("password") is True,
            default if isinstance(default, str) else None,
        )
    return out


def _canonical(values: Mapping[str, Any]) -> str:
    return json.dumps(values, sort_keys=True)


def read_sources(
    workspace: Path,
    env: Mapping[str, str],
    *,
    kinds: tuple[str, ...] = KINDS,
    platform: str = sys.platform,
    user_scope: bool = False,
    workspace_root: Root | None = None,
) -> ImportPlan:
    """Read every file of ``kinds``; with ``user_scope``, a workspace file's servers are
    listed as skipped (they belong to the workspace's ``kairox.toml``). A file in the
    workspace is read inside ``workspace_root`` (:attr:`kairox.Runtime.workspace_root`;
    default: the workspace), the user's own as regular files within a size cap."""
    plan = ImportPlan()
    secrets = _Secrets()
    taken: dict[str, PlannedServer] = {}
    inside = workspace_root if workspace_root is not None else Root(workspace, label="the workspace")
    for source in source_files(workspace, env, kinds=kinds, platform=platform):
        errors: list[ConfigError] = []
        loads: Callable[[str], Any] = _loads_toml if source.kind == "codex" else loads_jsonc
        kind = "TOML" if source.kind == "codex" else "JSON"
        data = read_config_file(source.path, errors, loads, kind, root=inside if source.in_workspace else None)
        plan.errors.extend(errors)
        if data is None:
            continue
        file = str(source.path)
        if file not in plan.files:
            plan.files.append(file)
        servers, key, error = _servers_of(source, data, workspace)
        if error is not None:
            plan.errors.append(error)
        if not servers:
            continue
        inputs = _inputs(data, file, plan.errors) if source.kind == "vscode" else {}
        for name, raw in servers.items():
            path = f"{key}.{name}"
            if not isinstance(name, str) or not name.strip():
                plan.errors.append(ConfigError("a server needs a non-empty name", file=file, path=path))
                continue
            if not isinstance(raw, dict):
                plan.errors.append(ConfigError("expected an object", file=file, path=path))
                continue
            if user_scope and source.in_workspace:
                reason = "a workspace's server: import it with --scope workspace (trusting the workspace covers it)"
                plan.skipped.append(Skipped(name, source.kind, file, reason))
                continue
            scope = _Scope(server=name, file=file, workspace=workspace, inputs=inputs)
            try:
                result = _entry(source.kind, name, raw, path, scope, secrets)
            except ConfigError as exc:
                plan.errors.append(exc)
                continue
            if isinstance(result, Skipped):
                plan.skipped.append(result)
                continue
            first = taken.get(name)
            if first is not None:
                same = _canonical(first.values) == _canonical(result.values)
                why = "the same server" if same else "another server of this name"
                plan.skipped.append(Skipped(name, source.kind, file, f"{why} is imported from {first.file}"))
                continue
            taken[name] = result
            plan.servers.append(result)
    return plan


# -- writing kairox.toml ------------------------------------------------------------------------

SECTION = "mcp_servers"


def _parse(text: str | None, path: Path) -> tomlkit.TOMLDocument:
    if text is None:
        return tomlkit.document()
    try:
        check_toml_keys(text)
        return tomlkit.parse(text)
    except (tomlkit.exceptions.ParseError, ValueError) as exc:
        raise ConfigError(f"invalid TOML ({exc}); fix it before importing", file=str(path)) from None


def _document(path: Path, root: Root | None = None) -> tomlkit.TOMLDocument:
    """The ``kairox.toml`` at ``path`` that an import rewrites, read inside ``root`` (default:
    its own folder: the file rewritten is the one at ``path``, never what a link there leads
    to, which would be copied into it); a refused or unreadable one is a :class:`ConfigError`."""
    contained = root if root is not None else Root(path.parent, label=str(path.parent))
    try:
        text: str | None = contained.read_text(path)
    except FileNotFoundError:
        text = None
    except Refused as exc:
        raise ConfigError(f"{exc.reason}; fix it before importing", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", file=str(path)) from None
    return _parse(text, path)


def server_names_in(path: Path) -> list[str]:
    """The ``[mcp_servers.NAME]`` names of a ``kairox.toml`` (none when it does not exist)."""
    servers = _document(path).get(SECTION)
    return list(servers) if isinstance(servers, Mapping) else []


def _item(value: Any) -> Any:
    if isinstance(value, Mapping):
        table = tomlkit.inline_table()
        table.update(dict(value))
        return table
    if isinstance(value, list):
        array = tomlkit.array()
        array.extend(value)
        return array
    return value


def write_servers(path: Path, servers: list[PlannedServer]) -> None:
    """Add a ``[mcp_servers.NAME]`` table for each server to ``path``, keeping everything
    else (comments included). Read, changed and replaced atomically under the file's lock
    (:func:`kairox.files.update_text`, as ``kairox catalog install`` edits it), keeping the
    file's mode: a parallel writer's tables are never lost. A name already in the file is a
    :class:`ConfigError` (nothing is written)."""

    def change(text: str | None) -> str:
        doc = _parse(text, path)
        section = doc.get(SECTION)
        if section is None:
            doc.add(SECTION, tomlkit.table(is_super_table=True))
            section = doc[SECTION]
        elif not isinstance(section, Mapping):
            raise ConfigError(f"[{SECTION}] is not a table", file=str(path), path=SECTION)
        for server in servers:
            if server.name in section:
                where = f"{SECTION}.{server.name}"
                raise ConfigError("already declared; nothing was written", file=str(path), path=where)
            table = tomlkit.table()
            table.comment(f"imported from {server.kind}: {server.file}")
            for key, value in server.values.items():
                table.add(key, _item(value))
            table.add(tomlkit.nl())
            section[server.name] = table  # type: ignore[index]
        return tomlkit.dumps(doc).rstrip("\n") + "\n"

    try:
        update_text(path, change)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot write: {exc}", file=str(path)) from None

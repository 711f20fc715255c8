"""Claude Code permission rules, as a hook's ``if`` condition uses them.

A rule is ``Tool`` or ``Tool(specifier)``:

- ``Tool`` is a tool name, Claude's (``Bash``, ``Read``, ``Edit``, ``Write``,
  ``mcp__server__tool``; ``*`` matches any run of characters: ``mcp__github__*``) or
  kairox's (``shell.exec``); ``mcp__server`` alone is every tool of that server;
- ``Bash(spec)``: the command. ``*`` matches anything; ``git commit *`` (and the older
  ``git commit:*``) is ``git commit`` alone or followed by a space and anything;
  ``ls*`` has no word boundary. A compound command (``a && b``, ``a | b``, ``a; b``)
  matches when the whole command or any part does; ``VAR=value`` prefixes and the
  wrappers ``timeout``, ``nice``, ``nohup``, ``time``, ``env`` are skipped;
- ``Read(spec)``, ``Edit(spec)``, ``Write(spec)`` (also ``Glob``, ``Grep``, ``LS``,
  ``NotebookEdit``, ``MultiEdit``): a gitignore-style path pattern: ``//abs``
  (absolute), ``~/x`` (home), ``/x`` (the project root), ``./x`` or ``x`` (the
  working directory); ``**`` crosses directories, ``*`` does not; a pattern
  without ``/`` matches the name at any depth; a matching directory matches
  everything below it;
- ``WebFetch(domain:example.com)``: the URL's host (or a subdomain of it);
- any other ``Tool(spec)``: ``spec`` as a ``*`` pattern over the first string
  argument among ``command``, ``file_path``, ``path``, ``url``, ``query``, ``pattern``.

A rule whose specifier cannot be checked against a call (the argument is
missing) matches: an ``if`` only saves running a hook, and a guard that does
not run is the failure to avoid.

A rule (from a bundle) and the command or path it is matched against (from a tool
call) are both outside input: the globs run in time linear in the text
(:mod:`._glob`, a scan instead of a regular expression that backtracks).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs

from ._glob import Glob, compile_glob

__all__ = ["Rule", "parse_rule", "split_command"]

_TOOL = re.compile(r"^[A-Za-z0-9_.*-]+\Z")
_MAX_RULE = 4096
PATH_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS"})
_WRAPPERS = {"timeout", "nice", "nohup", "time", "env", "stdbuf", "ionice"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_GENERIC_KEYS = ("command", "file_path", "path", "url", "query", "pattern")
_PATH_KEYS = ("file_path", "path", "notebook_path")


def _glob(pattern: str) -> Glob:
    """``*`` as any run of characters (newlines too), everything else literal (linear time)."""
    return compile_glob(pattern, "commands")


@attrs.frozen
class Rule:
    """A parsed rule: ``tool`` and, when it has one, ``specifier``."""

    tool: str
    specifier: str | None = None

    def __str__(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"

    def matches_tool(self, names: Iterable[str]) -> bool:
        names = [n for n in names if n]
        if self.tool.startswith("mcp__") and "*" not in self.tool and self.tool.count("__") == 1:
            prefix = self.tool + "__"  # mcp__server: every tool of that server
            if any(n == self.tool or n.startswith(prefix) for n in names):
                return True
        pattern = _glob(self.tool)
        return any(pattern.match(n) for n in names)

    def matches(
        self,
        names: Iterable[str],
        arguments: Mapping[str, Any],
        *,
        cwd: str = "",
        project: str = "",
        home: str = "",
    ) -> bool:
        """Whether a call of a tool known by ``names`` (Claude's first, then kairox's)
        with ``arguments`` matches this rule."""
        names = [n for n in names if n]
        if not self.matches_tool(names):
            return False
        if self.specifier is None or self.specifier in ("*", ""):
            return True
        kind = self._kind(names)
        if kind == "Bash":
            command = arguments.get("command")
            if not isinstance(command, str):
                return True
            return command_matches(self.specifier, command)
        if kind == "path":
            value = next((arguments[k] for k in _PATH_KEYS if isinstance(arguments.get(k), str)), None)
            if value is None:
                return True
            return path_matches(self.specifier, value, cwd=cwd, project=project or cwd, home=home)
        if kind == "WebFetch" and self.specifier.startswith("domain:"):
            url = arguments.get("url")
            if not isinstance(url, str):
                return True
            host = (urlsplit(url).hostname or "").lower()
            domain = self.specifier[len("domain:") :].strip().lower()
            return host == domain or host.endswith("." + domain)
        value = next((arguments[k] for k in _GENERIC_KEYS if isinstance(arguments.get(k), str)), None)
        if value is None:
            return True
        return _glob(self.specifier).match(value)

    @staticmethod
    def _kind(names: list[str]) -> str:
        """How the specifier reads the call: by what the called tool is."""
        if "Bash" in names or "shell.exec" in names:
            return "Bash"
        if any(n in PATH_TOOLS or n in ("fs.read", "fs.write", "fs.list") for n in names):
            return "path"
        if "WebFetch" in names:
            return "WebFetch"
        return "other"


def parse_rule(text: Any) -> Rule:
    """``Tool`` or ``Tool(specifier)``; ``ValueError`` saying what is wrong otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"expected a permission rule (a string), got {type(text).__name__}")
    rule = text.strip()
    if not rule:
        raise ValueError("expected a permission rule such as Bash(git commit *), got an empty string")
    if len(rule) > _MAX_RULE:
        raise ValueError(f"the rule is longer than {_MAX_RULE} characters")
    if "(" not in rule:
        if not _TOOL.match(rule):
            raise ValueError(f"{rule!r} is not a permission rule (Tool or Tool(specifier))")
        return Rule(rule)
    tool, _, rest = rule.partition("(")
    tool = tool.strip()
    if not tool or not _TOOL.match(tool):
        raise ValueError(f"{rule!r} is not a permission rule: {tool!r} is not a tool name")
    if not rest.endswith(")"):
        raise ValueError(f"{rule!r} is not a permission rule: the specifier has no closing ')'")
    spec = rest[:-1]
    if spec.endswith(":*"):  # the older prefix form: "git commit:*" is "git commit *"
        spec = spec[:-2] + " *"
    return Rule(tool, spec)


# -- commands --------------------------------------------------------------------------


def split_command(command: str) -> list[str]:
    """The simple commands of a shell command line: split at ``&&``, ``||``, ``;``, ``|``,
    ``&`` and newlines outside quotes, with ``VAR=value`` prefixes and process
    wrappers (``timeout 5``, ``nice -n 5``, ``nohup``, ``env X=1``) removed."""
    parts: list[str] = []
    current: list[str] = []
    quote = ""
    i = 0
    while i < len(command):
        ch = command[i]
        if quote:
            current.append(ch)
            if ch == "\\" and quote == '"' and i + 1 < len(command):
                current.append(command[i + 1])
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in ("'", '"'):
            quote = ch
            current.append(ch)
        elif ch == "\\" and i + 1 < len(command):
            current.append(command[i : i + 2])
            i += 1
        elif ch in ";|&\n":
            parts.append("".join(current))
            current = []
            while i + 1 < len(command) and command[i + 1] in "|&":
                i += 1
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return [s for s in (_strip_prefixes(p.strip()) for p in parts) if s]


def _strip_prefixes(segment: str) -> str:
    try:
        words = shlex.split(segment, posix=True)
    except ValueError:
        words = segment.split()
    raw = segment.split()
    # drop leading assignments and wrappers (with their numeric/option arguments); keep the rest as written
    drop = 0
    while drop < len(words):
        word = words[drop]
        if _ASSIGNMENT.match(word):
            drop += 1
        elif word in _WRAPPERS:
            drop += 1
            while drop < len(words) and (
                words[drop].startswith("-")
                or re.fullmatch(r"[0-9.]+[smhd]?", words[drop])
                or _ASSIGNMENT.match(words[drop])
            ):
                drop += 1
        else:
            break
    if drop == 0:
        return segment
    if len(raw) == len(words):
        return " ".join(raw[drop:])
    return " ".join(shlex.quote(w) for w in words[drop:])


def command_matches(spec: str, command: str) -> bool:
    """Whether the Bash specifier ``spec`` matches ``command`` (the whole line or one part)."""
    spec = spec.strip()
    if spec.endswith(":*"):  # the older prefix form
        spec = spec[:-2] + " *"
    # a word boundary: the command alone, or followed by a blank and anything
    prefix = spec.endswith(" *")
    pattern = _glob(spec[:-2].rstrip() if prefix else spec)
    candidates = [command.strip(), *split_command(command)]
    return any(pattern.match(c, str.isspace if prefix else None) for c in candidates)


# -- paths --------------------------------------------------------------------------------


def _absolute(value: str, cwd: str, home: str) -> str:
    if value.startswith("~/") and home:
        value = home.rstrip("/") + value[1:]
    path = value if value.startswith("/") else os.path.join(cwd or "/", value)
    path = os.path.normpath(path).replace("\\", "/")
    # POSIX lets normpath keep a leading '//'; Linux reads it as '/'
    return "/" + path.lstrip("/") if path.startswith("//") else path


def path_matches(spec: str, value: str, *, cwd: str, project: str, home: str) -> bool:
    """Whether the gitignore-style ``spec`` (see the module) matches the path ``value``."""
    spec = spec.strip()
    if spec.startswith("//"):
        base, pattern = "/", spec[2:]
    elif spec.startswith("~/"):
        base, pattern = home or "/", spec[2:]
    elif spec.startswith("/"):
        base, pattern = project or "/", spec[1:]
    elif spec.startswith("./"):
        base, pattern = cwd or "/", spec[2:]
    else:
        base, pattern = cwd or "/", spec
    pattern = pattern.rstrip("/")
    if not pattern:
        pattern = "**"
    target = _absolute(value, cwd, home)
    base_path = os.path.normpath(base).replace("\\", "/").rstrip("/") + "/"
    # string prefixes: pathlib's relative_to walks every parent, quadratic in a deep path
    if target + "/" == base_path:
        return False
    if not target.startswith(base_path):
        return False
    glob = compile_glob(pattern if "/" in pattern else "**/" + pattern, "paths")
    text = target[len(base_path) :]
    # the path itself, or one of the directories it is in (a prefix that ends before a '/')
    return bool(text) and glob.match(text, _is_slash)


def _is_slash(char: str) -> bool:
    return char == "/"

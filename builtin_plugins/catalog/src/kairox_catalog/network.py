"""A catalog fetched over the network installs only from the network.

An entry of a document fetched from an ``http(s)`` URL (its ``fetched_from`` is that
URL) is checked by :func:`network_problems` when the document is read (the entry is
skipped with the reason) and again by the installer (an entry may be built in code).
Refused, each naming the field:

- a plugin or skill source on this machine: a ``path``, a ``url`` that is not
  http(s) (``file://``, a path), a git URL that is not a network one (``file://``,
  a path, relative or through a symlink, ``git+file``, ``ext::``), an npm package or
  version that npm reads from disk (``/dir``, ``./x.tgz``, ``file:``, ``link:``);
- a server's program given as a path (it is not fetched, it is this machine's), and,
  in its arguments (and a ``prepare`` command's), a reference to this machine's files
  that cannot mean anything else (``file:`` and ``git+file:`` URLs, ``./``, ``../``,
  ``~``), plus any path where a runner installs from (``uvx --from``, ``--with``, the
  package of ``uvx`` / ``npx`` / ``bunx`` / ``pipx run``);
- a requirement's runtime given as a path (checking it runs the program);
- a server URL that is not http(s) (a placeholder may not pick the scheme);
- an ``env`` value ``""``, which means "this machine's variable of that name";
- an ``arg`` input's default that names this machine's files.

What such an entry writes is never expanded against this machine's environment: the
installer escapes everything it says (``$${``, as for every entry) and reads each of its
secrets from a variable of the entry's own (:func:`secret_variable`), never one the
document names (``AWS_SECRET_ACCESS_KEY``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import attrs

from kairox.ext import redact_url

from .model import CatalogEntry, EntryError, InstallSource, SourceResult

__all__ = ["is_network_url", "network_only", "network_problems", "secret_variable"]

#: git transports that reach another machine (``git+ssh`` and ``ssh+git`` are git's ssh aliases)
_GIT_SCHEMES = ("https", "http", "ssh", "git", "git+ssh", "ssh+git")
#: what git reads as ``[user@]host:path`` (scp-like ssh); a one-letter host would be a drive
_SCP_LIKE = re.compile(r"[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:.|[A-Za-z0-9][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)+:.")
#: an npm package name (scoped or not), as the registry accepts them
_NPM_NAME = re.compile(r"(?:@[A-Za-z0-9~-][A-Za-z0-9._~-]*/)?[A-Za-z0-9~-][A-Za-z0-9._~-]*")
#: a version, range or dist-tag: no ``/``, ``:`` or ``\`` (which make it a path, URL or git spec)
_NPM_VERSION = re.compile(r"[A-Za-z0-9^~<>=*|][A-Za-z0-9.+_^~<>=*| -]*")
#: a ``file:`` URL anywhere in a value (``file:``, ``git+file:``, ``pkg @ file:``, ``pkg@file:``)
_FILE_URL = re.compile(r"(?:^|[^A-Za-z0-9])file:", re.IGNORECASE)
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
_ARCHIVE = (".whl", ".tar.gz", ".tgz", ".tar", ".zip")
#: runner -> options whose value is where it installs from
_RUNNER_SOURCES: dict[str, frozenset[str]] = {
    "uvx": frozenset({"--from", "--with", "-w", "--with-editable", "--with-requirements"}),
    "npx": frozenset({"--package", "-p"}),
    "bunx": frozenset({"--package", "-p"}),
    "pipx": frozenset({"--spec"}),
}
#: options of those runners that take a value which is not an install source
_RUNNER_VALUED: dict[str, frozenset[str]] = {
    "uvx": frozenset({"--python", "-p", "--index", "--index-url", "--default-index", "--extra-index-url"}),
    "npx": frozenset({"--registry", "--cache", "--userconfig", "-c", "--call"}),
    "bunx": frozenset(),
    "pipx": frozenset({"--python", "--index-url", "--pip-args"}),
}

NETWORK_ONLY = "a catalog fetched over the network installs only from the network"


def is_network_url(url: str) -> bool:
    """An ``http(s)`` URL naming a host."""
    parts = urlsplit(url.strip())
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def _local_reference(value: str) -> str | None:
    """Why ``value`` names this machine's files whatever program reads it, or ``None``."""
    text = value.strip()
    if _FILE_URL.search(text):
        return "a file: URL"
    if text in (".", "..") or text.startswith(("./", "../", ".\\", "..\\", "~")):
        return "a path on this machine"
    return None


def _local_source(value: str) -> str | None:
    """Why ``value``, where a runner installs from, is on this machine, or ``None``."""
    reason = _local_reference(value)
    if reason is not None:
        return reason
    text = value.strip()
    if text.startswith(("/", "\\")) or _DRIVE.match(text):
        return "a path on this machine"
    if not is_network_url(text) and text.lower().endswith(_ARCHIVE):
        return "a file on this machine"
    return None


def _git_problem(url: str) -> str | None:
    text = url.strip()
    parts = urlsplit(text)
    if parts.scheme.lower() in _GIT_SCHEMES and parts.netloc and "::" not in text:
        return None
    if "://" not in text and "::" not in text and _SCP_LIKE.match(text):
        return None
    return f"{text[:120]!r} is not a network git URL (https://, ssh://, git://, host:path)"


def _install_problems(src: InstallSource) -> list[tuple[str, str]]:
    if src.type == "path":
        if is_network_url(src.path):  # a remote marketplace's relative source: the fetch says what to do
            return []
        return [("install.path", f"{src.path[:120]!r} is a path on this machine")]
    if src.type == "url":
        if is_network_url(src.url):
            return []
        return [("install.url", f"{src.url[:120]!r} is not an http(s) URL")]
    if src.type in ("git", "github"):
        problem = _git_problem(src.url) if src.url else None
        return [("install.url", problem)] if problem else []
    out: list[tuple[str, str]] = []
    if src.type == "npm":
        if not _NPM_NAME.fullmatch(src.package):
            out.append(("install.package", f"{src.package[:120]!r} is not an npm package name"))
        if src.version and not _NPM_VERSION.fullmatch(src.version):
            out.append(("install.version", f"{src.version[:120]!r} is not a version, range or tag"))
    return out


def _runner(command: str, args: Sequence[str]) -> tuple[str, int] | None:
    """``(runner, index of its first argument)`` for a command that installs what it runs."""
    if command == "uv" and list(args[:2]) == ["tool", "run"]:
        return "uvx", 2
    if command == "pipx" and list(args[:1]) == ["run"]:
        return "pipx", 1
    if command in ("uvx", "npx", "bunx"):
        return command, 0
    return None


def _source_indices(command: str, args: Sequence[str]) -> set[int]:
    """Indices of ``args`` a runner installs from: its source options' values (``--from X``,
    ``--from=X``) and its first positional argument (the package)."""
    found = _runner(command, args)
    if found is None:
        return set()
    runner, first = found
    sources, valued = _RUNNER_SOURCES[runner], _RUNNER_VALUED[runner]
    out: set[int] = set()
    i = first
    while i < len(args):
        arg = args[i]
        if arg == "--":
            break
        if not arg.startswith("-"):
            out.add(i)  # the package
            break
        flag, eq, _ = arg.partition("=")
        if flag in sources:
            out.add(i if eq else i + 1)
        if not eq and (flag in sources or flag in valued):
            i += 1  # the option's value
        i += 1
    return out


def _is_path(program: str) -> bool:
    """``program`` names a file rather than a program to look up on PATH."""
    return "/" in program or "\\" in program or program.startswith(("~", ".")) or bool(_DRIVE.match(program))


def _command_problems(field: str, argv: Sequence[str]) -> list[tuple[str, str]]:
    if not argv:
        return []
    command, args = argv[0], list(argv[1:])
    out: list[tuple[str, str]] = []
    if _is_path(command):
        out.append((f"{field}.command", f"{command[:120]!r} is a program on this machine, not one on PATH"))
    sources = _source_indices(command, args)
    for i, arg in enumerate(args):
        value = arg.partition("=")[2] if arg.startswith("-") and "=" in arg else arg
        reason = _local_source(value) if i in sources else _local_reference(value)
        if reason is not None:
            what = f"{command} would install from it" if i in sources else "a program would read it"
            out.append((f"{field}.args[{i}]", f"{arg[:120]!r} is {reason} ({what})"))
    return out


def network_problems(entry: CatalogEntry) -> list[tuple[str, str]]:
    """``(field, reason)`` for each thing ``entry`` names on this machine (see the module)."""
    out: list[tuple[str, str]] = []
    if entry.install is not None:
        out.extend(_install_problems(entry.install))
    for i, req in enumerate(entry.requirements):  # `show` and `install` run it with --version
        if _is_path(req.runtime):
            out.append((f"requirements[{i}].runtime", f"{req.runtime[:120]!r} is a program on this machine"))
    launch = entry.launch
    if launch is not None:
        if launch.transport == "stdio":
            out.extend(_command_problems("launch", [launch.command, *launch.args]))
        elif not is_network_url(launch.url):
            out.append(("launch.url", f"{launch.url[:120]!r} is not an http(s) URL"))
        for key, value in launch.env.items():
            if value == "":
                out.append((f"launch.env.{key}", f"an empty value would take this machine's {key}"))
    if entry.prepare:
        out.extend(_command_problems("prepare", entry.prepare))
    for i, item in enumerate(entry.inputs):
        if item.kind == "arg" and item.default is not None:
            reason = _local_reference(item.default)
            if reason is not None:
                out.append((f"inputs[{i}].default", f"{item.default[:120]!r} is {reason}"))
        if item.kind == "env" and item.default == "":
            out.append((f"inputs[{i}].default", f"an empty value would take this machine's {item.name}"))
    return out


def network_only(result: SourceResult, source: str, location: str) -> SourceResult:
    """``result`` of a document fetched from ``location`` (a network URL): each entry marked
    as fetched from there, and each one with :func:`network_problems` skipped as an error."""
    origin = redact_url(location)
    entries: list[CatalogEntry] = []
    errors = list(result.errors)
    for entry in result.entries:
        problems = network_problems(entry)
        if problems:
            errors.extend(
                EntryError(source, field, f"{NETWORK_ONLY}: {reason}", entry.name[:1024]) for field, reason in problems
            )
            continue
        entries.append(attrs.evolve(entry, fetched_from=origin))
    return SourceResult(entries=tuple(entries), errors=tuple(errors), warnings=result.warnings)


def _env_part(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").upper() or "X"


def secret_variable(entry: CatalogEntry, variable: str) -> str:
    """The variable a secret of ``entry`` is read from: ``variable`` itself for an entry of a
    local catalog; ``KAIROX_SECRET_<ENTRY>_<VARIABLE>`` for one fetched over the network, so a
    remote document never picks a variable this machine already holds and has it sent."""
    if not entry.fetched_from:
        return variable
    return f"KAIROX_SECRET_{_env_part(entry.name)}_{_env_part(variable)}"

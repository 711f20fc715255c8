"""What a workspace declares, as the trust prompt shows it and as its fingerprint covers it.

A :class:`Declared` item is one thing a workspace asks to run (a server entry, a bundle, a
section's table): how it is shown (the command line whole, secrets masked by value, the
environment it reads and sets), and its fingerprint (what it declares, and every file it
names or runs, read through the contained reader). :mod:`._trust` records and checks them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import re
import shlex
import shutil
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from ._text import shell_line, shell_quote
from .files import Limits, Refused, Root

logger = logging.getLogger(__name__)

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


def fingerprint(value: Any) -> str:
    """A stable SHA-256 of a JSON-like value (keys sorted), as hex."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _strings(value: Any) -> Iterator[str]:
    for _key, item, _parent in _walk(value):
        if isinstance(item, str):
            yield item


def _walk(value: Any) -> Iterator[tuple[str, Any, str]]:
    """Every value of a JSON-like tree with the key it is under ("" in a list) and its table's
    key, in document order; iterative, so a deeply nested document costs no recursion."""
    stack: list[tuple[str, Any, str]] = [("", value, "")]
    while stack:
        key, item, parent = stack.pop()
        yield key, item, parent
        if isinstance(item, Mapping):
            stack.extend((str(k), v, key) for k, v in reversed(list(item.items())))
        elif isinstance(item, (list, tuple)):
            stack.extend(("", v, key) for v in reversed(item))


# -- what an entry is shown as -------------------------------------------------------------


def _tables(raw: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Where an entry's ``command``, ``args``, ``url`` and ``env`` may be: the entry itself
    and Philont's nested ``transport`` table."""
    transport = raw.get("transport")
    return [raw, transport] if isinstance(transport, Mapping) else [raw]


def _argvs(raw: Mapping[str, Any]) -> list[list[str]]:
    """The command lines of an entry: its ``command`` + ``args``. Some formats give the
    command as a list."""
    out: list[list[str]] = []
    for table in _tables(raw):
        command = table.get("command")
        if isinstance(command, str) and command:
            args = table.get("args")
            out.append([command, *(str(a) for a in args)] if isinstance(args, list) else [command])
        elif isinstance(command, list) and command:
            out.append([str(c) for c in command])
    return out


_WHOLE_ENVIRONMENT = "(its whole environment: inherit_env = true)"
#: what an item that gets kairox's whole environment reads, among its variables
WHOLE_ENVIRONMENT = "(its whole environment)"
#: the note an item whose process gets kairox's whole environment carries: what it reads
#: names no variable, and each of the user's (secrets included) reaches it
WHOLE_ENVIRONMENT_NOTE = "gets kairox's whole environment: every variable of yours, secrets included"
#: tables whose keys are names the entry gives (variables, headers), not field names
_VALUE_TABLES = ("env", "headers", "http_headers")


def env_references(value: Any) -> tuple[str, ...]:
    """Every ``${VAR}`` in any string of ``value``, at any depth."""
    return tuple(dict.fromkeys(name for text in _strings(value) for name in _VAR.findall(text)))


def _env_names(raw: Mapping[str, Any]) -> list[str]:
    """Every environment variable an entry can read, at any depth of it: ``${VAR}`` in any
    string, ``*_env`` / ``*_env_var`` values (``[x.oauth] client_secret_env``), ``env_vars`` and
    ``*_env_vars`` lists, ``env_http_headers`` values, ``env`` keys whose value is ``""`` (taken
    from the environment), ``inherit_env = true``."""
    names: list[str] = []
    for key, value, parent in _walk(raw):
        k = key.lower()
        if isinstance(value, str):
            names.extend(_VAR.findall(value))
            # a variable's name, not a value of an env or headers table (whose keys are names of their own)
            if k.endswith(("_env", "_env_var")) and value and parent.lower() not in _VALUE_TABLES:
                names.append(value)
        elif isinstance(value, Mapping):
            if k == "env":
                # "" takes the variable from the user's environment; a literal value is set, not read
                names.extend(str(n) for n, v in value.items() if v is None or v == "")
            elif k.endswith("env_http_headers"):
                names.extend(v for v in value.values() if isinstance(v, str))
        elif isinstance(value, list):
            if k == "env_vars" or k.endswith("_env_vars"):
                names.extend(v for v in value if isinstance(v, str))
        elif value is True and k == "inherit_env":
            names.append(_WHOLE_ENVIRONMENT)
    return names


def describe_entry(raw: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """What a server-like entry would run: ``(command lines, URLs, environment variable names)``.

    Each command line is shown whole, as it will run (:func:`shell_line`); nothing in it is
    redacted by a pattern (mask the values the entry sets with :func:`entry_secrets`). The
    variables are every one the entry can read, at any depth. Values are not expanded.
    """
    commands = tuple(shell_line(argv) for argv in _argvs(raw))
    urls = tuple(url for table in _tables(raw) for url in [table.get("url")] if isinstance(url, str) and url)
    return commands, urls, tuple(dict.fromkeys(_env_names(raw)))


#: a value masked where it is shown: a token's shape (letters and digits both, at least 8
#: long, no space, dot, slash or shell character, ``=`` only as padding). Such a value cannot
#: hold a command line, a path, a host or an option, so a workspace that sets an env value
#: equal to an argument cannot hide what that argument runs.
_MASKABLE = re.compile(r"(?=[^=]*[0-9])(?=[^=]*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_+~-]{7,}={0,2}")
_AUTH_SCHEMES = ("bearer", "basic", "token")


def entry_secrets(raw: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The secrets an entry itself hands its process or server, as ``(value, what)``: each
    literal ``env`` value whose name looks secret (:func:`kairox.is_secret`: ``API_KEY``,
    ``GITHUB_TOKEN``) and each header value (the credential after ``Bearer``, ``Basic`` or
    ``token``), at any depth. :meth:`Declared.to_dict` masks them wherever they occur."""
    from ._secrets import is_secret

    found: list[tuple[str, str]] = []
    for key, value, _parent in _walk(raw):
        k = key.lower()
        if not isinstance(value, Mapping) or k not in _VALUE_TABLES:
            continue
        what = "env" if k == "env" else "header"
        for name, text in value.items():
            if not isinstance(text, str) or "${" in text:
                continue
            if what == "env" and not is_secret(str(name)):
                continue  # shown as it is (:func:`env_settings`): it may name what runs
            scheme, _, credential = text.partition(" ")
            part = credential.strip() if what == "header" and scheme.lower() in _AUTH_SCHEMES else text
            if _MASKABLE.fullmatch(part):
                found.append((part, f"{what}.{name}"))
    return tuple(dict.fromkeys(found))


#: how a value starts that reads as a path or an option: shown even under a secret-looking name
_PATH_OR_OPTION = ("/", "./", "../", "~", "-")


def env_settings(raw: Mapping[str, Any]) -> tuple[str, ...]:
    """Every variable an entry's ``env`` tables set, at any depth, as ``NAME=value`` as written
    (``BASH_ENV=./env.sh``, ``NODE_OPTIONS=--require ./h.js``, ``PATH=./bin:/usr/bin``): such a
    value can decide what runs. A value is masked (``<redacted:env.NAME>``) only under a name
    that looks secret (:func:`kairox.is_secret`), and then not when it reads as a path or an
    option. ``""`` (taken from the user's environment) is among the variables it reads instead."""
    from ._secrets import is_secret

    out: list[str] = []
    for key, value, parent in _walk(raw):
        if key.lower() != "env" or not isinstance(value, Mapping) or parent.lower() in _VALUE_TABLES:
            continue
        for name, given in value.items():
            if given is None or given == "":
                continue
            text = given if isinstance(given, str) else json.dumps(given, default=str)
            if is_secret(str(name)) and not text.startswith(_PATH_OR_OPTION):
                text = f"<redacted:env.{name}>"
            out.append(f"{name}={text}")
    return tuple(dict.fromkeys(out))


def mask(text: str, secrets: Iterable[tuple[str, str]]) -> str:
    """``text`` with each secret value replaced by ``<redacted:WHAT>`` (longest first)."""
    for value, what in sorted(secrets, key=lambda s: -len(s[0])):
        if value in text:
            text = text.replace(value, f"<redacted:{what}>")
    return text


# -- what an entry's fingerprint covers ----------------------------------------------------

#: bytes of the files one item's command lines name that its fingerprint reads, in all: an item
#: whose files hold more is refused (it cannot be fingerprinted whole)
MAX_REFERENCED_BYTES = 64 * 1024 * 1024
#: words (and their parts) of one item's command lines looked at as paths: more refuses the item
MAX_REFERENCED_WORDS = 20_000
_SHELL_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_CHUNK = 1024 * 1024


def _kairox_expanded(word: str, env: Mapping[str, str]) -> str:
    """``word`` as kairox expands it when the entry runs (``${VAR}``, ``${VAR:-default}``,
    ``$${``); as written when that fails (the entry then does not run at all)."""
    from ._config import expand_env
    from .errors import ConfigError

    try:
        return expand_env(word, env)
    except ConfigError:
        return word


def _shell_words(text: str, env: Mapping[str, str]) -> list[str]:
    """The words a shell would see in ``text`` (``sh -c "..."``), with ``$VAR`` / ``${VAR}``
    as the shell expands them from ``env`` (unset: empty)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # an unclosed quote: the shell refuses it too; look at the plain words
        words = text.split()
    return [_SHELL_VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), w) for w in words]


def _named_paths(argvs: Iterable[Iterable[str]], env: Mapping[str, str]) -> Iterator[str]:
    """Every word of the command lines that may name a file, as it will be at run time:
    expanded as kairox expands it, the part after a ``=`` (``--script=tools/lib.sh``), the
    words of a shell string (``sh -c "./run.sh"``), and ``~`` as the user's home too."""
    for argv in argvs:
        for word in argv:
            expanded = _kairox_expanded(word, env)
            parts = [expanded]
            if "=" in expanded:
                parts.append(expanded.split("=", 1)[1])
            if any(c.isspace() for c in expanded) or "$" in expanded:
                parts.extend(_shell_words(expanded, env))
            for part in parts:
                if not part or "\0" in part or len(part) > 4096:
                    continue
                yield part
                if part.startswith("~"):
                    yield os.path.expanduser(part)


def _env_tables(raw: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``env`` tables of an entry (:func:`_tables`)."""
    return [table["env"] for table in _tables(raw) if isinstance(table.get("env"), Mapping)]


def _env_words(raw: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """The values an entry's ``env`` sets, as words that may name a file: each value as kairox
    expands it, and each of its ``:``-separated parts (``PATH``, ``LD_PRELOAD``)."""
    words: list[str] = []
    for table in _env_tables(raw):
        for value in table.values():
            if not isinstance(value, str) or not value:
                continue
            expanded = _kairox_expanded(value, env)
            words.append(expanded)
            if os.pathsep in expanded:
                words.extend(part for part in expanded.split(os.pathsep) if part)
    return words


def _process_path(raw: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """The ``PATH`` the entry's process gets: its own ``env.PATH`` (``""``: the user's), else the user's."""
    for table in reversed(_env_tables(raw)):
        given = table.get("PATH")
        if isinstance(given, str) and given:
            return _kairox_expanded(given, env)
    return env.get("PATH", os.defpath)


def programs(
    raw: Mapping[str, Any], workspace: str | os.PathLike[str], env: Mapping[str, str]
) -> list[tuple[str, str]]:
    """``(command, program)`` for each command of an entry given by name (``node``) that the
    ``PATH`` its process gets finds inside the workspace (``./bin/node`` through
    ``env.PATH = "./bin:..."``, or a relative entry of your own ``PATH``): a relative ``PATH``
    entry is taken against the entry's ``cwd`` (else the workspace), as the process resolves it."""
    base = _base_of(raw, Path(workspace), env)
    real_ws = os.path.realpath(workspace)
    found: list[tuple[str, str]] = []
    for argv in _argvs(raw):
        command = _kairox_expanded(argv[0], env)
        if not command or os.sep in command or "\0" in command:
            continue
        dirs = _process_path(raw, env).split(os.pathsep)[:MAX_REFERENCED_WORDS]
        path = os.pathsep.join(str(base / d) if not os.path.isabs(d) else d for d in dirs)
        program = shutil.which(command, path=path)
        if program is None:
            continue
        written = os.path.normpath(program)
        if _inside(written, os.path.normpath(str(workspace))) or _inside(os.path.realpath(written), real_ws):
            found.append((command, written))
    return found


def _base_of(raw: Mapping[str, Any], workspace: Path, env: Mapping[str, str]) -> Path:
    """Where the entry's relative paths lead: its ``cwd`` (relative to the workspace, ``~``
    expanded, as the stdio transport reads it), else the workspace."""
    cwd = raw.get("cwd")
    if isinstance(cwd, str) and cwd:
        return workspace / os.path.expanduser(_kairox_expanded(cwd, env))
    return workspace


def _hash_file(root: Root, path: str, budget: int) -> tuple[str, int]:
    """The SHA-256 of a file (and its mode) read through ``root``, and its size. :class:`Refused`
    when it is larger than ``budget`` (checked before and while reading)."""
    digest = hashlib.sha256()
    size = 0
    with root.open(path) as fh:
        digest.update(f"{os.fstat(fh.fileno()).st_mode:o}\0".encode())
        while chunk := fh.read(_CHUNK):
            size += len(chunk)
            if size > budget:
                raise Refused(path, f"larger than {budget} bytes")
            digest.update(chunk)
    return digest.hexdigest(), size


def referenced_files(
    raw: Mapping[str, Any],
    workspace: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    words: Iterable[str] = (),
) -> tuple[dict[str, str], str]:
    """The workspace files an entry's command lines, its ``env`` values and ``words`` name,
    and the program a command given by name is found as, as they will be when it runs, and
    why the entry cannot be fingerprinted ("" when it can).

    Returns ``({path relative to the workspace: digest}, refused)``. Each word of ``command``
    and ``args`` is expanded as kairox expands it (``${PWD}/x.sh`` with ``env``), split at ``=``
    and into shell words, and resolved against the entry's ``cwd``; a regular file inside
    the workspace counts by its mode and contents, read through :class:`kairox.files.Root`.
    A path that leads out of the workspace through a link counts by where it leads (the
    file out there is not the workspace's); a device or pipe by what it is; a file too
    large to read whole, or one that cannot be read, refuses the entry.
    """
    env = os.environ if env is None else env
    root = Root(workspace, label="the workspace", limits=Limits(max_bytes=MAX_REFERENCED_BYTES))
    base = _base_of(raw, root.path, env)
    files: dict[str, str] = {}
    budget = MAX_REFERENCED_BYTES
    seen: set[str] = set()
    # the command lines, what the env values name (BASH_ENV=./env.sh, LD_PRELOAD=./x.so), and
    # the program a command given by name is on the PATH the process gets
    words = itertools.chain(
        _named_paths(_argvs(raw), env),
        _named_paths([_env_words(raw, env), words], env),
        (program for _command, program in programs(raw, root.path, env)),
    )
    for count, word in enumerate(words):
        if count >= MAX_REFERENCED_WORDS:
            return files, f"its command lines have more than {MAX_REFERENCED_WORDS} words to check for files"
        given = os.path.join(base, word)
        if given in seen:
            continue
        seen.add(given)
        try:
            if not os.path.lexists(given):
                continue
            written = os.path.normpath(given)
            inside = _inside(written, str(root.path)) or _inside(written, str(root.real))
            try:
                real = root.locate(given)
            except Refused as exc:
                if inside:  # a workspace path that leads out (a link): where it leads counts
                    files[os.path.relpath(written, root.path)] = f"refused: {exc.reason}"
                continue
            rel = os.path.relpath(real, root.real)
            kind = root.kind(real)
            if kind == "dir" or rel in files:
                continue
            if kind == "missing":
                files[rel] = "missing"
            elif kind == "other":
                files[rel] = "not a regular file"
            else:
                files[rel], size = _hash_file(root, str(real), budget)
                budget -= size
        except Refused as exc:
            return files, f"{exc.file}: {exc.reason}: its contents cannot be fingerprinted whole"
        except (OSError, ValueError) as exc:
            return files, f"{given}: cannot be read ({type(exc).__name__}: {exc}): its contents cannot be fingerprinted"
    return files, ""


def _names_a_file(base: Path, value: str) -> bool:
    try:
        return len(value) <= 4096 and "\0" not in value and os.path.lexists(base / value)
    except (OSError, ValueError):
        return True


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _tool_prefixes(kind: str, name: str, raw: Mapping[str, Any]) -> tuple[str, ...]:
    """The prefixes an MCP server entry's tools take (``<prefix>.<tool>``): its ``tool_prefix``
    (``toolPrefix``) and its name. Other kinds: none (their tools are not named after them)."""
    if kind not in ("mcp_servers", "mcp_server"):
        return ()
    given = [raw.get(k) for k in ("tool_prefix", "toolPrefix")]
    return tuple(dict.fromkeys([*(p for p in given if isinstance(p, str) and p.strip()), name]))


@attrs.frozen
class Declared:
    """One thing a workspace declares that would run code or contact a URL.

    ``key`` is stable across runs (``mcp_servers.git``, ``.mcp.json:everything``,
    ``bundle:guard``); ``digest`` is the fingerprint of the declaration itself and of the
    files it runs, so any change to them needs trust again. ``commands``, ``urls`` and
    ``env_names`` are what the user is shown before trusting (commands whole, as they will
    run; :meth:`to_dict` masks the values in ``secrets`` wherever they occur).
    ``refused`` says why the item cannot be trusted as it is ("" when it can): its
    fingerprint could not cover everything it runs.
    """

    key: str
    kind: str
    name: str
    source: str
    digest: str
    commands: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    env_names: tuple[str, ...] = ()
    #: more the user should know before trusting (what a [policy] table grants, a bundle
    #: that would replace one of the user's own); not part of the fingerprint
    notes: tuple[str, ...] = attrs.field(default=(), eq=False)
    #: why the item cannot be trusted as it is ("" when it can)
    refused: str = ""
    #: values the item sets for its process or server (``(value, what)``): masked where shown
    secrets: tuple[tuple[str, str], ...] = attrs.field(default=(), eq=False, repr=False)
    #: the prefixes its tools take (``git`` for ``git.status``): the user's rules for them apply
    tool_prefixes: tuple[str, ...] = attrs.field(default=(), eq=False)
    #: the workspace files its fingerprint covers (path relative to the workspace -> digest)
    files: Mapping[str, str] = attrs.field(factory=dict, eq=False, repr=False)
    #: every variable its ``env`` sets, ``NAME=value`` (:func:`env_settings`): shown, as it may decide what runs
    env: tuple[str, ...] = attrs.field(default=(), eq=False)

    @classmethod
    def entry(
        cls,
        key: str,
        kind: str,
        name: str,
        source: str,
        raw: Mapping[str, Any],
        *,
        workspace: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        whole_environment: bool = False,
    ) -> Declared:
        """An item for a server-like entry (command/args/url/env), fingerprinted over the
        whole entry and, with ``workspace``, over the workspace files its command lines and
        ``env`` values name and the program a command given by name is found as, as they will
        be when it runs (:func:`referenced_files`, with ``env``, default ``os.environ``): a
        trusted ``./run.sh``, ``${PWD}/x.sh`` or ``BASH_ENV=./env.sh`` that changes needs trust
        again. ``whole_environment``: its process gets kairox's whole environment (said among
        the variables it reads)."""
        commands, urls, env_names = describe_entry(raw)
        secrets = entry_secrets(raw)
        notes: tuple[str, ...] = ()
        files: dict[str, str] = {}
        refused = ""
        if workspace is not None:
            run_env = os.environ if env is None else env
            files, refused = referenced_files(raw, workspace, env=run_env)
            where = os.path.normpath(str(workspace))
            notes = tuple(
                f"{shell_quote(command)} runs {shell_quote(os.path.relpath(program, where))} of the workspace, "
                "found on the PATH its process gets"
                for command, program in programs(raw, workspace, run_env)
            )
            # a value that names a file of the workspace is never masked: it says what runs
            base = _base_of(raw, Path(workspace), run_env)
            secrets = tuple(s for s in secrets if not _names_a_file(base, s[0]))
            if base != Path(workspace):
                notes = (*notes, f"runs in {shell_quote(str(raw.get('cwd')))}")
                if not _inside(os.path.realpath(base), os.path.realpath(workspace)):
                    # ``./x.sh`` there is not the workspace's, and no fingerprint can cover it
                    refused = refused or (
                        f"its cwd {shell_quote(str(raw.get('cwd')))} is outside the workspace: "
                        "what it runs there cannot be fingerprinted"
                    )
        if whole_environment and _WHOLE_ENVIRONMENT not in env_names:
            env_names = (*env_names, WHOLE_ENVIRONMENT)
            notes = (*notes, f"its process {WHOLE_ENVIRONMENT_NOTE}")
        return cls(
            key,
            kind,
            name,
            source,
            fingerprint([kind, name, raw, files]),
            commands,
            urls,
            env_names,
            notes=notes,
            refused=refused,
            secrets=secrets,
            tool_prefixes=_tool_prefixes(kind, name, raw),
            files=files,
            env=env_settings(raw),
        )

    @classmethod
    def table(
        cls,
        key: str,
        kind: str,
        name: str,
        source: str,
        table: Mapping[str, Any],
        *,
        notes: Iterable[str] = (),
        workspace: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Declared:
        """An item for a workspace file's table of a section (``[tools]``, ``[catalog]``):
        fingerprinted over the table and, with ``workspace``, over the workspace files any of
        its values names (``[philont] node = "./tools/node"``), as :meth:`entry` does for a
        command line; ``notes`` say what it sets and whose value it replaces."""
        commands, urls, env_names = describe_entry(table)
        urls = (*urls, *(u for u in _strings(table) if u.startswith(("http://", "https://")) and u not in urls))
        files: dict[str, str] = {}
        refused = ""
        if workspace is not None:
            files, refused = referenced_files(table, workspace, env=env, words=_strings(table))
        return cls(
            key,
            kind,
            name,
            source,
            fingerprint([kind, table, files]) if files else fingerprint([kind, table]),
            commands,
            urls,
            env_names,
            notes=tuple(notes),
            refused=refused,
            secrets=entry_secrets(table),
            files=files,
            env=env_settings(table),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe view: each command line whole, as it will run; URL passwords and
        secret query values redacted; the values in :attr:`secrets` masked wherever they occur."""
        from ._secrets import redact_url

        return {
            "key": self.key,
            "kind": self.kind,
            "name": self.name,
            "source": self.source,
            "commands": [mask(c, self.secrets) for c in self.commands],
            "urls": [mask(redact_url(u), self.secrets) for u in self.urls],
            "env": list(self.env),
            "env_names": list(self.env_names),
            "notes": list(self.notes),
            "refused": self.refused,
        }

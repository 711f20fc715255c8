"""Pieces every manifest format shares: component files, servers, hooks, names."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from kairox.ext import ENTRY_NAME_RE, describe_value
from kairox.files import Refused, Root

from .._matcher import compile_matcher
from .._schema import join, read_json
from ..errors import ManifestError, Problem
from ..model import Contribution, HookDecl
from ..paths import expand_root, refusal, resolve_inside

__all__ = [
    "CLAUDE_EVENTS",
    "KAIROX_EVENTS",
    "NAME_RE",
    "Collector",
    "EntryReader",
    "check_name",
    "claude_hooks",
    "default_inside",
    "lsp_servers",
    "mcp_servers",
    "path_list",
]

#: what a plugin name may look like (it becomes a tool prefix and a skill namespace)
NAME_RE = ENTRY_NAME_RE  # use fullmatch
KAIROX_EVENTS = ("session_start", "session_end", "pre_turn", "pre_tool_call", "post_tool_call")
#: Claude Code hook events and the kairox event each maps onto
CLAUDE_EVENTS = {
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "UserPromptSubmit": "pre_turn",
    "PreToolUse": "pre_tool_call",
    "PostToolUse": "post_tool_call",
    "PostToolUseFailure": "post_tool_call",  # run only when the tool returned an error
}
#: the Claude events whose hooks see a tool call (the only ones an ``if`` condition applies to)
TOOL_EVENTS = ("pre_tool_call", "post_tool_call")
MCP_TYPES = ("stdio", "http", "sse", "streamable-http", "streamable_http")
DEFAULT_HOOK_TIMEOUT = None  # the loader's [plugins] hook_timeout applies


def check_name(name: Any, *, file: str | None, path: str) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ManifestError(
            f"{describe_value(name)} is not a plugin name (letters, digits, '.', '_', '-'; at most 128)",
            file=file,
            path=path,
        )
    return name


class Collector:
    """Collects contributions, dropping (with a warning) a second one of the same kind and name."""

    def __init__(self, problems: list[Problem]) -> None:
        self.items: list[Contribution] = []
        self._keys: set[str] = set()
        self._sources: set[tuple[str, Path]] = set()
        self.problems = problems
        #: hook events already reported as having no kairox equivalent (reported once each)
        self.unsupported_events: dict[str, int] = {}

    def add(self, item: Contribution, *, file: str | None = None, path: str = "") -> None:
        if item.config is None and (item.kind, item.source) in self._sources:
            return  # the same file reached twice (a default location also declared)
        if item.key in self._keys:
            self.problems.append(
                Problem(f"a second {item.kind} named {item.name!r} is ignored ({item.source})", file=file, path=path)
            )
            return
        self._keys.add(item.key)
        self._sources.add((item.kind, item.source))
        self.items.append(item)

    def unique_name(self, kind: str, base: str) -> str:
        name, n = base, 2
        while f"{kind}/{name}" in self._keys:
            name = f"{base}-{n}"
            n += 1
        return name


def path_list(value: Any, *, file: str | None, path: str) -> list[tuple[str, str]]:
    """A ``string | string[]`` field as ``[(value, field path)]``."""
    if value is None:
        return []
    if isinstance(value, str):
        return [(value, path)]
    if isinstance(value, list):
        out = []
        for i, v in enumerate(value):
            if not isinstance(v, str):
                raise ManifestError(
                    f"expected a path (a string), got {describe_value(v)}", file=file, path=join(path, i)
                )
            out.append((v, join(path, i)))
        return out
    raise ManifestError(f"expected a path or a list of paths, got {describe_value(value)}", file=file, path=path)


# -- file components ------------------------------------------------------------


def _hidden(name: str) -> bool:
    return name.startswith(".")


def skills_in(root: Root, directory: Path, out: Collector, *, file: str | None, path: str) -> None:
    """Skills in a directory of the bundle: ``<name>/SKILL.md`` folders and kairox skill
    files (``*.md``), read inside the bundle's ``root``; an entry that leads outside it
    is a problem where the skill would have been.

    A directory that itself holds ``SKILL.md`` is one skill.
    """
    if _skill_folder(root, directory, out):
        out.add(Contribution("skill", directory.name, directory), file=file, path=path)
        return
    for entry in root.entries(directory):
        if _hidden(entry.name):
            continue
        if entry.refused:
            if entry.kind == "dir" or entry.name.endswith(".md"):
                out.problems.append(refusal(entry, "skill"))
            continue
        if entry.kind == "dir":
            if _skill_folder(root, entry.path, out):
                out.add(Contribution("skill", entry.name, entry.path), file=file, path=path)
        elif entry.kind == "file" and entry.path.suffix == ".md" and entry.name.upper() != "README.MD":
            out.add(Contribution("skill", entry.path.stem, entry.path), file=file, path=path)


def _skill_folder(root: Root, directory: Path, out: Collector) -> bool:
    """Whether ``directory`` holds a ``SKILL.md`` inside the bundle (one that leads outside
    is a problem, and not a skill)."""
    try:
        return root.kind(directory / "SKILL.md") == "file"
    except Refused as exc:
        out.problems.append(refusal(exc, "skill"))
        return False


def markdown_in(root: Root, target: Path, kind: str, out: Collector, *, file: str | None, path: str) -> None:
    """Markdown components (commands, agents, output styles): a file, or the ``*.md`` files of a
    directory (hidden ones skipped), walked inside the bundle's ``root``; an entry that leads
    outside it is a problem where the component would have been."""
    if root.is_file(target):
        out.add(Contribution(kind, target.stem, target), file=file, path=path)
        return
    found = []
    for entry in root.walk(target, skip=_hidden):
        if _hidden(entry.name) or not (entry.name.endswith(".md") or entry.kind == "dir"):
            continue
        if entry.refused:
            out.problems.append(refusal(entry, kind))
        elif entry.kind == "file":
            found.append(entry.path)
    for child in sorted(found):
        rel = child.relative_to(target).with_suffix("")
        out.add(Contribution(kind, ":".join(rel.parts), child), file=file, path=path)


def default_inside(root: Root, rel: str, problems: list[Problem], *, want: str = "") -> Path | None:
    """The resolved path of the default location ``rel`` of the bundle (``skills``,
    ``hooks/hooks.json``), or ``None`` when there is none (or, with ``want``, it is not a
    ``file`` / ``dir``); one that leads outside the bundle, or is a device, a pipe or a
    socket, is ignored with a problem naming it and why."""
    try:
        kind = root.kind(rel)
    except Refused as exc:
        problems.append(refusal(exc))
        return None
    if kind == "other":
        problems.append(refusal(Refused(root.path / rel, "not a regular file or folder; not read")))
        return None
    if kind == "missing" or (want and kind != want):
        return None
    return root.locate(rel)


def add_components(
    root: Root,
    kind: str,
    declared: list[tuple[str, str]],
    defaults: tuple[str, ...],
    out: Collector,
    problems: list[Problem],
    *,
    file: str | None,
    require_dot_slash: bool = False,
) -> None:
    """Resolve declared paths (errors when they escape) plus default locations that exist."""
    targets: list[tuple[Path, str, bool]] = []
    for value, fpath in declared:
        targets.append(
            (resolve_inside(root, value, file=file, path=fpath, require_dot_slash=require_dot_slash), fpath, True)
        )
    for default in defaults:
        found = default_inside(root, default, problems)
        if found is not None:
            targets.append((found, "", False))
    for target, fpath, was_declared in targets:
        what = root.kind(target)
        if what == "missing":
            if was_declared:
                problems.append(Problem(f"{target} does not exist", file=file, path=fpath))
            continue
        if what == "other":
            problems.append(refusal(Refused(target, "not a regular file or folder; not read")))
            continue
        if kind == "skill":
            if what == "dir":
                skills_in(root, target, out, file=file, path=fpath)
            elif target.name == "SKILL.md":
                out.add(Contribution("skill", target.parent.name, target.parent), file=file, path=fpath)
            else:
                out.add(Contribution("skill", target.stem, target), file=file, path=fpath)
        else:
            markdown_in(root, target, kind, out, file=file, path=fpath)


# -- servers --------------------------------------------------------------------


def _string_map(value: Any, *, file: str | None, path: str) -> None:
    if not isinstance(value, dict):
        raise ManifestError(f"expected a table of strings, got {describe_value(value)}", file=file, path=path)
    for k, v in value.items():
        if not isinstance(v, str):
            raise ManifestError(f"expected a string, got {describe_value(v)}", file=file, path=join(path, str(k)))


def _string_list(value: Any, *, file: str | None, path: str) -> None:
    if not isinstance(value, list):
        raise ManifestError(f"expected a list of strings, got {describe_value(value)}", file=file, path=path)
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise ManifestError(f"expected a string, got {describe_value(v)}", file=file, path=join(path, i))


def _check_mcp_entry(entry: Any, *, file: str | None, path: str) -> None:
    if not isinstance(entry, dict):
        raise ManifestError(f"expected a server table, got {describe_value(entry)}", file=file, path=path)
    for key in ("command", "url", "cwd", "type"):
        if key in entry and not isinstance(entry[key], str):
            raise ManifestError(f"expected a string, got {describe_value(entry[key])}", file=file, path=join(path, key))
    if "type" in entry and entry["type"] not in MCP_TYPES:
        raise ManifestError(
            f"expected one of {', '.join(MCP_TYPES)}, got {entry['type']!r}", file=file, path=join(path, "type")
        )
    if "args" in entry:
        _string_list(entry["args"], file=file, path=join(path, "args"))
    for key in ("env", "headers"):
        if key in entry:
            _string_map(entry[key], file=file, path=join(path, key))
    if "command" not in entry and "url" not in entry:
        raise ManifestError("a server needs a command (stdio) or a url (http, sse)", file=file, path=path)


def _server_table(data: Any, wrapper: str | None, *, file: str | None, path: str) -> tuple[dict[str, Any], str]:
    if not isinstance(data, dict):
        raise ManifestError(f"expected a JSON object, got {describe_value(data)}", file=file, path=path)
    if wrapper and wrapper in data:
        inner = data[wrapper]
        if not isinstance(inner, dict):
            raise ManifestError(
                f"expected a table of servers, got {describe_value(inner)}", file=file, path=join(path, wrapper)
            )
        return inner, join(path, wrapper)
    if wrapper == "mcpServers" and "mcp_servers" in data:
        # config.toml's spelling (21st-dev/codex-plugin ships it): read as a bare table it is a
        # server named mcp_servers; Codex and Claude Code read no servers from it
        raise ManifestError(
            "servers in a JSON file go under `mcpServers`; `mcp_servers` is the name in Codex's "
            "config.toml, and neither Codex nor Claude Code reads servers from it here",
            file=file,
            path=join(path, "mcp_servers"),
        )
    return data, path


def _servers(
    root: Root,
    value: Any,
    kind: str,
    wrapper: str | None,
    check: Any,
    out: Collector,
    *,
    file: str | None,
    path: str,
    entry_reader: EntryReader | None = None,
) -> None:
    """Servers from an inline table, a path to a JSON file, or a list of either; each entry
    checked by ``check``, then (with ``entry_reader``) read into its contribution."""
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        ipath = join(path, i) if isinstance(value, list) else path
        if isinstance(item, str):
            src = resolve_inside(root, item, file=file, path=ipath)
            if root.kind(src) in ("missing", "dir"):
                out.problems.append(Problem(f"{item!r} does not exist; no servers from it", file=file, path=ipath))
                continue
            table, tpath = _server_table(read_json(src, root), wrapper, file=str(src), path="")
            sfile: str | None = str(src)
        elif isinstance(item, dict):
            table, tpath = _server_table(item, wrapper, file=file, path=ipath)
            src, sfile = Path(file) if file else root.real, file
        else:
            raise ManifestError(
                f"expected a table of servers or a path to a JSON file, got {describe_value(item)}",
                file=file,
                path=ipath,
            )
        for name, entry in table.items():
            epath = join(tpath, str(name))
            check(entry, file=sfile, path=epath)
            expanded = expand_root(entry, root.real)
            item = (
                entry_reader(str(name), expanded, src, sfile, epath)
                if entry_reader is not None
                else Contribution(kind, str(name), src, expanded)
            )
            out.add(item, file=sfile, path=epath)


#: reads one server entry (plugin-root variables expanded) into its contribution:
#: ``(name, entry, source, file, field path) -> Contribution``
EntryReader = Callable[[str, Any, Path, Optional[str], str], Contribution]


def _no_check(entry: Any, *, file: str | None, path: str) -> None:
    return None


def mcp_servers(
    root: Root, value: Any, out: Collector, *, file: str | None, path: str, entry_reader: EntryReader | None = None
) -> None:
    """MCP servers: ``.mcp.json`` entries, or (with ``entry_reader``) entries of a schema that
    reader checks and maps itself."""
    check = _check_mcp_entry if entry_reader is None else _no_check
    _servers(root, value, "mcp_server", "mcpServers", check, out, file=file, path=path, entry_reader=entry_reader)


def _check_lsp_entry(entry: Any, *, file: str | None, path: str) -> None:
    if not isinstance(entry, dict):
        raise ManifestError(f"expected a server table, got {describe_value(entry)}", file=file, path=path)
    if not isinstance(entry.get("command"), str):
        got = describe_value(entry["command"]) if "command" in entry else "nothing"
        raise ManifestError(f"expected a command (a string), got {got}", file=file, path=join(path, "command"))
    if "extensionToLanguage" not in entry:
        raise ManifestError("required key is missing", file=file, path=join(path, "extensionToLanguage"))
    _string_map(entry["extensionToLanguage"], file=file, path=join(path, "extensionToLanguage"))
    if "args" in entry:
        _string_list(entry["args"], file=file, path=join(path, "args"))
    if "env" in entry:
        _string_map(entry["env"], file=file, path=join(path, "env"))
    for key in ("startupTimeout", "shutdownTimeout", "maxRestarts"):
        if key in entry and (isinstance(entry[key], bool) or not isinstance(entry[key], (int, float))):
            raise ManifestError(f"expected a number, got {describe_value(entry[key])}", file=file, path=join(path, key))
    if "restartOnCrash" in entry and not isinstance(entry["restartOnCrash"], bool):
        raise ManifestError(
            f"expected true or false, got {describe_value(entry['restartOnCrash'])}",
            file=file,
            path=join(path, "restartOnCrash"),
        )


#: Claude ``lspServers`` options kairox-lsp honours (``transport``: stdio only, refused otherwise)
LSP_OPTIONS = frozenset(
    (
        "command",
        "args",
        "env",
        "transport",
        "extensionToLanguage",
        "initializationOptions",
        "settings",
        "startupTimeout",
        "shutdownTimeout",
        "restartOnCrash",
        "maxRestarts",
    )
)


def lsp_servers(root: Root, value: Any, out: Collector, *, file: str | None, path: str) -> None:
    def check(entry: Any, *, file: str | None, path: str) -> None:
        _check_lsp_entry(entry, file=file, path=path)
        for key in entry:
            if key == "workspaceFolder":
                why = "not honoured: kairox-lsp's servers work on the kairox workspace"
            elif key not in LSP_OPTIONS:
                why = "not an lspServers option kairox-lsp knows; ignored"
            else:
                continue
            out.problems.append(Problem(why, file=file, path=join(path, str(key)), kind="lsp-option"))

    _servers(root, value, "lsp_server", "lspServers", check, out, file=file, path=path)


# -- hooks ------------------------------------------------------------------------


def hook_name(out: Collector, event: str, script: Path | None, command: str | None, *, label: str | None = None) -> str:
    if label is not None:
        stem = label
    elif script is not None:
        stem = script.stem
    else:
        try:
            tokens = shlex.split(command or "")
        except ValueError:
            tokens = (command or "").split()
        scripts = [t for t in tokens if "/" in t or "\\" in t]
        stem = Path((scripts or tokens or ["hook"])[0]).stem or "hook"
    return out.unique_name("hook", f"{event}.{stem}")


def _timeout(value: Any, *, file: str | None, path: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ManifestError(f"expected a positive number of seconds, got {describe_value(value)}", file=file, path=path)
    return float(value)


def _condition(value: Any, event: str, problems: list[Problem], *, file: str | None, path: str) -> str | None:
    """A hook's ``if``: one permission rule (checked now, so a typo fails at load, not never)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ManifestError(f"expected a permission rule (a string), got {describe_value(value)}", file=file, path=path)
    from ..rules import parse_rule

    try:
        parse_rule(value)
    except ValueError as exc:
        raise ManifestError(str(exc), file=file, path=path) from None
    if event not in TOOL_EVENTS:
        problems.append(Problem(f"`if` applies to tool events only; ignored on {event}", file=file, path=path))
        return None
    return value


def _check_matcher(matcher: str, event: str, problems: list[Problem], *, file: str | None, path: str) -> None:
    """A hook's matcher must be one RE2 can run. A guard's (``pre_tool_call``) that is not
    stays in the manifest, reported: its hook then blocks every tool call (it cannot say which
    calls it guards, and a guard that vanished would let them all run); any other hook's
    refuses the manifest."""
    try:
        compile_matcher(matcher)
    except ValueError as exc:
        if event != "pre_tool_call":
            raise ManifestError(str(exc), file=file, path=path) from None
        problems.append(Problem(f"{exc}; this guard hook blocks every tool call", file=file, path=path))


def claude_hooks(
    root: Root, data: Any, out: Collector, problems: list[Problem], *, file: str | None, path: str
) -> None:
    """Claude hooks: ``{hooks: {Event: [{matcher?, hooks: [{type, command, timeout}]}]}}``
    (the outer ``hooks`` is optional inline in ``plugin.json``)."""
    if not isinstance(data, dict):
        raise ManifestError(f"expected a JSON object, got {describe_value(data)}", file=file, path=path)
    events, epath = data, path
    if "hooks" in data:
        events, epath = data["hooks"], join(path, "hooks")
        for key in data:
            if key not in ("hooks", "description", "$schema"):
                problems.append(Problem("unknown field (ignored)", file=file, path=join(path, key)))
    if not isinstance(events, dict):
        raise ManifestError(f"expected a table of events, got {describe_value(events)}", file=file, path=epath)
    for event, groups in events.items():
        gpath = join(epath, str(event))
        if not isinstance(groups, list):
            raise ManifestError(
                f"expected a list of matcher groups, got {describe_value(groups)}", file=file, path=gpath
            )
        ours = CLAUDE_EVENTS.get(str(event))
        if ours is None:
            if str(event) not in out.unsupported_events:
                problems.append(
                    Problem(
                        f"hook event {event!r} has no kairox equivalent; its hooks are not run",
                        file=file,
                        path=gpath,
                        kind=f"hook-event:{event}",
                    )
                )
            out.unsupported_events[str(event)] = out.unsupported_events.get(str(event), 0) + len(groups)
            continue
        for i, group in enumerate(groups):
            ipath = join(gpath, i)
            if not isinstance(group, dict):
                raise ManifestError(f"expected a matcher group, got {describe_value(group)}", file=file, path=ipath)
            matcher = group.get("matcher")
            if matcher is not None and not isinstance(matcher, str):
                raise ManifestError(
                    f"expected a string, got {describe_value(matcher)}", file=file, path=join(ipath, "matcher")
                )
            if matcher in ("", "*"):
                matcher = None  # Claude's "match everything"
            if matcher is not None:
                _check_matcher(matcher, ours, problems, file=file, path=join(ipath, "matcher"))
            handlers = group.get("hooks")
            if not isinstance(handlers, list):
                raise ManifestError(
                    f"expected a list of hooks, got {describe_value(handlers) if 'hooks' in group else 'nothing'}",
                    file=file,
                    path=join(ipath, "hooks"),
                )
            for j, handler in enumerate(handlers):
                hpath = join(join(ipath, "hooks"), j)
                decl = _handler(root, handler, ours, str(event), matcher, problems, file=file, path=hpath)
                if decl is None:
                    continue
                src = Path(file) if file else root.real
                name = hook_name(out, ours, None, decl.command, label=_label(decl))
                out.add(Contribution("hook", name, src, decl), file=file, path=hpath)


#: handler types that need a model to evaluate them (Claude's ``prompt`` and ``agent``)
MODEL_HANDLERS = ("prompt", "agent")
HTTP_SCHEMES = ("http", "https")


def _label(decl: HookDecl) -> str | None:
    if decl.handler == "mcp_tool" and decl.target is not None:
        return str(decl.target["tool"])
    if decl.handler == "http":
        return "http"
    return None


def _string(handler: dict[str, Any], key: str, *, file: str | None, path: str) -> str:
    value = handler.get(key)
    if not isinstance(value, str) or not value.strip():
        got = describe_value(value) if key in handler else "nothing"
        raise ManifestError(f"expected a {key} (a string), got {got}", file=file, path=join(path, key))
    return value


def _http_target(handler: dict[str, Any], *, file: str | None, path: str) -> dict[str, Any]:
    """An ``http`` handler: ``url`` (http or https, taken as written: no variable expands in it,
    so the URL a bundle's trust covers is the one contacted), ``headers`` (``$VAR`` / ``${VAR}``
    expand only for the names in ``allowedEnvVars``)."""
    from urllib.parse import urlsplit

    url = _string(handler, "url", file=file, path=path)
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ManifestError(f"{url!r} is not a URL ({exc})", file=file, path=join(path, "url")) from None
    if parts.scheme not in HTTP_SCHEMES or not parts.hostname:
        raise ManifestError(f"{url!r} is not an http(s) URL", file=file, path=join(path, "url"))
    headers = handler.get("headers", {})
    _string_map(headers, file=file, path=join(path, "headers"))
    allowed = handler.get("allowedEnvVars", [])
    _string_list(allowed, file=file, path=join(path, "allowedEnvVars"))
    return {"url": url, "headers": dict(headers), "allowedEnvVars": list(allowed)}


def _mcp_tool_target(handler: dict[str, Any], *, file: str | None, path: str) -> dict[str, Any]:
    """An ``mcp_tool`` handler: ``server``, ``tool`` and ``input`` (an object whose strings
    may hold ``${field.path}`` of the hook's payload)."""
    server = _string(handler, "server", file=file, path=path)
    tool = _string(handler, "tool", file=file, path=path)
    arguments = handler.get("input", {})
    if not isinstance(arguments, dict):
        raise ManifestError(
            f"expected an object of arguments, got {describe_value(arguments)}", file=file, path=join(path, "input")
        )
    return {"server": server, "tool": tool, "input": arguments}


def _handler(
    root: Root,
    handler: Any,
    ours: str,
    event: str,
    matcher: str | None,
    problems: list[Problem],
    *,
    file: str | None,
    path: str,
) -> HookDecl | None:
    """One handler of a matcher group as a :class:`HookDecl`; ``None`` (reported) when kairox
    does not run it."""
    if not isinstance(handler, dict):
        raise ManifestError(f"expected a hook table, got {describe_value(handler)}", file=file, path=path)
    kind = handler.get("type", "command")
    command: str | None = None
    target: dict[str, Any] | None = None
    if kind == "command":
        command = expand_root(_string(handler, "command", file=file, path=path), root.real)
    elif kind == "http":
        target = _http_target(handler, file=file, path=path)
    elif kind == "mcp_tool":
        target = _mcp_tool_target(handler, file=file, path=path)
    elif kind in MODEL_HANDLERS:
        problems.append(
            Problem(
                f"a {kind!r} hook needs a model to evaluate it, and no host supplies one to plugin hooks; not run",
                file=file,
                path=path,
                kind=f"hook-handler:{kind}",
            )
        )
        return None
    else:
        problems.append(
            Problem(
                f"hook type {describe_value(kind)} is not one kairox runs (command, http, mcp_tool); ignored",
                file=file,
                path=path,
                kind=f"hook-handler:{kind}",
            )
        )
        return None
    timeout = _timeout(handler.get("timeout"), file=file, path=join(path, "timeout"))
    condition = _condition(handler.get("if"), ours, problems, file=file, path=join(path, "if"))
    run_async = handler.get("async", False)
    if not isinstance(run_async, bool):
        raise ManifestError(
            f"expected true or false, got {describe_value(run_async)}", file=file, path=join(path, "async")
        )
    if handler.get("asyncRewake") is True:
        problems.append(
            Problem(
                "asyncRewake is not supported (kairox has no way to wake the model); "
                "the hook runs in the background (async)",
                file=file,
                path=join(path, "asyncRewake"),
            )
        )
        run_async = True
    return HookDecl(
        event=ours,
        command=command,
        matcher=matcher,
        timeout=timeout,
        source_event=event,
        condition=condition,
        run_async=run_async,
        handler=kind,
        target=target,
    )


def kairox_hooks(root: Root, hooks: list[Any], out: Collector, *, file: str | None, path: str) -> None:
    """Kairox hooks: ``[{event, script, timeout?, matcher?}]`` with ``event`` a kairox lifecycle event."""
    for i, hook in enumerate(hooks):
        hpath = join(path, i)
        if hook.event not in KAIROX_EVENTS:
            raise ManifestError(
                f"expected one of {', '.join(KAIROX_EVENTS)}, got {hook.event!r}", file=file, path=join(hpath, "event")
            )
        if hook.matcher is not None:
            _check_matcher(hook.matcher, hook.event, out.problems, file=file, path=join(hpath, "matcher"))
        timeout = _timeout(hook.timeout, file=file, path=join(hpath, "timeout"))
        script = resolve_inside(root, hook.script, file=file, path=join(hpath, "script"), allow_root=False)
        if not root.is_file(script):
            if getattr(hook, "onError", "ignore") == "block":
                # a guard that fails closed must not vanish because its script is missing
                raise ManifestError(
                    f"{hook.script!r} does not exist, and the hook blocks on error: the plugin is not loaded",
                    file=file,
                    path=join(hpath, "script"),
                )
            out.problems.append(Problem(f"{hook.script!r} does not exist; hook ignored", file=file, path=hpath))
            continue
        decl = HookDecl(
            event=hook.event,
            script=script,
            matcher=hook.matcher,
            timeout=timeout,
            source_event=hook.event,
            on_error=getattr(hook, "onError", "ignore"),
        )
        out.add(Contribution("hook", hook_name(out, hook.event, script, None), script, decl), file=file, path=hpath)

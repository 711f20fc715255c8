"""``kairox.toml``: discovery, merging with provenance, and plugin-owned sections.

Files, lowest precedence first: the user file (``$KAIROX_HOME/kairox.toml``,
default ``~/.kairox/kairox.toml``), the workspace ``.kairox/kairox.toml``, the
workspace ``kairox.toml``. Each top-level table is a *section* owned by a plugin
(registered through ``kairox_register_config_sections``). Sections merge key by
key: a later file replaces a whole entry (``[mcp_servers.git]``), never parts
of it, and each entry remembers the file that set it.

Loading never raises for bad content: each problem becomes a
:class:`~kairox.errors.ConfigError` in :attr:`Config.errors`, and only the bad
entry (one server, one section) is dropped.
"""

from __future__ import annotations

import difflib
import enum
import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs

from ._convert import _join, _key_part, describe_value, errors_from, structure
from ._features import missing_feature_message
from ._home import user_home
from ._registrar import Registrar
from ._secrets import REDACTED, is_secret, redact_args, redact_argv
from .errors import ConfigError
from .files import Root, is_inside, loads_toml, read_document

if TYPE_CHECKING:
    from ._declared import Declared
    from ._trust import TrustState, WorkspaceTrust

__all__ = [
    "BrokenSection",
    "Config",
    "ConfigLayer",
    "ConfigSection",
    "HeldEntry",
    "NotApplied",
    "expand_env",
    "inherit_env",
    "load_config",
    "redact",
    "user_home",
    "workspace_config_files",
]

#: ``${NAME}``, ``${NAME:-default}`` or ``$${`` (a literal ``${``). Applied by
#: :func:`expand_env` only up to the text's last ``}``: no reference ends after it, and
#: before it a default's ``[^}]*`` always reaches a ``}``, so a try either matches (and
#: what it read is replaced) or fails within the name it read, and no name is read by
#: more than two tries: linear. Over a whole value, each unclosed ``${A:-`` read to the
#: end of the text again (quadratic).
_VAR = re.compile(r"\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@attrs.frozen
class ConfigLayer:
    """One file's table of a section, for sections that merge their own layers.

    ``scope`` is ``user`` (the user's own file, or a document given in code) or
    ``workspace`` (a file of the workspace: someone else's until trusted);
    ``trusted`` tells whether the user trusts what this layer declares
    (always true for the user scope).
    """

    file: str
    scope: Literal["user", "workspace"]
    trusted: bool
    table: Mapping[str, Any]


@attrs.frozen
class NotApplied:
    """A value a workspace file set that does not apply, and why (``kairox config show`` marks it)."""

    section: str
    key: str
    file: str
    reason: str


@attrs.frozen
class HeldEntry:
    """An entry of a ``needs_trust`` section that a workspace file declares and the
    user's trust does not cover: it is not structured, expanded or run."""

    section: str
    key: str
    file: str
    raw: Mapping[str, Any]
    state: TrustState
    item: Declared
    #: why it does not run, with the command that lets it
    reason: str = ""
    #: the user's file whose entry of the same name applies instead ("" when none does)
    replaced_by: str = ""


class BrokenSection(ConfigError):
    """A section that does not validate was asked for: its first error, with :attr:`errors`
    (every one) and :attr:`section`. What the section configures is off until it is fixed."""

    def __init__(self, section: str, errors: list[ConfigError]) -> None:
        first = errors[0]
        more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        super().__init__(
            f"{first.message}{more}; [{section}] does not validate, so what it configures is off",
            file=first.file,
            path=first.path or section,
        )
        self.section = section
        self.errors = list(errors)


@attrs.frozen
class ConfigSection:
    """A ``kairox.toml`` section a plugin owns.

    ``schema`` is the type the section structures into (an attrs class), or a
    ``"package.module:Class"`` target naming it, imported the first time the section
    is structured or its default built (:func:`kairox.declare.config_section` passes
    targets, so a section nobody configures costs no import). With
    ``entries=True`` the section is a table of named entries
    (``[mcp_servers.NAME]``), each structured into ``schema`` on its own, so
    one bad entry does not cost the others. ``default`` builds the value when
    the section is absent (``schema()`` when not given). ``needs_trust``, ``narrows``
    and ``merge`` say how values from a workspace file apply (see workspace trust).
    """

    name: str
    schema: Any
    description: str = ""
    entries: bool = False
    default: Callable[[], Any] | None = None
    #: what a workspace file sets here waits for the user's trust, unexpanded: each entry on
    #: its own with ``entries=True``, else each workspace file's table of the section (an item
    #: the trust prompt shows key by key, with the user's value each key replaces). ``False``
    #: only for a section whose workspace values are safe before trust: they run nothing,
    #: read nothing of the user's, and change nothing of the user's own (the plugin applies
    #: them to the workspace's own things, as ``[instructions]`` and ``[plugins]`` do).
    #: For a section with ``merge``, a predicate ``(table) -> bool``: whether that file's
    #: table asks for something only trust allows (``[policy]``: allow rules, writable roots)
    needs_trust: bool | Callable[[Mapping[str, Any]], bool] = True
    #: list keys of a single-table section that guard something (a deny list, disabled
    #: tools, protected files): a workspace's list is added to the user's (or to the
    #: default), never replaces it, and applies trusted or not, since it only closes more
    narrows: tuple[str, ...] = ()
    #: the processes its entries start get kairox's whole environment (language servers,
    #: debug adapters): the trust prompt says so for each workspace entry
    whole_environment: bool = False
    #: ``merge(layers) -> (value, not_applied, errors)`` combines the section's tables
    #: itself, one :class:`ConfigLayer` per file (e.g. ``[policy]``: a workspace only narrows)
    merge: Callable[[Sequence[ConfigLayer]], tuple[Any, list[NotApplied], list[ConfigError]]] | None = None

    def schema_type(self) -> Any:
        """The schema type: :attr:`schema`, or the class its target names (imported once).
        A target that does not import is a :class:`ConfigError` on the section."""
        if not isinstance(self.schema, str):
            return self.schema
        try:
            return _schema_of(self.schema)
        except Exception as exc:
            raise ConfigError(f"the section's schema {self.schema!r} does not import: {exc}", path=self.name) from exc


@functools.cache
def _schema_of(target: str) -> Any:
    from .declare import load_target

    return load_target(target)


def workspace_config_files(workspace: Path) -> list[Path]:
    """Workspace files, lowest precedence first."""
    return [workspace / ".kairox" / "kairox.toml", workspace / "kairox.toml"]


def expand_env(value: str, env: Mapping[str, str], *, path: str = "", file: str | None = None) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}``; ``$${`` is a literal ``${``.

    An unset variable with no default is a :class:`ConfigError`.
    """

    def repl(m: re.Match[str]) -> str:
        escaped, name, default = m.group(1), m.group(2), m.group(3)
        if escaped:
            return m.group(0)[1:]
        val = env.get(name)
        if val is None or (val == "" and default is not None):
            if default is not None:
                return default
            raise ConfigError(
                f"environment variable {name} is not set (write ${{{name}:-default}} for a fallback)",
                file=file,
                path=path,
            )
        return val

    if "${" not in value:
        return value
    end = value.rfind("}") + 1
    return _VAR.sub(repl, value[:end]) + value[end:]


def inherit_env(table: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """Resolve an ``env`` table of a server entry for starting it.

    A value ``""`` means "take the variable of the same name from ``env``"
    (``env = { GITHUB_TOKEN = "" }``); it is left out when that variable is not
    set. Other values are kept as they are (``${VAR}`` was expanded at load).
    Call it when the process starts, so the value is read then.
    """
    out: dict[str, str] = {}
    for key, value in table.items():
        if value == "":
            if key in env:
                out[key] = env[key]
        else:
            out[key] = value
    return out


def _expand_tree(value: Any, env: Mapping[str, str], path: str, file: str | None) -> Any:
    if isinstance(value, str):
        return expand_env(value, env, path=path, file=file)
    if isinstance(value, list):
        return [_expand_tree(v, env, f"{path}[{i}]", file) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _expand_tree(v, env, f"{path}.{k}" if path else k, file) for k, v in value.items()}
    return value


def redact(value: Any, key: str = "", parent: str = "") -> Any:
    """A copy safe to print: values of env/headers tables and secret-looking keys are hidden,
    and so are URL passwords and secret query values and secret-looking arguments
    (``--token=...``) in any string."""
    if isinstance(value, dict):
        return {k: redact(v, k, key) for k, v in value.items()}
    if isinstance(value, list):
        if not is_secret(key, parent) and all(isinstance(v, str) for v in value):
            return redact_argv(value)  # ["--token", "X"]: the pair, not each part alone
        return [redact(v, key, parent) for v in value]
    if is_secret(key, parent):
        return REDACTED
    return redact_args(value) if isinstance(value, str) else value


@attrs.define
class Config:
    """The merged configuration of one runtime."""

    files: list[Path] = attrs.field(factory=list)
    raw: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    provenance: dict[tuple[str, str], str] = attrs.field(factory=dict)
    errors: list[ConfigError] = attrs.field(factory=list)
    values: dict[str, Any] = attrs.field(factory=dict)
    sections: dict[str, ConfigSection] = attrs.field(factory=dict)
    owners: dict[str, str] = attrs.field(factory=dict)
    #: every parsed document, lowest precedence first: (file, data) — for sections
    #: that accumulate across files instead of replacing (e.g. [instructions])
    documents: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)
    #: ``user`` or ``workspace`` for each document in :attr:`documents`
    scopes: dict[str, str] = attrs.field(factory=dict)
    #: entries held until the workspace is trusted: section -> key -> entry
    held: dict[str, dict[str, HeldEntry]] = attrs.field(factory=dict)
    #: entries whose structuring failed (their errors are in :attr:`errors` too): section -> key -> errors
    broken: dict[str, dict[str, list[ConfigError]]] = attrs.field(factory=dict)
    #: sections (not tables of entries) that do not validate: name -> their errors (in :attr:`errors` too);
    #: :meth:`section` refuses them, so what they configure is off rather than back to its defaults
    broken_sections: dict[str, list[ConfigError]] = attrs.field(factory=dict)
    #: workspace values that do not apply, and why
    not_applied: list[NotApplied] = attrs.field(factory=list)
    #: the file whose value of a single-table section's key applies, where that is not the
    #: last file that set it (a held workspace value): (section, key) -> file
    applied_from: dict[tuple[str, str], str] = attrs.field(factory=dict)
    #: the workspace the files were found for (``None``: none)
    workspace: Path | None = None
    #: the environment the user's ``${VAR}`` were expanded from
    env: Mapping[str, str] = attrs.field(factory=dict, repr=False, eq=False)

    #: an absent section's default, built once per registered section (a present one is
    #: :attr:`values`' own object, the same every time, and so is this): name -> (section, value)
    _defaults: dict[str, tuple[ConfigSection, Any]] = attrs.field(factory=dict, init=False, repr=False, eq=False)

    def section(self, name: str) -> Any:
        """The structured value of a section (its default when absent). A section that does
        not validate raises :class:`BrokenSection` naming the file and field: what it
        configures must not run on defaults the user did not choose."""
        broken = self.broken_sections.get(name)
        if broken:
            raise BrokenSection(name, broken)
        values = self.values
        if name in values:
            return values[name]
        sec = self.sections.get(name)
        if sec is None:
            raise KeyError(f"no config section {name!r} is registered")
        if sec.entries:
            return {}  # a table of entries: a new (mutable) dict each time, as ever
        known = self._defaults.get(name)
        if known is not None and known[0] is sec:
            return known[1]
        value = (sec.default or sec.schema_type())()
        self._defaults[name] = (sec, value)
        return value

    def source_of(self, section: str, key: str) -> str | None:
        """The file whose value of ``section``'s ``key`` applies (an entry's file, for a table
        of entries); ``None`` when no file set it."""
        return self.applied_from.get((section, key)) or self.provenance.get((section, key))

    def user_section(self, name: str) -> Any:
        """The section as the user's own files set it (its default where they do not),
        whatever a workspace file says: for what a plugin does with the user's own things
        (``[instructions]`` reads the user's instruction files with the user's settings).
        A part that does not validate raises :class:`BrokenSection`."""
        sec = self.sections.get(name)
        if sec is None:
            raise KeyError(f"no config section {name!r} is registered")
        table: dict[str, Any] = {}
        file: str | None = None
        for doc_file, data in self.documents:
            part = data.get(name)
            if self.scope_of(doc_file) == "user" and isinstance(part, dict):
                table.update(part)
                file = doc_file
        if not table:
            return {} if sec.entries else (sec.default or sec.schema_type())()
        try:
            expanded = _expand_tree(table, self.env, name, file)
            if sec.entries:
                return {k: structure(v, sec.schema_type(), path=f"{name}.{k}", file=file) for k, v in expanded.items()}
            return structure(expanded, sec.schema_type(), path=name, file=file)
        except ConfigError as exc:
            raise BrokenSection(name, list(getattr(exc, "errors", [exc]))) from None

    def scope_of(self, file: str | None) -> str:
        """``workspace`` for a file of the workspace, else ``user`` (the user's file, code)."""
        return self.scopes.get(file or "", "user")

    def held_entries(self, section: str) -> dict[str, HeldEntry]:
        """The section's entries held until the workspace is trusted."""
        return dict(self.held.get(section, {}))

    def broken_entries(self, section: str) -> dict[str, list[ConfigError]]:
        """The section's entries that failed to structure (an unset ``${VAR}``, a bad field)."""
        return dict(self.broken.get(section, {}))

    def show(self, *, redacted: bool = True) -> dict[str, Any]:
        """The merged config as ``{section: {key: {"value": ..., "source": file, "not_applied": why}}}``
        (``not_applied`` is ``""`` for a value that applies)."""
        notes: dict[tuple[str, str], str] = {}
        for note in self.not_applied:
            top = re.split(r"[.\[]", note.key, maxsplit=1)[0]
            text = f"{note.key}: {note.reason}" if note.key != top else note.reason
            notes[(note.section, top)] = (
                f"{notes[(note.section, top)]}; {text}" if (note.section, top) in notes else text
            )
        out: dict[str, Any] = {}
        for section, table in sorted(self.raw.items()):
            sec = self.sections.get(section)
            if sec is not None and sec.merge is not None:
                out[section] = _show_layers(self, section, notes, redacted)
                continue
            rows: dict[str, Any] = {}
            for key, value in table.items():
                row: dict[str, Any] = {
                    "value": redact(value, key) if redacted else value,
                    "source": self.provenance.get((section, key), ""),
                }
                held = self.held.get(section, {}).get(key)
                row["not_applied"] = held.reason if held is not None else notes.get((section, key), "")
                rows[key] = row
            out[section] = rows
        return out


def _show_layers(config: Config, section: str, notes: dict[tuple[str, str], str], redacted: bool) -> dict[str, Any]:
    """A section that merges its own layers, file by file: a key every file sets once is
    ``key``; a key set again by a later file is ``key (file)``, so no file's value hides another's."""
    rows: dict[str, Any] = {}
    for file, data in config.documents:
        part = data.get(section)
        if not isinstance(part, dict):
            continue
        workspace = config.scope_of(file) == "workspace"
        for key, value in part.items():
            row = {
                "value": redact(value, key) if redacted else value,
                "source": file,
                "not_applied": notes.get((section, key), "") if workspace else "",
            }
            rows[key if key not in rows else f"{key} ({file})"] = row
    return rows


def _read_toml(path: Path, errors: list[ConfigError], root: Root | None = None) -> dict[str, Any] | None:
    data: dict[str, Any] | None = read_document(path, errors, loads_toml, "TOML", root=root)
    return data


def load_config(
    *,
    workspace: Path | None,
    sections: Registrar[ConfigSection],
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    files: list[Path] | None = None,
    documents: list[tuple[str, dict[str, Any]]] | None = None,
    trust: WorkspaceTrust | None = None,
    defaults: list[tuple[str, dict[str, Any]]] | None = None,
) -> Config:
    """Read, merge and structure the configuration. Never raises for bad content.

    ``files`` overrides discovery; ``documents`` adds already-parsed documents
    (name, data) after the files, for tests and embedding (they count as the
    user's). A file inside ``workspace`` (other than the user's own file) is
    the workspace's: with ``trust`` given, its ``${VAR}`` are expanded only when
    the user trusts the workspace, and its entries of ``needs_trust`` sections
    only apply when the trust covers them (else they are in :attr:`Config.held`).
    Without ``trust`` every file is taken as trusted. ``defaults`` are the lowest layer,
    below the user's file: a distribution's default config (name, data), trusted like the
    user's own.
    """
    env = os.environ if env is None else env
    config = Config(sections={name: sec for name, sec in sections.items()}, workspace=workspace, env=env)
    config.owners = {name: sections.owner_of(name) or "" for name in sections.names()}
    user_file = (home or user_home(env)) / "kairox.toml"
    if files is None:
        files = [user_file]
        if workspace is not None:
            files += [f for f in workspace_config_files(workspace) if _real(f) != _real(user_file)]
    docs: list[tuple[str, dict[str, Any]]] = []
    for name, default in defaults or []:
        docs.append((name, default))
        config.scopes[name] = "user"
    ws_real = _real(workspace) if workspace is not None else None
    ws_abs = os.path.abspath(workspace) if workspace is not None else None
    # a workspace's own files are read inside it: a kairox.toml linked to a file of yours is refused
    ws_root = Root(workspace, label="the workspace") if workspace is not None else None
    for path in files:
        lexically_inside = ws_abs is not None and is_inside(Path(os.path.abspath(path)), Path(ws_abs))
        own = _real(path) == _real(user_file)
        data = _read_toml(path, config.errors, ws_root if lexically_inside and not own else None)
        if data is not None:
            config.files.append(path)
            docs.append((str(path), data))
            # found through the workspace (a symlink to a file elsewhere included), or resolving into it
            inside = ws_real is not None and (
                is_inside(Path(_real(path)), Path(ws_real))
                or (ws_abs is not None and is_inside(Path(os.path.abspath(path)), Path(ws_abs)))
            )
            config.scopes[str(path)] = "workspace" if inside and _real(path) != _real(user_file) else "user"
    docs.extend(documents or [])
    config.documents = docs
    for file, data in docs:
        _merge(config, file, data)
    _structure_sections(config, env, trust)
    return config


def _real(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.fspath(path))


def _merge(config: Config, file: str, data: dict[str, Any]) -> None:
    for section, table in data.items():
        if not isinstance(table, dict):
            config.errors.append(
                ConfigError(
                    f"expected a table [{section}], got a value; every top-level key is a section",
                    file=file,
                    path=section,
                )
            )
            continue
        if section not in config.sections:
            config.errors.append(_unknown_section(config, section, file))
            continue
        merged = config.raw.setdefault(section, {})
        config.provenance[(section, "")] = file  # the last file that mentions the section
        for key, value in table.items():
            merged[key] = value
            config.provenance[(section, key)] = file


def _unknown_section(config: Config, section: str, file: str) -> ConfigError:
    missing = missing_feature_message("config section", section)
    if missing:
        return ConfigError(missing, file=file, path=section)
    owned = ", ".join(f"{n} ({config.owners.get(n) or '?'})" for n in sorted(config.sections))
    close = difflib.get_close_matches(section, list(config.sections), n=1)
    hint = f"did you mean [{close[0]}]? " if close else ""
    return ConfigError(
        f"unknown section [{section}]; {hint}sections owned by installed plugins: {owned or 'none'}",
        file=file,
        path=section,
    )


def _structure_sections(config: Config, env: Mapping[str, str], trust: WorkspaceTrust | None) -> None:
    from ._declared import Declared

    def expand(value: Any, path: str, file: str | None, covered: bool = False) -> Any:
        """``${VAR}`` read the environment in the user's files, and in a workspace file
        only inside what the user's trust covers (``covered``: a trusted item's values,
        fingerprinted as written); anywhere else in a workspace file they stay as written."""
        if trust is None or covered or config.scope_of(file) == "user":
            return _expand_tree(value, env, path, file)
        return value

    def allowed(item: Declared) -> TrustState | None:
        """None when the item may apply, else its (held) state."""
        if trust is None:
            return None
        state = trust.check(item)
        return None if state.allowed else state

    if trust is not None:  # a workspace item's note names the user's rules that would apply to its tools
        trust.set_user_rules(_user_rules(config))

    for name, table in config.raw.items():
        sec = config.sections[name]
        if sec.merge is not None:
            _merge_layers(config, name, sec, expand, allowed)
        elif sec.entries:
            values: dict[str, Any] = {}
            for key, raw in table.items():
                file = config.provenance.get((name, key))
                path = f"{name}.{key}"
                covered = False
                if sec.needs_trust and config.scope_of(file) == "workspace" and isinstance(raw, dict):
                    item = Declared.entry(
                        path,
                        name,
                        key,
                        file or "",
                        raw,
                        workspace=config.workspace,
                        env=env,
                        whole_environment=sec.whole_environment,
                    )
                    state = allowed(item)
                    covered = state is None
                    mine = _user_entry(config, name, key)
                    if mine is not None and trust is not None:  # say so before the user trusts it
                        trust.note(path, f"replaces your own [{path}] from {mine[0]}")
                    if state is not None:
                        assert trust is not None
                        reason = trust.explain(path)
                        # the user's own entry of that name (if any) applies instead of the held one
                        user = _user_entry(config, name, key)
                        config.held.setdefault(name, {})[key] = HeldEntry(
                            name, key, file or "", raw, state, item, reason, user[0] if user else ""
                        )
                        if user is None:
                            continue
                        file, raw = user
                try:
                    values[key] = structure(expand(raw, path, file, covered), sec.schema_type(), path=path, file=file)
                except ConfigError as exc:
                    errs = getattr(exc, "errors", [exc])
                    config.errors.extend(errs)
                    config.broken.setdefault(name, {})[key] = list(errs)
            config.values[name] = values
        else:
            # which file set each key that applies, and whether the user's trust covers it
            origin: dict[str, tuple[str | None, bool]] = {k: (config.provenance.get((name, k)), False) for k in table}
            narrows = set(sec.narrows)
            if sec.needs_trust:
                table, origin = _hold_workspace_part(config, name, sec, allowed, trust, env)
            else:
                origin = _reads_environment(config, name, table, origin, allowed, trust)
            files = {f for f, _ in origin.values()}
            file = files.pop() if len(files) == 1 else None
            try:
                expanded = {k: expand(v, f"{name}.{k}", *origin[k]) for k, v in table.items() if k not in narrows}
                for key in narrows:  # the user's list, and what each workspace file adds to it
                    added = _narrowed(config, name, sec, key, expand)
                    if added is not None:
                        expanded[key], origin[key] = added[0], (added[1], False)
                for key, (applied, _covered) in origin.items():
                    if applied and applied != config.provenance.get((name, key)):
                        config.applied_from[(name, key)] = applied
                config.values[name] = structure(expanded, sec.schema_type(), path=name, file=file)
            except ConfigError as exc:
                errs = getattr(exc, "errors", [exc])
                for err in errs:
                    if err.file is None:
                        err.file = _file_of_error(config, name, table, err.path)
                        err.args = (err.render(),)
                config.errors.extend(errs)
                config.broken_sections[name] = list(errs)


def _user_rules(config: Config) -> dict[str, str]:
    """The ``[policy.rules]`` the user's own files set (later files win), as written."""
    rules: dict[str, str] = {}
    for file, data in config.documents:
        policy = data.get("policy")
        table = policy.get("rules") if isinstance(policy, dict) else None
        if config.scope_of(file) == "user" and isinstance(table, dict):
            rules.update((str(k), v) for k, v in table.items() if isinstance(v, str))
    return rules


def _user_entry(config: Config, section: str, key: str) -> tuple[str, Any] | None:
    """The last entry ``key`` of ``section`` that a user-scope document sets."""
    found: tuple[str, Any] | None = None
    for file, data in config.documents:
        part = data.get(section)
        if config.scope_of(file) == "user" and isinstance(part, dict) and key in part:
            found = (file, part[key])
    return found


def _hold_workspace_part(
    config: Config,
    name: str,
    sec: ConfigSection,
    allowed: Callable[[Declared], TrustState | None],
    trust: WorkspaceTrust | None,
    env: Mapping[str, str],
) -> tuple[dict[str, Any], dict[str, tuple[str | None, bool]]]:
    """A ``needs_trust`` section without entries: each workspace file's part of it (but the
    keys that only narrow) applies only when the trust covers it. Returns the table of what
    applies, and for each key the file that set it and whether it is a trusted workspace item."""
    from ._declared import Declared

    out: dict[str, Any] = {}
    origin: dict[str, tuple[str | None, bool]] = {}
    for file, data in config.documents:
        part = data.get(name)
        if not isinstance(part, dict):
            continue
        part = {k: v for k, v in part.items() if k not in sec.narrows}
        if not part:
            continue
        covered = False
        if config.scope_of(file) == "workspace":
            key = f"{name}@{file}"
            notes = tuple(_replacing(config, sec, file, k, v) for k, v in part.items())
            item = Declared.table(key, name, f"[{name}]", file, part, notes=notes, workspace=config.workspace, env=env)
            if allowed(item) is not None:
                assert trust is not None
                reason = trust.explain(key)
                config.not_applied.extend(NotApplied(name, k, file, reason) for k in part)
                continue
            covered = True
        out.update(part)
        origin.update((k, (file, covered)) for k in part)
    return out, origin


def _shown(value: Any, key: str) -> str:
    import json

    return json.dumps(redact(value, key), ensure_ascii=False, default=str)


def _replacing(config: Config, sec: ConfigSection, file: str, key: str, value: Any) -> str:
    """What a workspace file's ``key = value`` of a single-table section does: the value it
    sets, and the user's own value it replaces (or the default)."""
    sets = f"sets {toml_key(key)} = {_shown(value, key)}"
    mine: tuple[str, Any] | None = None
    for doc_file, data in config.documents:
        if doc_file == file:
            break
        part = data.get(sec.name)
        if config.scope_of(doc_file) == "user" and isinstance(part, dict) and key in part:
            mine = (doc_file, part[key])
    if mine is not None:
        return f"{sets}, replacing your {_shown(mine[1], key)} ({mine[0]})"
    default = _key_default(sec, key)
    return f"{sets}, replacing the default {_shown(default, key)}" if default is not _MISSING else sets


_MISSING: Any = object()


def _key_default(sec: ConfigSection, key: str) -> Any:
    """The default of a single-table section's ``key`` (:data:`_MISSING` when it has none or
    the schema cannot say)."""
    try:
        value = getattr((sec.default or sec.schema_type())(), key, _MISSING)
    except Exception:  # a schema that needs arguments, or does not import: nothing to say
        return _MISSING
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, enum.Enum):
        return value.value
    return value


def _narrowed(
    config: Config, name: str, sec: ConfigSection, key: str, expand: Callable[..., Any]
) -> tuple[list[Any], str] | None:
    """A key of ``sec.narrows``: the user's list (the last user file's, else the default) with
    what each workspace file adds to it, and the last file that contributed; ``None`` when
    no file sets the key. A workspace value that is not a list is an error naming its file,
    and adds nothing."""
    value: Any = _MISSING
    source = ""
    for file, data in config.documents:
        part = data.get(name)
        if not isinstance(part, dict) or key not in part:
            continue
        given = expand(part[key], f"{name}.{key}", file)
        if config.scope_of(file) == "user":
            value, source = given, file
            continue
        if not isinstance(given, list):
            config.errors.append(
                ConfigError(
                    f"expected a list, got {describe_value(given)}; a workspace's {key} is added to "
                    "the user's (it never replaces it), and this one is not applied",
                    file=file,
                    path=_join(name, _key_part(key)),
                )
            )
            continue
        base = _key_default(sec, key) if value is _MISSING else value
        if not isinstance(base, list):
            continue  # the user's own value is not a list: structuring reports it
        value = [*base, *(v for v in given if v not in base)]
        source = file
    return None if value is _MISSING else (value, source)


def _reads_environment(
    config: Config,
    name: str,
    table: dict[str, Any],
    origin: dict[str, tuple[str | None, bool]],
    allowed: Callable[[Declared], TrustState | None],
    trust: WorkspaceTrust | None,
) -> dict[str, tuple[str | None, bool]]:
    """A workspace file's part of a section that writes ``${VAR}`` reads your environment:
    that part is an item of its own, expanded only when the trust covers it."""
    from ._declared import Declared, env_references, fingerprint

    out = dict(origin)
    for file, data in config.documents:
        part = data.get(name)
        if config.scope_of(file) != "workspace" or not isinstance(part, dict):
            continue
        env_names = env_references(part)
        if not env_names:
            continue
        key = f"{name}@{file}"
        notes = (f"expands {', '.join('${' + n + '}' for n in env_names)} into [{name}]",)
        item = Declared(key, "config", f"[{name}]", file, fingerprint([name, part]), env_names=env_names, notes=notes)
        covered = allowed(item) is None
        for k in part:
            if out.get(k, (None, False))[0] == file:
                out[k] = (file, covered)
        if not covered:
            assert trust is not None
            reason = f"its ${{VAR}} stay as written: {trust.explain(key)}"
            config.not_applied.extend(NotApplied(name, k, file, reason) for k in part if "${" in str(part[k]))
    return out


def toml_key(key: str, prefix: str = "") -> str:
    """``key`` after ``prefix`` as a path a reader takes for one key: ``rules["git.status"]``,
    not ``rules.git.status`` (a key with a dot or any character but letters, digits, ``_``
    and ``-`` is quoted, as TOML writes it)."""
    if key and key.replace("_", "").replace("-", "").isalnum() and key.isascii():
        return f"{prefix}.{key}" if prefix else key
    import json

    quoted = json.dumps(key, ensure_ascii=False)
    return f"{prefix}[{quoted}]" if prefix else quoted


def _flat(table: Mapping[str, Any], prefix: str = "") -> list[str]:
    import json

    lines: list[str] = []
    for k, v in table.items():
        path = toml_key(str(k), prefix)
        if isinstance(v, Mapping) and v:
            lines.extend(_flat(v, path))
        else:
            lines.append(f"{path} = {json.dumps(v, ensure_ascii=False, default=str)}")
    return lines


def _merge_layers(
    config: Config,
    name: str,
    sec: ConfigSection,
    expand: Callable[[Any, str, str | None, bool], Any],
    allowed: Callable[[Declared], TrustState | None],
) -> None:
    """A section that merges its own layers (one per file that sets it)."""
    from ._declared import Declared, fingerprint

    assert sec.merge is not None
    layers: list[ConfigLayer] = []
    for file, data in config.documents:
        part = data.get(name)
        if not isinstance(part, dict):
            continue
        scope: Literal["user", "workspace"] = "workspace" if config.scope_of(file) == "workspace" else "user"
        trusted = True
        if scope == "workspace":
            wants = sec.needs_trust(part) if callable(sec.needs_trust) else sec.needs_trust
            if wants:
                notes = tuple(f"sets {line}" for line in _flat(part))
                item = Declared(f"{name}@{file}", name, f"[{name}]", file, fingerprint([name, part]), notes=notes)
                trusted = allowed(item) is None
            else:  # asks for nothing only trust allows: it applies (narrowing) without being an item
                trusted = False
        table = {k: expand(v, f"{name}.{k}", file, trusted) for k, v in part.items()}
        layers.append(ConfigLayer(file, scope, trusted, table))
    try:
        value, not_applied, errors = sec.merge(layers)
    except Exception as exc:  # a section's own merge bug costs that section only
        error = ConfigError(f"merging [{name}] failed: {type(exc).__name__}: {exc}", path=name)
        config.errors.append(error)
        config.broken_sections[name] = [error]
        return
    config.values[name] = value
    config.not_applied.extend(not_applied)
    config.errors.extend(errors)
    if errors:
        config.broken_sections[name] = list(errors)


def _file_of_error(config: Config, section: str, table: Mapping[str, Any], path: str) -> str | None:
    """The file that set the key an error's path points into (``ui.width``, ``ui['a b']``);
    for a key no file set (a missing required key), the last file that set any key of the section."""
    for key in table:
        prefix = _join(section, _key_part(key))
        if path == prefix or path.startswith((prefix + ".", prefix + "[")):
            return config.provenance.get((section, key))
    return config.provenance.get((section, ""))


def known_errors_for(config: Config, section: str, key: str | None = None) -> list[ConfigError]:
    """The errors of one section (or one entry of it)."""
    prefix = f"{section}.{key}" if key else section
    return [e for e in config.errors if e.path == prefix or e.path.startswith((prefix + ".", prefix + "["))]


_ = errors_from  # re-exported for plugins that structure their own documents

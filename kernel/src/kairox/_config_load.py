"""Loading ``kairox.toml``: reading each file, merging the sections with provenance, and
applying a workspace's tables (held until trusted, guard lists that only grow).

The data model (:class:`Config`, :class:`ConfigSection`, ...) and ``${VAR}`` expansion are
in :mod:`._config`."""

from __future__ import annotations

import difflib
import enum
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._config import (
    Config,
    ConfigLayer,
    ConfigSection,
    HeldEntry,
    NotApplied,
    _expand_tree,
    redact,
    workspace_config_files,
)
from ._convert import _join, _key_part, describe_value, structure
from ._features import missing_feature_message, not_loaded_packages
from ._home import user_home
from ._registrar import Registrar
from .errors import ConfigError
from .files import Root, is_inside, loads_toml, read_document

if TYPE_CHECKING:
    from ._declared import Declared
    from ._trust import TrustState, WorkspaceTrust


__all__ = ["known_errors_for", "load_config", "toml_key"]


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
    floors: list[tuple[str, dict[str, Any]]] | None = None,
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
    user's own. ``floors`` (name, data) hold what no file may loosen (a distribution's
    policy floor): each section in one is merged with a :class:`ConfigLayer` of scope
    ``floor`` before the files' layers, so only a section with ``merge`` takes one.
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
    # a workspace's own files are read inside it: a kairox.toml linked to a file of yours is refused
    ws_root = Root(workspace, label="the workspace") if workspace is not None else None
    for path in files:
        real = _real(path)
        own = real == _real(user_file)
        found_in_ws = workspace is not None and is_inside(Path(os.path.abspath(path)), Path(os.path.abspath(workspace)))
        data: dict[str, Any] | None = read_document(
            path, config.errors, loads_toml, "TOML", root=ws_root if found_in_ws and not own else None
        )
        if data is not None:
            config.files.append(path)
            docs.append((str(path), data))
            # found through the workspace (a symlink to a file elsewhere included), or resolving into it
            inside = found_in_ws or (workspace is not None and is_inside(Path(real), Path(_real(workspace))))
            config.scopes[str(path)] = "workspace" if inside and not own else "user"
    docs.extend(documents or [])
    config.documents = docs
    for name, floor in floors or []:
        config.floors.append((name, floor))
        config.scopes[name] = "floor"
        for section in floor:
            sec = config.sections.get(section)
            if sec is None:
                config.errors.append(_unknown_section(config, section, name))
            elif sec.merge is None:
                error = f"a floor applies only to a section that merges its own layers ([policy]), not [{section}]"
                config.errors.append(ConfigError(error, file=name, path=section))
            else:
                config.raw.setdefault(section, {})  # merged even when no file sets it
    for file, data in docs:
        _merge(config, file, data)
    _Sections(config, trust).structure()
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
    # a section of a package no table knows: an installed package that is not loaded may own it
    absent = "; ".join(f"{package} ({why})" for package, why in sorted(not_loaded_packages().items()))
    left_out = f"; installed plugin packages not loaded here (one may own it): {absent}" if absent else ""
    return ConfigError(
        f"unknown section [{section}]; {hint}sections owned by installed plugins: {owned or 'none'}{left_out}",
        file=file,
        path=section,
    )


class _Sections:
    """Structures each merged section of ``config`` into :attr:`Config.values`, by its kind: one
    that merges its own layers (``merge``), a table of entries, or a single table. A problem
    costs that section or entry only. With ``trust``, what a workspace file sets applies (and
    its ``${VAR}`` are expanded) only where the user's trust covers it; without, every file is
    taken as trusted."""

    def __init__(self, config: Config, trust: WorkspaceTrust | None) -> None:
        self.config = config
        self.trust = trust

    def structure(self) -> None:
        if self.trust is not None:  # a workspace item's note names the user's rules that would apply to its tools
            self.trust.set_user_rules(_user_rules(self.config))
        for name, table in self.config.raw.items():
            sec = self.config.sections[name]
            if sec.merge is not None:
                self.layers(name, sec)
            elif sec.entries:
                self.entries(name, sec, table)
            else:
                self.single_table(name, sec, table)

    def expand(self, value: Any, path: str, file: str | None, covered: bool = False) -> Any:
        """``${VAR}`` read the environment in the user's files, and in a workspace file
        only inside what the user's trust covers (``covered``: a trusted item's values,
        fingerprinted as written); anywhere else in a workspace file they stay as written."""
        if self.trust is None or covered or self.config.scope_of(file) == "user":
            return _expand_tree(value, self.config.env, path, file)
        return value

    def held_state(self, item: Declared) -> TrustState | None:
        """``None`` when ``item`` may apply (always, without trust), else its held state."""
        if self.trust is None:
            return None
        state = self.trust.check(item)
        return None if state.allowed else state

    def explain(self, key: str) -> str:
        """Why the held item ``key`` does not apply, with the command that lets it."""
        assert self.trust is not None  # only an item held by the trust is explained
        return self.trust.explain(key)

    def entries(self, name: str, sec: ConfigSection, table: dict[str, Any]) -> None:
        """A table of entries: each structured on its own; a workspace's entry waits for trust
        (held, with the user's own entry of that name applying instead)."""
        from ._declared import Declared

        config = self.config
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
                    env=config.env,
                    whole_environment=sec.whole_environment,
                )
                state = self.held_state(item)
                covered = state is None
                mine = _user_entry(config, name, key)
                if mine is not None and self.trust is not None:  # say so before the user trusts it
                    self.trust.note(path, f"replaces your own [{path}] from {mine[0]}")
                if state is not None:
                    # the user's own entry of that name (if any) applies instead of the held one
                    config.held.setdefault(name, {})[key] = HeldEntry(
                        name, key, file or "", raw, state, item, self.explain(path), mine[0] if mine else ""
                    )
                    if mine is None:
                        continue
                    file, raw = mine
            try:
                values[key] = structure(self.expand(raw, path, file, covered), sec.schema_type(), path=path, file=file)
            except ConfigError as exc:
                config.errors.extend(exc.errors)
                config.broken.setdefault(name, {})[key] = list(exc.errors)
        config.values[name] = values

    def single_table(self, name: str, sec: ConfigSection, table: dict[str, Any]) -> None:
        """A single-table section: key by key, the last file's value; a workspace's table waits
        for trust (or, with ``needs_trust=False``, only its ``${VAR}`` do); guard lists only grow."""
        config = self.config
        # which file set each key that applies, and whether the user's trust covers it
        origin: dict[str, tuple[str | None, bool]] = {k: (config.provenance.get((name, k)), False) for k in table}
        narrows = set(sec.narrows)
        if sec.needs_trust:
            table, origin = self.workspace_part(name, sec)
        else:
            origin = self.reads_environment(name, origin)
        files = {f for f, _ in origin.values()}
        file = files.pop() if len(files) == 1 else None
        try:
            expanded = {k: self.expand(v, f"{name}.{k}", *origin[k]) for k, v in table.items() if k not in narrows}
            for key in narrows:  # the user's list, and what each workspace file adds to it
                added = self.narrowed(name, sec, key)
                if added is not None:
                    expanded[key], origin[key] = added[0], (added[1], False)
            for key, (applied, _covered) in origin.items():
                if applied and applied != config.provenance.get((name, key)):
                    config.applied_from[(name, key)] = applied
            config.values[name] = structure(expanded, sec.schema_type(), path=name, file=file)
        except ConfigError as exc:
            for err in exc.errors:
                if err.file is None:
                    err.file = _file_of_error(config, name, table, err.path)
                    err.args = (err.render(),)
            config.errors.extend(exc.errors)
            config.broken_sections[name] = list(exc.errors)

    def workspace_part(
        self, name: str, sec: ConfigSection
    ) -> tuple[dict[str, Any], dict[str, tuple[str | None, bool]]]:
        """A ``needs_trust`` section without entries: each workspace file's part of it (but the
        keys that only narrow) applies only when the trust covers it. Returns the table of what
        applies, and for each key the file that set it and whether it is a trusted workspace item."""
        from ._declared import Declared

        config = self.config
        out: dict[str, Any] = {}
        origin: dict[str, tuple[str | None, bool]] = {}
        for file, part in config.parts(name):
            part = {k: v for k, v in part.items() if k not in sec.narrows}
            if not part:
                continue
            covered = False
            if config.scope_of(file) == "workspace":
                key = f"{name}@{file}"
                notes = tuple(_replacing(config, sec, file, k, v) for k, v in part.items())
                item = Declared.table(
                    key, name, f"[{name}]", file, part, notes=notes, workspace=config.workspace, env=config.env
                )
                if self.held_state(item) is not None:
                    reason = self.explain(key)
                    config.not_applied.extend(NotApplied(name, k, file, reason) for k in part)
                    continue
                covered = True
            out.update(part)
            origin.update((k, (file, covered)) for k in part)
        return out, origin

    def narrowed(self, name: str, sec: ConfigSection, key: str) -> tuple[list[Any], str] | None:
        """A key of ``sec.narrows``: the user's list (the last user file's, else the default) with
        what each workspace file adds to it, and the last file that contributed; ``None`` when
        no file sets the key. A workspace value that is not a list is an error naming its file,
        and adds nothing."""
        config = self.config
        value: Any = _MISSING
        source = ""
        for file, part in config.parts(name):
            if key not in part:
                continue
            given = self.expand(part[key], f"{name}.{key}", file, False)
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

    def reads_environment(
        self, name: str, origin: dict[str, tuple[str | None, bool]]
    ) -> dict[str, tuple[str | None, bool]]:
        """A workspace file's part of a section that writes ``${VAR}`` reads your environment:
        that part is an item of its own, expanded only when the trust covers it."""
        from ._declared import Declared, env_references, fingerprint

        out = dict(origin)
        for file, part in self.config.parts(name, scope="workspace"):
            env_names = env_references(part)
            if not env_names:
                continue
            key = f"{name}@{file}"
            notes = (f"expands {', '.join('${' + n + '}' for n in env_names)} into [{name}]",)
            item = Declared(
                key, "config", f"[{name}]", file, fingerprint([name, part]), env_names=env_names, notes=notes
            )
            covered = self.held_state(item) is None
            for k in part:
                if out.get(k, (None, False))[0] == file:
                    out[k] = (file, covered)
            if not covered:
                reason = f"its ${{VAR}} stay as written: {self.explain(key)}"
                self.config.not_applied.extend(NotApplied(name, k, file, reason) for k in part if "${" in str(part[k]))
        return out

    def layers(self, name: str, sec: ConfigSection) -> None:
        """A section that merges its own layers (one per file that sets it)."""
        from ._declared import Declared, fingerprint

        assert sec.merge is not None
        config = self.config
        layers: list[ConfigLayer] = [
            ConfigLayer(file, "floor", True, dict(data[name]))
            for file, data in config.floors
            if isinstance(data.get(name), dict)
        ]
        for file, part in config.parts(name):
            scope: Literal["user", "workspace"] = "workspace" if config.scope_of(file) == "workspace" else "user"
            trusted = True
            if scope == "workspace":
                wants = sec.needs_trust(part) if callable(sec.needs_trust) else sec.needs_trust
                if wants:
                    notes = (*(f"sets {line}" for line in _flat(part)), *_never_applies(sec, layers, file, part))
                    item = Declared(f"{name}@{file}", name, f"[{name}]", file, fingerprint([name, part]), notes=notes)
                    trusted = self.held_state(item) is None
                else:  # asks for nothing only trust allows: it applies (narrowing) without being an item
                    trusted = False
            table = {k: self.expand(v, f"{name}.{k}", file, trusted) for k, v in part.items()}
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


def _user_rules(config: Config) -> dict[str, str]:
    """The ``[policy.rules]`` the user's own files set (later files win), as written."""
    rules: dict[str, str] = {}
    for _file, policy in config.parts("policy", scope="user"):
        table = policy.get("rules")
        if isinstance(table, dict):
            rules.update((str(k), v) for k, v in table.items() if isinstance(v, str))
    return rules


def _user_entry(config: Config, section: str, key: str, before: str | None = None) -> tuple[str, Any] | None:
    """The last entry (or value) ``key`` of ``section`` that a user-scope document sets, as
    ``(file, value)``; with ``before``, among the documents before that file only."""
    found: tuple[str, Any] | None = None
    for file, part in config.parts(section):
        if file == before:
            break
        if key in part and config.scope_of(file) == "user":
            found = (file, part[key])
    return found


def _shown(value: Any, key: str) -> str:
    return json.dumps(redact(value, key), ensure_ascii=False, default=str)


def _replacing(config: Config, sec: ConfigSection, file: str, key: str, value: Any) -> str:
    """What a workspace file's ``key = value`` of a single-table section does: the value it
    sets, and the user's own value it replaces (or the default)."""
    sets = f"sets {toml_key(key)} = {_shown(value, key)}"
    mine = _user_entry(config, sec.name, key, before=file)
    if mine is not None:
        return f"{sets}, replacing your {_shown(mine[1], key)} ({mine[0]})"
    default = _key_default(sec, key)
    return f"{sets}, replacing the default {_shown(default, key)}" if default is not _MISSING else sets


_MISSING: Any = object()


def _key_default(sec: ConfigSection, key: str) -> Any:
    """The default of a single-table section's ``key`` (:data:`_MISSING` when it has none or
    the schema cannot say)."""
    try:
        value = getattr(sec.default_value(), key, _MISSING)
    except Exception:  # a schema that needs arguments, or does not import: nothing to say
        return _MISSING
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, enum.Enum):
        return value.value
    return value


def toml_key(key: str, prefix: str = "") -> str:
    """``key`` after ``prefix`` as a path a reader takes for one key: ``rules["git.status"]``,
    not ``rules.git.status`` (a key with a dot or any character but letters, digits, ``_``
    and ``-`` is quoted, as TOML writes it)."""
    if key and key.replace("_", "").replace("-", "").isalnum() and key.isascii():
        return f"{prefix}.{key}" if prefix else key
    quoted = json.dumps(key, ensure_ascii=False)
    return f"{prefix}[{quoted}]" if prefix else quoted


def _flat(table: Mapping[str, Any], prefix: str = "") -> list[str]:
    lines: list[str] = []
    for k, v in table.items():
        path = toml_key(str(k), prefix)
        if isinstance(v, Mapping) and v:
            lines.extend(_flat(v, path))
        else:
            lines.append(f"{path} = {json.dumps(v, ensure_ascii=False, default=str)}")
    return lines


def _never_applies(
    sec: ConfigSection, layers: Sequence[ConfigLayer], file: str, part: Mapping[str, Any]
) -> tuple[str, ...]:
    """What of a workspace file's ``part`` would not apply even trusted (a ``[policy]`` that
    loosens): the trust prompt says so, rather than show it as something trust grants."""
    assert sec.merge is not None
    try:
        _value, never, _errors = sec.merge([*layers, ConfigLayer(file, "workspace", True, dict(part))])
    except Exception:  # the real merge reports it
        return ()
    return tuple(f"will not apply, trusted or not: {n.key}: {n.reason}" for n in never if n.file == file)


def _file_of_error(config: Config, section: str, table: Mapping[str, Any], path: str) -> str | None:
    """The file that set the key an error's path points into (``ui.width``, ``ui['a b']``);
    for a key no file set (a missing required key), the last file that set any key of the section."""
    for key in table:
        prefix = _join(section, _key_part(key))
        if _under(path, prefix):
            return config.provenance.get((section, key))
    return config.provenance.get((section, ""))


def known_errors_for(config: Config, section: str, key: str | None = None) -> list[ConfigError]:
    """The errors of one section (or one entry of it)."""
    prefix = f"{section}.{key}" if key else section
    return [e for e in config.errors if _under(e.path, prefix)]


def _under(path: str, prefix: str) -> bool:
    """Whether the field ``path`` is ``prefix`` or inside it (``ui.width``, ``ui['a b']``)."""
    return path == prefix or path.startswith((prefix + ".", prefix + "["))

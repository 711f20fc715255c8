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

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs

from ._convert import structure
from ._home import user_home
from ._secrets import REDACTED, is_secret, redact_args, redact_argv
from .errors import ConfigError

if TYPE_CHECKING:
    from ._declared import Declared
    from ._trust import TrustState

__all__ = [
    "BrokenSection",
    "Config",
    "ConfigLayer",
    "ConfigSection",
    "HeldEntry",
    "NotApplied",
    "expand_env",
    "inherit_env",
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
    ``workspace`` (a file of the workspace: someone else's until trusted) or
    ``floor`` (a distribution's values no other layer may loosen, ``[policy]`` only);
    ``trusted`` tells whether the user trusts what this layer declares
    (always true for the user and floor scopes).
    """

    file: str
    scope: Literal["user", "workspace", "floor"]
    trusted: bool
    table: Mapping[str, Any]


@attrs.frozen
class NotApplied:
    """A value a file set that does not apply, and why (``kairox config show`` marks it): a
    workspace's that would widen the user's policy, a user's below a distribution's floor."""

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

    def default_value(self) -> Any:
        """The value when no file sets the section: ``default()``, else ``schema()``."""
        return (self.default or self.schema_type())()


@functools.cache
def _schema_of(target: str) -> Any:
    """The class a schema target names, resolved once per target (``load_target`` on every
    read of an absent section was half of the 20 us a call lost without the defaults' memory
    below: ``bench_mcp.py``'s per-call ratio went from 1.06-1.11x to 1.15x)."""
    from .declare import load_target

    return load_target(target)


def workspace_config_files(workspace: Path) -> list[Path]:
    """Workspace files, lowest precedence first."""
    return [workspace / ".kairox" / "kairox.toml", workspace / "kairox.toml"]


def expand_env(value: str, env: Mapping[str, str], *, path: str = "", file: str | None = None) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}``; ``$${`` is a literal ``${``.

    An unset variable with no default is a :class:`ConfigError`.
    """
    if "${" not in value:
        return value
    end = value.rfind("}") + 1
    return _VAR.sub(_substitute(env, path, file), value[:end]) + value[end:]


def _substitute(env: Mapping[str, str], path: str, file: str | None) -> Callable[[re.Match[str]], str]:
    """What :data:`_VAR` replaces a reference with in :func:`expand_env`."""

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

    return repl


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
    #: ``user`` or ``workspace`` for each document in :attr:`documents` (``floor`` for each of :attr:`floors`)
    scopes: dict[str, str] = attrs.field(factory=dict)
    #: a distribution's values no file may loosen: (name, document) of sections that merge their layers
    floors: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)
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
    #: :attr:`values`' own object, the same every time, and so is this): name -> (section, value).
    #: Plugins read their section on each call (kairox-example's guard does); building the
    #: default each time cost the call pipeline about 8 us, and with the policy's decisions
    #: made afresh ``bench_mcp.py``'s per-call ratio went from 1.06-1.11x to 1.15x
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
        value = sec.default_value()
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
        parts = self.parts(name, scope="user")
        table = {k: v for _file, part in parts for k, v in part.items()}
        file = parts[-1][0] if parts else None
        if not table:
            return {} if sec.entries else sec.default_value()
        try:
            expanded = _expand_tree(table, self.env, name, file)
            if sec.entries:
                return {k: structure(v, sec.schema_type(), path=f"{name}.{k}", file=file) for k, v in expanded.items()}
            return structure(expanded, sec.schema_type(), path=name, file=file)
        except ConfigError as exc:
            raise BrokenSection(name, list(exc.errors)) from None

    def scope_of(self, file: str | None) -> str:
        """``workspace`` for a file of the workspace, else ``user`` (the user's file, code)."""
        return self.scopes.get(file or "", "user")

    def parts(self, section: str, *, scope: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        """Each document's table of ``section`` as ``(file, table)``, lowest precedence first
        (a document whose value there is not a table has none); with ``scope`` (``user`` or
        ``workspace``), only the documents of that scope."""
        return [
            (file, data[section])
            for file, data in self.documents
            if isinstance(data.get(section), dict) and (scope is None or self.scope_of(file) == scope)
        ]

    def held_entries(self, section: str) -> dict[str, HeldEntry]:
        """The section's entries held until the workspace is trusted."""
        return dict(self.held.get(section, {}))

    def broken_entries(self, section: str) -> dict[str, list[ConfigError]]:
        """The section's entries that failed to structure (an unset ``${VAR}``, a bad field)."""
        return dict(self.broken.get(section, {}))

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
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from ._compat import tomllib
from ._convert import _join, _key_part, errors_from, structure
from ._features import missing_feature_message
from ._home import user_home
from ._registrar import Registrar
from ._secrets import REDACTED, is_secret
from .errors import ConfigError

__all__ = [
    "Config",
    "ConfigSection",
    "expand_env",
    "inherit_env",
    "load_config",
    "redact",
    "user_home",
    "workspace_config_files",
]

_VAR = re.compile(r"\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@attrs.frozen
class ConfigSection:
    """A ``kairox.toml`` section a plugin owns.

    ``schema`` is the type the section structures into (an attrs class). With
    ``entries=True`` the section is a table of named entries
    (``[mcp_servers.NAME]``), each structured into ``schema`` on its own, so
    one bad entry does not cost the others. ``default`` builds the value when
    the section is absent (``schema()`` when not given).
    """

    name: str
    schema: Any
    description: str = ""
    entries: bool = False
    default: Callable[[], Any] | None = None


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
    return _VAR.sub(repl, value)


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
    """A copy safe to print: values of env/headers tables and secret-looking keys are hidden."""
    if isinstance(value, dict):
        return {k: redact(v, k, key) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key, parent) for v in value]
    return REDACTED if is_secret(key, parent) else value


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

    def section(self, name: str) -> Any:
        """The structured value of a section (its default when absent or broken)."""
        if name in self.values:
            return self.values[name]
        sec = self.sections.get(name)
        if sec is None:
            raise KeyError(f"no config section {name!r} is registered")
        return {} if sec.entries else (sec.default or sec.schema)()

    def source_of(self, section: str, key: str) -> str | None:
        return self.provenance.get((section, key))

    def show(self, *, redacted: bool = True) -> dict[str, Any]:
        """The merged config as ``{section: {key: {"value": ..., "source": file}}}``."""
        out: dict[str, Any] = {}
        for section, table in sorted(self.raw.items()):
            out[section] = {
                key: {
                    "value": redact(value, key) if redacted else value,
                    "source": self.provenance.get((section, key), ""),
                }
                for key, value in table.items()
            }
        return out


def _read_toml(path: Path, errors: list[ConfigError]) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(ConfigError(f"cannot read: {exc}", file=str(path)))
        return None
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        errors.append(ConfigError(f"invalid TOML: {exc}", file=str(path)))
        return None


def load_config(
    *,
    workspace: Path | None,
    sections: Registrar[ConfigSection],
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    files: list[Path] | None = None,
    documents: list[tuple[str, dict[str, Any]]] | None = None,
) -> Config:
    """Read, merge and structure the configuration. Never raises for bad content.

    ``files`` overrides discovery; ``documents`` adds already-parsed documents
    (name, data) after the files, for tests and embedding.
    """
    env = os.environ if env is None else env
    config = Config(sections={name: sec for name, sec in sections.items()})
    config.owners = {name: sections.owner_of(name) or "" for name in sections.names()}
    if files is None:
        files = [(home or user_home(env)) / "kairox.toml"]
        if workspace is not None:
            files += workspace_config_files(workspace)
    docs: list[tuple[str, dict[str, Any]]] = []
    for path in files:
        data = _read_toml(path, config.errors)
        if data is not None:
            config.files.append(path)
            docs.append((str(path), data))
    docs.extend(documents or [])
    config.documents = docs
    for file, data in docs:
        _merge(config, file, data)
    _structure_sections(config, env)
    return config


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


def _structure_sections(config: Config, env: Mapping[str, str]) -> None:
    for name, table in config.raw.items():
        sec = config.sections[name]
        if sec.entries:
            values: dict[str, Any] = {}
            for key, raw in table.items():
                file = config.provenance.get((name, key))
                path = f"{name}.{key}"
                try:
                    values[key] = structure(_expand_tree(raw, env, path, file), sec.schema, path=path, file=file)
                except ConfigError as exc:
                    config.errors.extend(getattr(exc, "errors", [exc]))
            config.values[name] = values
        else:
            files = {config.provenance.get((name, k)) for k in table}
            file = files.pop() if len(files) == 1 else None
            try:
                expanded = {
                    k: _expand_tree(v, env, f"{name}.{k}", config.provenance.get((name, k))) for k, v in table.items()
                }
                config.values[name] = structure(expanded, sec.schema, path=name, file=file)
            except ConfigError as exc:
                errs = getattr(exc, "errors", [exc])
                for err in errs:
                    if err.file is None:
                        err.file = _file_of_error(config, name, table, err.path)
                        err.args = (err.render(),)
                config.errors.extend(errs)


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

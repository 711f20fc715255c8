"""Claude Code's ``userConfig``: the settings a plugin asks its user for.

A Claude plugin declares options in ``plugin.json``::

    "userConfig": {
      "api_token": {"type": "string", "title": "API token", "sensitive": true, "required": true},
      "max_results": {"type": "number", "title": "Results", "default": 20, "min": 1, "max": 100}
    }

and references them as ``${user_config.KEY}`` in its MCP and LSP server entries and
hook commands. kairox asks for the values when the plugin is enabled or trusted
(``kairox plugin enable``, ``kairox plugin trust``, ``kairox plugin config``, the
dashboard's plugin page) and keeps them:

- a non-sensitive value in the user's plugin settings file, under the plugin's
  resolved directory (``user_config`` of ``$KAIROX_HOME/plugin-settings.json``; a
  workspace's settings file is never read for them: a cloned repository must not feed
  values into a plugin's commands, and a plugin elsewhere that takes the same name
  never sees another's values);
- a sensitive value in the system keychain through ``keyring`` (service
  ``kairox:<plugin>``, user name ``<key>@<plugin directory>``), never in a file. Where
  no keychain exists (keyring's ``fail`` backend, as on CI), it is read from the
  environment variable :func:`env_name` (``KAIROX_PLUGIN_<PLUGIN>_<KEY>``) and setting it
  is refused with that variable's name.

A value is looked up in its store, then in that environment variable, then the
option's ``default``. A component that references an option with no value does not
start: its reason names the plugin and the key (:class:`MissingUserConfig`); nothing is
replaced by an empty string. Every resolved option is also given to the plugin's
hook processes and stdio servers as ``CLAUDE_PLUGIN_OPTION_<KEY>`` (Claude Code's
name); a hook command's ``${user_config.KEY}`` becomes a reference to that variable,
so the shell reads the value and never parses it as code.

No value of a sensitive option is ever written to a file, a log, an event or an error
message here: errors name keys and environment variables only.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kairox.ext import describe_value

from ._schema import join
from .errors import ManifestError, Problem

if TYPE_CHECKING:
    from .model import BundleManifest, Contribution
    from .settings import BundleSettings, SettingsStore

__all__ = [
    "OPTION_TYPES",
    "MissingUserConfig",
    "Resolution",
    "SecretStore",
    "UserConfigError",
    "UserOption",
    "check_value",
    "configure",
    "env_name",
    "option_variable",
    "parse_user_config",
    "references",
    "resolve",
    "store_values",
]

OPTION_TYPES = ("string", "number", "boolean", "directory", "file")
#: an option's key becomes part of an environment variable name (Claude Code's rule)
KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_FIELDS = ("type", "title", "description", "required", "default", "sensitive", "multiple", "min", "max", "options")
#: ``${user_config.KEY}``: fixed text around one bounded name, so linear over any input
REF = re.compile(r"\$\{user_config\.([A-Za-z_][A-Za-z0-9_]{0,63})\}")
#: a ``${`` that kairox-mcp's ``${VAR}`` expansion would read (``$${`` is its literal ``${``)
_MCP_VAR = re.compile(r"\$(?=\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\})")
#: what a value that must be kept out of sight is shown as
MASK = "********"


class UserConfigError(ValueError):
    """A value that does not fit its option, or one that cannot be stored; the message
    names the plugin and key, never a sensitive value."""


class MissingUserConfig(UserConfigError):
    """A component references options that have no value (or are not declared)."""


@attrs.frozen
class UserOption:
    """One ``userConfig`` option. ``choices`` is Claude's ``options`` (a string option
    limited to fixed values)."""

    key: str
    type: str = "string"
    title: str = ""
    description: str = ""
    required: bool = False
    default: Any = None
    sensitive: bool = False
    multiple: bool = False
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return self.title or self.key

    def to_dict(self, *, with_default: bool = True) -> dict[str, Any]:
        return {
            "key": self.key,
            "type": self.type,
            "title": self.title,
            "description": self.description,
            "required": self.required,
            "default": self.default if with_default else None,
            "sensitive": self.sensitive,
            "multiple": self.multiple,
            "min": self.min,
            "max": self.max,
            "options": list(self.choices),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UserOption:
        return cls(
            key=data["key"],
            type=data.get("type", "string"),
            title=data.get("title", ""),
            description=data.get("description", ""),
            required=bool(data.get("required", False)),
            default=data.get("default"),
            sensitive=bool(data.get("sensitive", False)),
            multiple=bool(data.get("multiple", False)),
            min=data.get("min"),
            max=data.get("max"),
            choices=tuple(data.get("options") or ()),
        )


# -- reading the manifest field ---------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_user_config(value: Any, *, file: str | None, problems: list[Problem]) -> tuple[UserOption, ...]:
    """The options of a ``userConfig`` field. Strict, as Claude Code is: an unknown key in an
    option, a wrong type or a default that does not fit is a :class:`ManifestError` naming
    the file and field; an option without ``type`` or ``title`` is a warning (read as a
    string option titled by its key)."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ManifestError(f"expected a table of options, got {describe_value(value)}", file=file, path="userConfig")
    out = []
    for key, raw in value.items():
        path = join("userConfig", str(key))
        if not isinstance(key, str) or not KEY_RE.fullmatch(key):
            raise ManifestError(
                f"{key!r} is not an option key (a letter or _, then letters, digits, _; at most 64)",
                file=file,
                path=path,
            )
        if not isinstance(raw, dict):
            raise ManifestError(f"expected an option table, got {describe_value(raw)}", file=file, path=path)
        for field in raw:
            if field not in _FIELDS:
                raise ManifestError(
                    f"unknown key {field!r} (an option has {', '.join(_FIELDS)})", file=file, path=join(path, field)
                )
        out.append(_option(key, raw, file=file, path=path, problems=problems))
    return tuple(out)


def _option(key: str, raw: dict[str, Any], *, file: str | None, path: str, problems: list[Problem]) -> UserOption:
    def fail(field: str, message: str) -> ManifestError:
        return ManifestError(message, file=file, path=join(path, field))

    kind = raw.get("type")
    if kind is None:
        problems.append(Problem("no type; read as a string option", file=file, path=join(path, "type")))
        kind = "string"
    if kind not in OPTION_TYPES:
        raise fail("type", f"expected one of {', '.join(OPTION_TYPES)}, got {describe_value(kind)}")
    for field in ("title", "description"):
        if field in raw and not isinstance(raw[field], str):
            raise fail(field, f"expected a string, got {describe_value(raw[field])}")
    if not raw.get("title"):
        problems.append(Problem("no title; the key is shown instead", file=file, path=join(path, "title")))
    flags = {}
    for field in ("required", "sensitive", "multiple"):
        flag = raw.get(field, False)
        if not isinstance(flag, bool):
            raise fail(field, f"expected true or false, got {describe_value(flag)}")
        flags[field] = flag
    bounds: dict[str, float | None] = {}
    for field in ("min", "max"):
        bound = raw.get(field)
        if bound is not None and not _is_number(bound):
            raise fail(field, f"expected a number, got {describe_value(bound)}")
        if bound is not None and kind != "number":
            raise fail(field, f"only a number option has {field}")
        bounds[field] = bound
    if bounds["min"] is not None and bounds["max"] is not None and bounds["min"] > bounds["max"]:
        raise fail("max", "is below min")
    choices: tuple[str, ...] = ()
    if "options" in raw:
        listed = raw["options"]
        if not isinstance(listed, list) or not listed or not all(isinstance(c, str) for c in listed):
            raise fail("options", f"expected a non-empty list of strings, got {describe_value(listed)}")
        if kind != "string" or flags["multiple"] or flags["sensitive"]:
            raise fail("options", "only a string option that is neither multiple nor sensitive has options")
        choices = tuple(listed)
    option = UserOption(
        key=key,
        type=kind,
        title=raw.get("title") or "",
        description=raw.get("description") or "",
        required=flags["required"],
        sensitive=flags["sensitive"],
        multiple=flags["multiple"],
        min=bounds["min"],
        max=bounds["max"],
        choices=choices,
    )
    if raw.get("default") is not None:
        try:
            default = check_value(option, raw["default"], check_paths=False)
        except UserConfigError as exc:
            raise fail("default", str(exc)) from None
        option = attrs.evolve(option, default=default)
    return option


# -- values -------------------------------------------------------------------------------------


def _one(option: UserOption, value: Any, *, check_paths: bool) -> Any:
    kind, key = option.type, option.key
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "on", "off", "1", "0"):
            return value.strip().lower() in ("true", "yes", "on", "1")
        raise UserConfigError(f"{key}: expected true or false")
    if kind == "number":
        number: Any = value
        if isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                raise UserConfigError(f"{key}: expected a number") from None
        if not _is_number(number):
            raise UserConfigError(f"{key}: expected a number")
        if option.min is not None and number < option.min:
            raise UserConfigError(f"{key}: expected at least {option.min:g}")
        if option.max is not None and number > option.max:
            raise UserConfigError(f"{key}: expected at most {option.max:g}")
        return int(number) if float(number).is_integer() else float(number)
    if not isinstance(value, str):
        raise UserConfigError(f"{key}: expected a string")
    if "\x00" in value:
        raise UserConfigError(f"{key}: contains a NUL character")
    if option.choices and value not in option.choices:
        raise UserConfigError(f"{key}: expected one of {', '.join(option.choices)}")
    if kind in ("directory", "file") and check_paths:
        path = os.path.abspath(os.path.expanduser(value))
        ok = os.path.isdir(path) if kind == "directory" else os.path.isfile(path)
        if not ok:
            raise UserConfigError(f"{key}: {path} is not {'a directory' if kind == 'directory' else 'a file'}")
        return path
    return value


def check_value(option: UserOption, value: Any, *, check_paths: bool = True) -> Any:
    """``value`` (a string from a prompt or ``--set``, or a JSON value) as ``option`` holds it:
    a string, a number, a boolean, an absolute path (``directory`` / ``file``: it must be
    one), or a list of those when ``multiple``. Raises :class:`UserConfigError` naming the key
    (and never the value of a sensitive option)."""
    try:
        if option.multiple:
            items = value if isinstance(value, list) else [value]
            if not items:
                raise UserConfigError(f"{option.key}: expected at least one value")
            return [_one(option, v, check_paths=check_paths) for v in items]
        return _one(option, value, check_paths=check_paths)
    except UserConfigError as exc:
        if option.sensitive and option.type in ("directory", "file"):  # its message names the path
            raise UserConfigError(
                f"{option.key}: not {'a directory' if option.type == 'directory' else 'a file'}"
            ) from None
        raise exc from None


def _text(value: Any) -> str:
    """A value as it is substituted: ``true``/``false``, ``20`` (not ``20.0``), a list joined by ``,``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    return str(value)


def env_name(plugin: str, key: str) -> str:
    """The environment variable a value of ``plugin``'s option ``key`` is read from when it is
    not stored (the only place a sensitive one can come from without a keychain)."""
    return f"KAIROX_PLUGIN_{re.sub(r'[^A-Za-z0-9]', '_', plugin).upper()}_{key.upper()}"


def option_variable(key: str) -> str:
    """The variable a hook process or a stdio server gets the option ``key`` in (Claude Code's)."""
    return f"CLAUDE_PLUGIN_OPTION_{key.upper()}"


# -- the keychain -----------------------------------------------------------------------------


class SecretStore:
    """Sensitive values of one plugin directory, in the system keychain (``keyring``).

    ``available`` is ``False`` where keyring has no backend (its ``fail`` backend); reading
    then finds nothing and :meth:`set` refuses, naming the environment variable to use."""

    def __init__(self, plugin: str, root: Path) -> None:
        self.plugin = plugin
        self.root = str(root)
        self.service = f"kairox:{plugin}"

    def _user(self, key: str) -> str:
        return f"{key}@{self.root}"

    @staticmethod
    def backend() -> Any:
        import keyring

        return keyring.get_keyring()

    @property
    def available(self) -> bool:
        from keyring.backends import fail

        return not isinstance(self.backend(), fail.Keyring)

    def get(self, key: str) -> str | None:
        if not self.available:
            return None
        from keyring.errors import KeyringError

        try:
            value = self.backend().get_password(self.service, self._user(key))
        except KeyringError:
            return None
        return value if isinstance(value, str) else None

    def set(self, key: str, value: str) -> None:
        from keyring.errors import KeyringError

        if not self.available:
            raise UserConfigError(
                f"{self.plugin}: {key} is sensitive and no system keychain is available here, so it is not "
                f"stored (never in a file); set the environment variable {env_name(self.plugin, key)} instead"
            )
        try:
            self.backend().set_password(self.service, self._user(key), value)
        except KeyringError as exc:
            # the backend's message, not the value (keyring never puts the password in one)
            raise UserConfigError(f"{self.plugin}: {key}: the keychain refused it ({type(exc).__name__})") from None

    def delete(self, key: str) -> None:
        from keyring.errors import KeyringError, PasswordDeleteError

        if not self.available:
            return
        try:
            self.backend().delete_password(self.service, self._user(key))
        except PasswordDeleteError:
            pass  # nothing stored
        except KeyringError as exc:
            raise UserConfigError(f"{self.plugin}: {key}: the keychain refused it ({type(exc).__name__})") from None


# -- resolving ---------------------------------------------------------------------------------


@attrs.frozen
class Resolution:
    """The options of one plugin and where each value came from.

    ``values`` holds what has a value (``sources``: ``settings``, ``keychain``,
    ``environment`` or ``default``); ``missing`` says why the others have none."""

    plugin: str
    options: tuple[UserOption, ...] = ()
    values: Mapping[str, Any] = attrs.field(factory=dict)
    sources: Mapping[str, str] = attrs.field(factory=dict)
    missing: Mapping[str, str] = attrs.field(factory=dict)

    def option(self, key: str) -> UserOption | None:
        return next((o for o in self.options if o.key == key), None)

    def environment(self) -> dict[str, str]:
        """``CLAUDE_PLUGIN_OPTION_<KEY>`` of every option that has a value."""
        return {option_variable(k): _text(v) for k, v in self.values.items()}

    def _why(self, key: str) -> str:
        if self.option(key) is None:
            return f"{key!r} is not declared in its userConfig"
        return self.missing.get(key) or f"{key!r} has no value"

    def require(self, keys: Iterable[str], what: str) -> None:
        """Raise :class:`MissingUserConfig` when one of ``keys`` has no value; the message
        names the plugin, ``what`` needs it, each key and how to give it."""
        absent = [k for k in dict.fromkeys(keys) if k not in self.values]
        if absent:
            reasons = "; ".join(self._why(k) for k in absent)
            raise MissingUserConfig(
                f"plugin {self.plugin}: {what} needs user configuration it does not have: {reasons} "
                f"(set it with `kairox plugin config {self.plugin} --set KEY=VALUE`)"
            )


def resolve(
    manifest: BundleManifest,
    *,
    settings: BundleSettings,
    env: Mapping[str, str],
    options: tuple[UserOption, ...] | None = None,
    environment: bool = True,
) -> Resolution:
    """Look up every option of ``manifest``: its store (the user's settings for a plain value,
    the keychain for a sensitive one), then :func:`env_name` in ``env``, then its default.

    ``environment=False`` (a workspace's plugin, someone else's) skips the environment: the
    variable goes by the plugin's name, which a cloned repository's plugin can take (or map to
    the same variable as another), so only the user's own plugins read it."""
    declared = manifest.user_config if options is None else options
    root = Path(os.path.realpath(manifest.root))
    stored = settings.user_config_values(root)
    secrets = SecretStore(manifest.name, root) if any(o.sensitive for o in declared) else None
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    missing: dict[str, str] = {}
    for o in declared:
        value: Any = None
        if o.sensitive:
            assert secrets is not None
            text = secrets.get(o.key)
            if text is not None:
                value, sources[o.key] = _decode(o, text), "keychain"
        elif o.key in stored:
            try:
                value, sources[o.key] = check_value(o, stored[o.key], check_paths=False), "settings"
            except UserConfigError:
                value = None  # edited by hand into something else: as if unset
        if value is None and environment and env.get(env_name(manifest.name, o.key)):
            try:
                value = _from_env(o, env[env_name(manifest.name, o.key)])
                sources[o.key] = "environment"
            except UserConfigError as exc:
                missing[o.key] = f"{env_name(manifest.name, o.key)} does not fit: {exc}"
                continue
        if value is None and o.default is not None:
            value, sources[o.key] = o.default, "default"
        if value is None or value == "" or value == []:
            sources.pop(o.key, None)
            if o.key not in missing:
                missing[o.key] = f"{o.key!r} ({o.label}) is {'required and ' if o.required else ''}not set"
            continue
        values[o.key] = value
    return Resolution(manifest.name, tuple(declared), values, sources, missing)


def _decode(option: UserOption, text: str) -> Any:
    """A keychain entry: the string, or the JSON of a value that is not a plain string."""
    if option.type == "string" and not option.multiple:
        return text
    try:
        return check_value(option, json.loads(text), check_paths=False)
    except (ValueError, UserConfigError):
        return None


def encode_secret(option: UserOption, value: Any) -> str:
    return value if isinstance(value, str) and not option.multiple else json.dumps(value)


def _from_env(option: UserOption, text: str) -> Any:
    if option.multiple:
        return check_value(option, [t for t in text.split(os.pathsep if option.type != "string" else ",") if t])
    return check_value(option, text, check_paths=False)


def store_values(
    settings: SettingsStore,
    plugin: str,
    root: Path,
    options: tuple[UserOption, ...],
    values: Mapping[str, Any],
    unset: Iterable[str] = (),
) -> list[str]:
    """Check ``values`` (by key) against ``options`` and store them: a sensitive one in the
    keychain (:class:`SecretStore`), the others in the user's settings file, atomically under
    its lock. ``unset`` removes values. Every value is checked before anything is stored.
    Returns the keys stored. Raises :class:`UserConfigError` naming the key."""
    by_key = {o.key: o for o in options}
    checked: dict[str, Any] = {}
    for key in [*values, *unset]:
        if key not in by_key:
            raise UserConfigError(f"{plugin} has no option {key!r} (it has: {', '.join(by_key) or 'none'})")
    for key, raw in values.items():
        checked[key] = check_value(by_key[key], raw)
    secrets = SecretStore(plugin, Path(os.path.realpath(root)))
    for key in unset:
        if by_key[key].sensitive:
            secrets.delete(key)
    for key, value in checked.items():
        if by_key[key].sensitive:
            secrets.set(key, encode_secret(by_key[key], value))
    plain = {k: v for k, v in checked.items() if not by_key[k].sensitive}
    # a sensitive option is never in the file, even one that was not sensitive before
    remove = [k for k in unset if not by_key[k].sensitive] + [k for k in checked if by_key[k].sensitive]
    if plain or remove:
        settings.set_user_config(root, plugin, plain, remove)
    return list(checked)


# -- substituting --------------------------------------------------------------------------------


def references(value: Any) -> list[str]:
    """The option keys ``value`` (a string, or a tree of lists and tables) references."""
    if isinstance(value, str):
        return REF.findall(value) if "${user_config." in value else []
    if isinstance(value, list):
        return [k for v in value for k in references(v)]
    if isinstance(value, dict):
        return [k for v in value.values() for k in references(v)]
    return []


def _substitute(value: Any, res: Resolution, escape: bool) -> Any:
    def text(v: Any) -> str:
        t = _text(v)
        return _MCP_VAR.sub("$$", t) if escape else t

    if isinstance(value, str):
        return REF.sub(lambda m: text(res.values[m.group(1)]), value) if "${user_config." in value else value
    if isinstance(value, list):
        out: list[Any] = []
        for item in value:
            whole = REF.fullmatch(item) if isinstance(item, str) else None
            if whole and isinstance(res.values.get(whole.group(1)), list):
                out.extend(text(v) for v in res.values[whole.group(1)])  # one argument per value
            else:
                out.append(_substitute(item, res, escape))
        return out
    if isinstance(value, dict):
        return {k: _substitute(v, res, escape) for k, v in value.items()}
    return value


def _server(c: Contribution, res: Resolution) -> dict[str, Any]:
    config = c.config if isinstance(c.config, dict) else {}
    res.require(references(config), f"its {c.kind.replace('_', ' ')} {c.name!r}")
    # kairox-mcp expands ${VAR} in what it is given: a value keeps its own "${" literal
    out: dict[str, Any] = _substitute(config, res, escape=c.kind == "mcp_server")
    if "command" in out and res.values:
        env = dict(out.get("env") or {})
        for k, v in res.environment().items():
            env.setdefault(k, _MCP_VAR.sub("$$", v) if c.kind == "mcp_server" else v)
        out["env"] = env
    return out


def _hook(c: Contribution, res: Resolution) -> Any:
    decl = c.config
    command = getattr(decl, "command", None)
    if not command:
        return decl
    res.require(references(command), f"its hook {c.name!r}")
    # the shell reads the value from the hook's environment: it is never parsed as code
    return attrs.evolve(decl, command=REF.sub(lambda m: "${" + option_variable(m.group(1)) + "}", command))


def configure(items: Iterable[Contribution], res: Resolution | None) -> tuple[list[Contribution], dict[str, str]]:
    """``items`` with their ``${user_config.KEY}`` resolved (servers: substituted, with the
    options in a stdio server's ``env``; hooks: a reference to the option's variable), and
    the keys of those that need a value they do not have, with the reason. ``res`` ``None``
    (a plugin without ``userConfig``): a reference is a failure too, never an empty string."""
    ready: list[Contribution] = []
    failed: dict[str, str] = {}
    for c in items:
        if res is None:
            keys = references(c.config if c.kind != "hook" else getattr(c.config, "command", None))
            if keys:
                failed[c.key] = (
                    f"it references ${{user_config.{keys[0]}}} and its plugin declares no userConfig; not started"
                )
            else:
                ready.append(c)
            continue
        try:
            config = _hook(c, res) if c.kind == "hook" else _server(c, res) if c.kind.endswith("_server") else c.config
        except MissingUserConfig as exc:
            failed[c.key] = str(exc)
            continue
        ready.append(attrs.evolve(c, config=config))
    return ready, failed

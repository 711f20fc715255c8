"""Settings files: enable or disable a skill per scope without touching its file.

User settings live in ``$KAIROX_HOME/settings.json``, workspace settings in
``<workspace>/.kairox/settings.json``::

    {"skills": {"enabled": {"pr-review": false, "deploy": true}}}

A name missing from both is enabled; the workspace value beats the user value.
Every change is read-modify-write under an exclusive lock on a sibling
``settings.json.lock`` file (``fcntl.flock``), and written atomically (temp
file + ``os.replace``), so concurrent writers never lose an update and a
reader never sees half a file. Other top-level keys are kept as they are.

A settings file is read contained (:class:`kairox.files.Root`): the workspace's inside
the workspace (a ``settings.json`` linking to a file outside is refused, and never
overwritten), the user's as the user's own file; either must be a regular file within
the size cap.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kairox.ext import SkillError, SkillScope, user_home
from kairox.files import Refused, Root, atomic_write_text, loads_bounded, locked, read_user_file

__all__ = ["SETTINGS_FILE", "SettingsFile", "settings_path", "skill_overrides"]

SETTINGS_FILE = "settings.json"


def settings_path(
    scope: SkillScope | str, *, workspace: Path, home: Path | None = None, env: Mapping[str, str] | None = None
) -> Path:
    """Where the ``user`` or ``workspace`` settings file is."""
    scope = SkillScope(scope)
    if scope is SkillScope.USER:
        return (home or user_home(env)) / SETTINGS_FILE
    if scope is SkillScope.WORKSPACE:
        return workspace / ".kairox" / SETTINGS_FILE
    raise ValueError(f"settings exist for the user and workspace scopes, not {scope.value}")


class SettingsFile:
    """One JSON settings file, read inside ``root`` (the workspace, for the workspace's
    file); without one, as a file of the user's own."""

    def __init__(self, path: str | os.PathLike[str], *, root: Root | None = None) -> None:
        self.path = Path(path)
        self.root = root

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def read(self) -> dict[str, Any]:
        """The document (``{}`` when the file does not exist); :class:`SkillError` when it is broken."""
        try:
            raw = self.root.read_bytes(self.path) if self.root is not None else read_user_file(self.path)
            text = raw.decode("utf-8")
        except FileNotFoundError:
            return {}
        except Refused as exc:
            raise SkillError(f"cannot read the settings: {exc.reason}", file=str(self.path)) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SkillError(f"cannot read the settings: {exc}", file=str(self.path)) from None
        if not text.strip():
            return {}
        try:
            data = loads_bounded(text, json.loads)
        except json.JSONDecodeError as exc:
            raise SkillError(f"not valid JSON: {exc.msg}", file=str(self.path), line=exc.lineno) from None
        except ValueError as exc:  # nested too deep
            raise SkillError(f"not valid JSON: {exc}", file=str(self.path)) from None
        if not isinstance(data, dict):
            raise SkillError("expected a JSON object", file=str(self.path), line=1)
        return data

    def update(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Lock, read, ``change(document)`` in place, write atomically, unlock.

        A broken file is never overwritten (:class:`SkillError`), nor one that leads outside
        its root (not even a lock file is made there).
        """
        if self.root is not None:
            try:
                self.root.locate(self.path)
            except Refused as exc:
                raise SkillError(f"cannot write the settings: {exc.reason}", file=str(self.path)) from None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with locked(self.lock_path):
            data = self.read()
            change(data)
            self._write(data)
            return data

    def _write(self, data: dict[str, Any]) -> None:
        atomic_write_text(self.path, json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n")

    def set_skill(self, name: str, enabled: bool | None) -> dict[str, Any]:
        """Record ``enabled`` for skill ``name`` (``None`` removes the setting)."""

        def change(data: dict[str, Any]) -> None:
            skills = data.get("skills")
            if not isinstance(skills, dict):
                skills = data["skills"] = {}
            table = skills.get("enabled")
            if not isinstance(table, dict):
                table = skills["enabled"] = {}
            if enabled is None:
                table.pop(name, None)
            else:
                table[name] = enabled

        return self.update(change)


def skill_overrides(data: Mapping[str, Any], *, file: str | None = None) -> tuple[dict[str, bool], list[SkillError]]:
    """The ``skills.enabled`` table of a settings document, and its bad entries."""
    skills = data.get("skills", {})
    table = skills.get("enabled", {}) if isinstance(skills, dict) else None
    if not isinstance(table, dict):
        return {}, [SkillError("expected an object of skill name -> true/false", file=file, field="skills.enabled")]
    out: dict[str, bool] = {}
    errors: list[SkillError] = []
    for name, value in table.items():
        if isinstance(value, bool):
            out[name] = value
        else:
            errors.append(
                SkillError(f"expected true or false, got {value!r}", file=file, field=f"skills.enabled.{name}")
            )
    return out, errors

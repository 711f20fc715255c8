"""What ``kairox config show`` prints: the merged configuration, each value with the file it came from."""

from __future__ import annotations

import enum
import re
from typing import TYPE_CHECKING, Any

from kairox.errors import ConfigError
from kairox.ext import redact

if TYPE_CHECKING:
    from kairox.ext import Config

__all__ = ["shown_config"]


def shown_config(config: Config, *, redacted: bool = True) -> dict[str, Any]:
    """The merged config as ``{section: {key: {"value": ..., "source": file, "not_applied": why}}}``
    (``not_applied`` is ``""`` for a value that applies, ``in_effect`` whether it is the value
    that applies). A section that merges its own layers has a row per file (and floor) that
    sets a key (see :func:`_layer_rows`)."""
    notes: dict[tuple[str, str], str] = {}
    by_file: dict[tuple[str, str, str], str] = {}  # for the sections shown file by file
    for note in config.not_applied:
        top = re.split(r"[.\[]", note.key, maxsplit=1)[0]
        text = f"{note.key}: {note.reason}" if note.key != top else note.reason
        where = (note.section, top)
        notes[where] = f"{notes[where]}; {text}" if where in notes else text
        whose = (note.section, note.file, top)
        by_file[whose] = f"{by_file[whose]}; {text}" if whose in by_file else text
    out: dict[str, Any] = {}
    for section, table in sorted(config.raw.items()):
        sec = config.sections.get(section)
        if sec is not None and sec.merge is not None:
            out[section] = _layer_rows(config, section, by_file, redacted)
            continue
        held = config.held_entries(section)
        rows: dict[str, Any] = {}
        for key, value in table.items():
            source = config.provenance.get((section, key), "")
            if sec is not None and key in sec.narrows and not sec.entries:
                # a guard's list: every file's list applies, joined (see ConfigSection.narrows)
                value, source = _narrowed_row(config, section, key, value, source)
            row: dict[str, Any] = {
                "value": redact(value, key) if redacted else value,
                "source": source,
            }
            entry = held.get(key)
            row["not_applied"] = entry.reason if entry is not None else notes.get((section, key), "")
            row["in_effect"] = not row["not_applied"]
            rows[key] = row
        out[section] = rows
    return out


def _narrowed_row(config: Config, section: str, key: str, value: Any, source: str) -> tuple[Any, str]:
    """The value of a narrowing list key as it applies (every file's list joined, on the
    default) and the files that set it; as merged when the section does not validate."""
    try:
        value = list(getattr(config.section(section), key))
    except (ConfigError, AttributeError, TypeError):
        return value, source
    files = [f for f, part in config.parts(section) if key in part]
    return value, " + ".join(files) or source


def _layer_rows(config: Config, section: str, notes: dict[tuple[str, str, str], str], redacted: bool) -> dict[str, Any]:
    """A section that merges its own layers, floor and file by file: a key every file sets once is
    ``key``; a key set again by a later file is ``key (file)``, so no file's value hides another's.
    ``in_effect``: of the rows of a key with a single value, the last that applies and holds the
    merged value; a table or list (merged from every layer) is in effect unless refused whole."""
    rows: dict[str, Any] = {}
    merged = config.values.get(section) if section not in config.broken_sections else None
    refused = {(n.file, n.key) for n in config.not_applied if n.section == section}
    in_effect: dict[str, str] = {}  # a single-valued key -> the row holding the value in effect
    for file, data in [*config.floors, *config.documents]:
        part = data.get(section)
        if not isinstance(part, dict):
            continue
        for key, value in part.items():
            name = key if key not in rows else f"{key} ({file})"
            rows[name] = {
                "value": redact(value, key) if redacted else value,
                "source": file,
                "not_applied": notes.get((section, file, key), ""),
                "in_effect": isinstance(value, (dict, list)) and (file, key) not in refused,
            }
            applied = getattr(merged, key, None)
            applied = applied.value if isinstance(applied, enum.Enum) else applied
            if isinstance(applied, (str, bool, int, float)) and applied == value and (file, key) not in refused:
                in_effect[key] = name
    for name in in_effect.values():
        rows[name]["in_effect"] = True
    return rows

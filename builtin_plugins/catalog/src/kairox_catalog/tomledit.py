"""Comment-preserving edits of ``kairox.toml`` (tomlkit) with atomic writes."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions
from tomlkit.items import Table
from tomlkit.toml_document import TOMLDocument

from kairox.files import atomic_write_bytes

__all__ = ["TomlEditError", "read_document", "remove_server", "server_names", "set_server", "write_document"]

SECTION = "mcp_servers"


class TomlEditError(Exception):
    """The file cannot be edited safely (invalid TOML, a section of the wrong shape)."""


def read_document(path: Path) -> TOMLDocument:
    """The parsed file, or an empty document when it does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.document()
    except (OSError, UnicodeDecodeError) as exc:
        raise TomlEditError(f"cannot read {path}: {exc}") from None
    try:
        return tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise TomlEditError(f"{path} is not valid TOML ({exc}); fix it before installing") from None


def write_document(path: Path, doc: TOMLDocument) -> None:
    """Atomically replace ``path`` (temp file in the same directory + ``os.replace``), keeping its mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    text = tomlkit.dumps(doc)
    if text.strip():  # one final newline: an install + uninstall round trip gives the same bytes
        text = text.rstrip("\n") + "\n"
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode if mode is not None else 0o644)


def _servers(doc: TOMLDocument, *, create: bool) -> Any:
    servers = doc.get(SECTION)
    if servers is None:
        if not create:
            return None
        servers = tomlkit.table(is_super_table=True)
        doc.add(SECTION, servers)
        return doc[SECTION]
    if not isinstance(servers, Mapping):
        raise TomlEditError(f"[{SECTION}] in this file is not a table")
    return servers


def server_names(doc: TOMLDocument) -> list[str]:
    servers = _servers(doc, create=False)
    return list(servers) if servers is not None else []


def _item(value: Any) -> Any:
    if isinstance(value, Mapping):
        table = tomlkit.inline_table()
        table.update(dict(value))
        return table
    if isinstance(value, (list, tuple)):
        array = tomlkit.array()
        array.extend(list(value))
        return array
    return value


def set_server(doc: TOMLDocument, name: str, values: Mapping[str, Any], *, comment: str = "") -> None:
    """Add (or replace) ``[mcp_servers.NAME]``; everything else in the document is left as it was."""
    servers = _servers(doc, create=True)
    table: Table = tomlkit.table()
    if comment:
        table.comment(comment)
    for key, value in values.items():
        table.add(key, _item(value))
    table.add(tomlkit.nl())  # a blank line before whatever table follows
    if name in servers:
        del servers[name]
    servers[name] = table


def remove_server(doc: TOMLDocument, name: str) -> bool:
    """Remove ``[mcp_servers.NAME]``; drop the section when nothing is left. False when absent."""
    servers = _servers(doc, create=False)
    if servers is None or name not in servers:
        return False
    del servers[name]
    if len(servers) == 0:
        del doc[SECTION]
    return True

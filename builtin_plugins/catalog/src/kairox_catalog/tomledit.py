"""Comment-preserving edits of ``kairox.toml`` (tomlkit), each under the file's lock.

:func:`edit_document` is the one way the catalog changes a ``kairox.toml``: the
read, the change and the atomic write happen under :func:`kairox.files.update_text`'s
lock, so parallel installs and uninstalls (and ``kairox mcp import``, which takes the
same lock) never drop each other's tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions
from tomlkit.items import Table
from tomlkit.toml_document import TOMLDocument

from kairox.files import Root, check_toml_keys, update_text

__all__ = [
    "TomlEditError",
    "edit_document",
    "parse_document",
    "read_document",
    "remove_server",
    "server_names",
    "set_server",
]

SECTION = "mcp_servers"


class TomlEditError(Exception):
    """The file cannot be edited safely (invalid TOML, a section of the wrong shape)."""


def parse_document(text: str | None, path: Path) -> TOMLDocument:
    """``text`` of the file at ``path`` parsed (an empty document for ``None``: no file)."""
    if text is None:
        return tomlkit.document()
    try:
        check_toml_keys(text)  # before tomlkit: bounded time on any file
        return tomlkit.parse(text)
    except (tomlkit.exceptions.ParseError, ValueError) as exc:
        raise TomlEditError(f"{path} is not valid TOML ({exc}); fix it before installing") from None


def read_document(path: Path) -> TOMLDocument:
    """The parsed file, or an empty document when it does not exist (a look, not an edit:
    change the file with :func:`edit_document`)."""
    try:  # inside its own folder, as update_text reads it: a link there is refused
        text: str | None = Root(path.parent, label=str(path.parent)).read_text(path.name)
    except FileNotFoundError:
        text = None
    except (OSError, UnicodeDecodeError) as exc:
        raise TomlEditError(f"cannot read {path}: {exc}") from None
    return parse_document(text, path)


def edit_document(path: Path, change: Callable[[TOMLDocument], bool]) -> bool:
    """Lock ``path``, read it, ``change(document)`` in place, write it atomically (keeping its
    mode; 0644 for a new file), unlock. ``change`` returns whether it changed anything (nothing
    is written when not); what it raises propagates and nothing is written. Blocks while
    another writer holds the lock: call it from a worker thread in async code."""
    changed = False

    def edit(text: str | None) -> str | None:
        nonlocal changed
        doc = parse_document(text, path)
        changed = change(doc)
        if not changed:
            return None
        new = tomlkit.dumps(doc)
        # one final newline: an install + uninstall round trip gives the same bytes
        return new.rstrip("\n") + "\n" if new.strip() else new

    try:
        update_text(path, edit)
    except (OSError, UnicodeDecodeError) as exc:
        raise TomlEditError(f"cannot edit {path}: {exc}") from None
    return changed


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

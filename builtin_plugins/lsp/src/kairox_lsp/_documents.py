"""Documents opened on demand, kept in step with the files on disk.

A tool that touches a file opens it (``didOpen``) the first time; later calls
compare the file's size and modification time and send the new text
(``didChange``, full content) when it changed. After a server restart every
document is opened again on the new connection.
"""

from __future__ import annotations

import functools
import logging
import os
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import anyio
import attrs

from kairox.files import relative_text
from kairox_peer import read_text, split_lines

from ._client import LspClient

__all__ = ["DocumentStore", "OpenDocument", "SourceCache", "path_to_uri", "uri_to_path"]

logger = logging.getLogger(__name__)


def path_to_uri(path: Path) -> str:
    return path.as_uri()


@functools.lru_cache(maxsize=4096)
def uri_to_path(uri: str) -> Path | None:
    """The local path of a ``file:`` URI (``None`` for other schemes)."""
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme != "file":
        return None
    path = urllib.parse.unquote(parsed.path)
    if os.name == "nt" and path.startswith("/") and len(path) > 2 and path[2] == ":":  # pragma: no cover
        path = path[1:]
    return Path(path)


@attrs.define
class OpenDocument:
    path: Path
    uri: str
    language_id: str
    version: int
    text: str
    stamp: tuple[int, int]
    _lines: list[str] | None = attrs.field(default=None, repr=False)

    @property
    def lines(self) -> list[str]:
        """The text split as LSP counts lines (computed once per version)."""
        if self._lines is None:
            self._lines = split_lines(self.text)
        return self._lines

    def replace_text(self, text: str) -> None:
        self.text = text
        self._lines = None


class SourceCache:
    """Lines of files that are not open (re-read only when their size or modification time
    changed), and how paths are shown: relative to the workspace when inside it."""

    def __init__(self, workspace: Path | None = None, max_files: int = 256) -> None:
        self.workspace = workspace
        self.max_files = max_files
        self._files: dict[Path, tuple[tuple[int, int], list[str]]] = {}
        self._shown: dict[Path, str] = {}

    def display(self, path: Path) -> str:
        shown = self._shown.get(path)
        if shown is None:
            shown = str(path)
            if self.workspace is not None:
                rel = relative_text(path, self.workspace)
                shown = shown if rel is None else rel
            if len(self._shown) > 4096:
                self._shown.clear()
            self._shown[path] = shown
        return shown

    def lines(self, path: Path) -> list[str] | None:
        try:
            stamp = _stamp(path)
        except OSError:
            return None
        cached = self._files.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            lines = split_lines(read_text(path))
        except OSError:
            return None
        if len(self._files) >= self.max_files:
            self._files.pop(next(iter(self._files)))
        self._files[path] = (stamp, lines)
        return lines


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return (st.st_mtime_ns, st.st_size)


class DocumentStore:
    """The documents one server has open."""

    def __init__(self, language_for: Callable[[Path], str]) -> None:
        self.language_for = language_for
        self._docs: dict[Path, OpenDocument] = {}
        self._locks: dict[Path, anyio.Lock] = {}

    def __contains__(self, path: object) -> bool:
        return path in self._docs

    def __len__(self) -> int:
        return len(self._docs)

    def paths(self) -> list[Path]:
        return list(self._docs)

    def get(self, path: Path) -> OpenDocument | None:
        return self._docs.get(path)

    def text_of(self, path: Path) -> str | None:
        doc = self._docs.get(path)
        return doc.text if doc is not None else None

    def lines_of(self, path: Path) -> list[str] | None:
        doc = self._docs.get(path)
        return doc.lines if doc is not None else None

    async def ensure(self, client: LspClient, path: Path) -> OpenDocument:
        """Open ``path`` on the server, or bring it up to date with the disk. Raises ``OSError``."""
        lock = self._locks.get(path)
        if lock is None:
            lock = self._locks[path] = anyio.Lock(fast_acquire=True)
        async with lock:
            doc = self._docs.get(path)
            try:
                stamp = _stamp(path)
            except FileNotFoundError:
                if doc is not None:
                    await self._close(client, doc)
                raise
            if doc is not None and doc.stamp == stamp:
                return doc
            text = read_text(path)
            if doc is None:
                doc = OpenDocument(path, path_to_uri(path), self.language_for(path), 1, text, stamp)
                client.mark_changed(doc.uri)
                await client.notify(
                    "textDocument/didOpen",
                    {"textDocument": {"uri": doc.uri, "languageId": doc.language_id, "version": 1, "text": text}},
                )
                self._docs[path] = doc
                return doc
            doc.stamp = stamp
            if text != doc.text:
                doc.version += 1
                doc.replace_text(text)
                client.mark_changed(doc.uri)
                await client.notify(
                    "textDocument/didChange",
                    {"textDocument": {"uri": doc.uri, "version": doc.version}, "contentChanges": [{"text": text}]},
                )
            return doc

    async def _close(self, client: LspClient, doc: OpenDocument) -> None:
        self._docs.pop(doc.path, None)
        await client.notify("textDocument/didClose", {"textDocument": {"uri": doc.uri}})

    async def reopen(self, client: LspClient) -> None:
        """Open every known document on a new connection (after a restart), with the text on disk now."""
        paths = list(self._docs)
        self._docs.clear()
        for path in paths:
            try:
                await self.ensure(client, path)
            except OSError:
                logger.debug("not reopening %s: it is gone", path)

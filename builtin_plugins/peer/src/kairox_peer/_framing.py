"""Content-Length framing of JSON messages (the LSP base protocol; DAP uses the same).

A frame is ASCII header lines ``Name: value`` ended by ``\\r\\n``, an empty
line, then exactly ``Content-Length`` bytes of UTF-8 JSON. Headers other than
``Content-Length`` (``Content-Type``) are accepted and ignored; header names
are case-insensitive. A body that is not valid JSON is reported as a
:class:`BadMessage` and the stream stays in sync; a broken header (no or bad
``Content-Length``, header too long, body too large) is a :class:`FramingError`
because after it the stream cannot be trusted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Union

import attrs

__all__ = ["MAX_BODY", "MAX_HEADER", "BadMessage", "FrameDecoder", "FramingError", "encode_message"]

#: the longest header block accepted (bytes)
MAX_HEADER = 8 * 1024
#: the largest body accepted (bytes)
MAX_BODY = 256 * 1024 * 1024

_SEPARATOR = b"\r\n\r\n"


class FramingError(ValueError):
    """The byte stream does not follow the framing; the connection is unusable."""


@attrs.frozen
class BadMessage:
    """A well-framed body that is not a JSON value (or not UTF-8)."""

    error: str
    body: bytes


Decoded = Union[Any, BadMessage]


def encode_message(message: Mapping[str, Any]) -> bytes:
    """One frame: ``Content-Length`` header and the UTF-8 JSON body."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _content_length(header: bytes) -> int:
    try:
        text = header.decode("ascii")
    except UnicodeDecodeError:
        raise FramingError(f"header is not ASCII: {header[:80]!r}") from None
    length: int | None = None
    for line in text.split("\r\n"):
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise FramingError(f"malformed header line {line[:80]!r}")
        if name.strip().lower() == "content-length":
            value = value.strip()
            if not value.isdigit():
                raise FramingError(f"bad Content-Length {value[:40]!r}")
            length = int(value)
    if length is None:
        raise FramingError(f"no Content-Length header in {text[:80]!r}")
    if length > MAX_BODY:
        raise FramingError(f"body of {length} bytes is over the limit of {MAX_BODY}")
    return length


class FrameDecoder:
    """Incremental decoder: feed it bytes as they arrive, get whole messages back."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._need: int | None = None

    @property
    def pending(self) -> int:
        """Bytes received but not yet part of a whole message."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Decoded]:
        """Add ``data``; return every message it completes (JSON values or :class:`BadMessage`)."""
        self._buf += data
        out: list[Decoded] = []
        while True:
            if self._need is None:
                # tolerate blank lines between frames (some servers print one)
                while self._buf[:2] == b"\r\n":
                    del self._buf[:2]
                end = self._buf.find(_SEPARATOR)
                if end < 0:
                    if len(self._buf) > MAX_HEADER:
                        raise FramingError(f"no end of header after {MAX_HEADER} bytes")
                    return out
                if end > MAX_HEADER:
                    raise FramingError(f"header longer than {MAX_HEADER} bytes")
                header = bytes(self._buf[:end])
                del self._buf[: end + len(_SEPARATOR)]
                self._need = _content_length(header)
            if len(self._buf) < self._need:
                return out
            body = bytes(self._buf[: self._need])
            del self._buf[: self._need]
            self._need = None
            try:
                out.append(json.loads(body.decode("utf-8")))
            except (UnicodeDecodeError, ValueError) as exc:
                out.append(BadMessage(f"{type(exc).__name__}: {exc}", body))

"""Which request an unreadable response answered, read from its first and last bytes.

A response the client cannot parse (larger than the frame limit, nested deeper
than the JSON parser allows, not a JSON-RPC message) would be dropped, and the
call it answered would wait out its timeout. :func:`sniff_response` reads the
top-level members of the message's first bytes with a small scanner (exact for
valid JSON: strings, escapes and nesting are followed, so an ``"id"`` inside the
result is never taken for the message's own) and, when the ``id`` comes after
the result, the message's last bytes (``..., "id": 7}`` or
``..., "id": 7, "jsonrpc": "2.0"}`` at the very end).

It only says what the bytes claim: the client fails a request only if the id is
one of its own pending requests on that server, so a lying server can at worst
fail its own calls. Work is bounded: at most :data:`WINDOW` bytes are scanned.

Never imports ``mcp``.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from .transport import UNREADABLE_HEAD as WINDOW
from .transport import UNREADABLE_TAIL as TAIL

__all__ = ["TAIL", "WINDOW", "Sniffed", "sniff_response"]

_WS = b" \t\r\n"
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_SCALAR = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
_STRUCTURE = re.compile(rb'["{}\[\]]')
_TAIL_ID = re.compile(
    rb'[{,]\s*"id"\s*:\s*(-?[0-9]+|"[^"\\]*(?:\\.[^"\\]*)*")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*\Z'
)


class Sniffed(NamedTuple):
    """What the bytes of one message say about it."""

    #: a top-level ``result`` or ``error`` member and no ``method``: a response
    is_response: bool
    #: the message's ``id`` (int or str), ``None`` when absent, null or unreadable
    id: int | str | None
    #: the id was written but is null or not an int or str (no request can be matched)
    id_unusable: bool = False


class _Head(NamedTuple):
    keys: frozenset[str]
    id: int | str | None
    id_seen: bool


def _skip_ws(data: bytes, i: int) -> int:
    n = len(data)
    while i < n and data[i] in _WS:
        i += 1
    return i


def _skip_value(data: bytes, i: int) -> int | None:
    """The index after the JSON value at ``i``, or ``None`` if it does not end within ``data``."""
    n = len(data)
    if i >= n:
        return None
    c = data[i : i + 1]
    if c == b'"':
        m = _STRING.match(data, i)
        return m.end() if m else None
    if c in (b"{", b"["):
        depth = 0
        pos = i
        while True:
            m = _STRUCTURE.search(data, pos)
            if m is None:
                return None
            token = m.group()
            if token == b'"':
                s = _STRING.match(data, m.start())
                if s is None:
                    return None
                pos = s.end()
                continue
            depth += 1 if token in (b"{", b"[") else -1
            pos = m.end()
            if depth == 0:
                return pos
    m = _SCALAR.match(data, i)
    # a number at the window's edge may go on: only a delimiter after it proves it complete
    if m is None or m.end() >= n:
        return None
    return m.end()


def _scan_head(data: bytes) -> _Head | None:
    """The top-level member names (and the ``id``) of the object ``data`` begins; None if no object."""
    i = _skip_ws(data, 0)
    if data[i : i + 1] != b"{":
        return None
    keys: set[str] = set()
    rid: int | str | None = None
    id_seen = False
    i += 1
    while True:
        i = _skip_ws(data, i)
        c = data[i : i + 1]
        if c == b",":
            i += 1
            continue
        if c != b'"':  # "}" (the end), the window's end, or not JSON
            break
        m = _STRING.match(data, i)
        if m is None:
            break
        try:
            key = json.loads(m.group())
        except ValueError:
            break
        i = _skip_ws(data, m.end())
        if data[i : i + 1] != b":":
            break
        i = _skip_ws(data, i + 1)
        end = _skip_value(data, i)
        keys.add(key)
        if end is None:
            break
        if key == "id":
            id_seen = True
            rid = _request_id(data[i:end])
        i = end
    return _Head(frozenset(keys), rid, id_seen)


def _request_id(raw: bytes) -> int | str | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return value


def sniff_response(head: bytes, tail: bytes = b"") -> Sniffed | None:
    """What ``head`` (the message's first bytes) and ``tail`` (its last bytes) say, or ``None``
    when ``head`` does not begin a JSON object (garbage, not a message at all)."""
    scanned = _scan_head(head[:WINDOW])
    if scanned is None:
        return None
    is_response = bool({"result", "error"} & scanned.keys) and "method" not in scanned.keys
    if scanned.id_seen:
        return Sniffed(is_response, scanned.id, id_unusable=scanned.id is None)
    m = _TAIL_ID.search(tail[-TAIL:]) if tail else None
    if m is not None:
        rid = _request_id(m.group(1))
        return Sniffed(is_response, rid, id_unusable=rid is None)
    return Sniffed(is_response, None)

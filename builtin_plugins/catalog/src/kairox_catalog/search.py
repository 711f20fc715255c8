"""Ranked search over catalog entries by name, title, description and tags.

Each entry is indexed once: lower-cased fields, a word-boundary form of each
(``" foo bar"`` so that ``" ba" in`` finds a word prefix) and one blob of all
fields. A query is split into terms; an entry must contain every term
somewhere (one substring test on the blob rejects most entries), and the
survivors are scored by where each term matched:

================================  =====
exact name                        100
name prefix / name word prefix    60 / 45
name substring                    20
exact tag                         30
title word prefix / substring     25 / 12
tag word prefix / substring       15 / 8
description word prefix / substr  6 / 2
================================  =====

Ties break by name. Searching 10,000 entries costs a small multiple of a
plain substring scan (``benchmarks/bench_catalog.py``).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Sequence

import attrs

from .model import CatalogEntry

__all__ = ["Hit", "SearchIndex", "tokenize"]

_NON_WORD = re.compile(r"[^a-z0-9]+")


def tokenize(query: str) -> list[str]:
    """Lower-cased terms of a query (split on anything but letters and digits)."""
    return [t for t in _NON_WORD.split(query.lower()) if t]


#: every ASCII character but letters and digits -> space (str.translate runs in C)
_SPACES = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum()})


def _words(text: str) -> str:
    """``" " + text`` lower-cased with punctuation as spaces: ``" " + term in`` it is a word-prefix test."""
    return " " + text.lower().translate(_SPACES)


@attrs.frozen
class Hit:
    entry: CatalogEntry
    score: int


# name, name words, title words, tag set, tag words, description words, blob (all lower-case)
_Doc = tuple[str, str, str, frozenset[str], str, str, str]


def _doc(entry: CatalogEntry) -> _Doc:
    name = entry.name.lower()
    title_w = _words(entry.title)
    tags_w = _words(" ".join(entry.tags))
    desc_w = _words(entry.description)
    # terms are single words, so a tag matches exactly when one of its words does
    return (
        name,
        _words(name),
        title_w,
        frozenset(tags_w.split()),
        tags_w,
        desc_w,
        "\x00".join((name, title_w, tags_w, desc_w)),
    )


class SearchIndex:
    """Build once per catalog snapshot; :meth:`search` is read-only."""

    def __init__(self, entries: Iterable[CatalogEntry]) -> None:
        self._entries = list(entries)
        self._docs = [_doc(e) for e in self._entries]

    def __len__(self) -> int:
        return len(self._docs)

    def search(self, query: str, *, limit: int | None = None, kinds: Sequence[str] | None = None) -> list[Hit]:
        """Entries matching every term of ``query``, best first; an empty query lists all by name."""
        terms = tokenize(query)
        pairs = [(t, " " + t) for t in terms]
        entries = self._entries
        docs = self._docs
        # one substring test per entry for the rarest-looking (longest) term rejects most entries
        first = max(terms, key=len) if terms else ""
        candidates = [i for i, doc in enumerate(docs) if first in doc[6]] if first else range(len(docs))
        ranked: list[tuple[int, str, str, int]] = []
        append = ranked.append
        for i in candidates:
            name, name_w, title_w, tags, tags_w, desc_w, blob = docs[i]
            total = 0
            for term, wterm in pairs:
                if term not in blob:
                    break
                # the scores of the module docstring's table, inlined: this loop is the hot path
                if name == term:
                    score = 100
                elif name.startswith(term):
                    score = 60
                elif wterm in name_w:
                    score = 45
                elif term in name:
                    score = 20
                else:
                    score = 0
                if term in tags:
                    score += 30
                elif wterm in tags_w:
                    score += 15
                elif term in tags_w:
                    score += 8
                for words, word_prefix, substring in ((title_w, 25, 12), (desc_w, 6, 2)):
                    if wterm in words:
                        score += word_prefix
                    elif term in words:
                        score += substring
                if score == 0:  # matched only across a field boundary
                    break
                total += score
            else:
                if kinds and entries[i].kind not in kinds:
                    continue
                append((-total, name, entries[i].source, i))
        best = heapq.nsmallest(limit, ranked) if limit is not None else sorted(ranked)
        return [Hit(entries[i], -neg) for neg, _, _, i in best]

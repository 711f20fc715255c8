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

import re
from collections.abc import Iterable, Sequence

import attrs

from .model import CatalogEntry

__all__ = ["Hit", "SearchIndex", "tokenize"]

_NON_WORD = re.compile(r"[^a-z0-9]+")


def tokenize(query: str) -> list[str]:
    """Lower-cased terms of a query (split on anything but letters and digits)."""
    return [t for t in _NON_WORD.split(query.lower()) if t]


def _words(text: str) -> str:
    return " " + _NON_WORD.sub(" ", text.lower())


@attrs.frozen
class Hit:
    entry: CatalogEntry
    score: int


@attrs.frozen
class _Doc:
    entry: CatalogEntry
    name: str
    name_w: str
    title: str
    title_w: str
    tags: frozenset[str]
    tags_w: str
    desc: str
    desc_w: str
    blob: str


def _doc(entry: CatalogEntry) -> _Doc:
    name = entry.name.lower()
    title = entry.title.lower()
    tags = [t.lower() for t in entry.tags]
    desc = entry.description.lower()
    return _Doc(
        entry=entry,
        name=name,
        name_w=_words(name),
        title=title,
        title_w=_words(title),
        tags=frozenset(w for t in tags for w in tokenize(t)) | frozenset(tags),
        tags_w=_words(" ".join(tags)),
        desc=desc,
        desc_w=_words(desc),
        blob="\x00".join((name, title, " ".join(tags), desc)),
    )


def _score(doc: _Doc, term: str) -> int:
    score = 0
    wterm = " " + term
    if doc.name == term:
        score += 100
    elif doc.name.startswith(term):
        score += 60
    elif wterm in doc.name_w:
        score += 45
    elif term in doc.name:
        score += 20
    if term in doc.tags:
        score += 30
    elif wterm in doc.tags_w:
        score += 15
    elif term in doc.tags_w:
        score += 8
    if wterm in doc.title_w:
        score += 25
    elif term in doc.title:
        score += 12
    if wterm in doc.desc_w:
        score += 6
    elif term in doc.desc:
        score += 2
    return score


class SearchIndex:
    """Build once per catalog snapshot; :meth:`search` is read-only."""

    def __init__(self, entries: Iterable[CatalogEntry]) -> None:
        self._docs = [_doc(e) for e in entries]

    def __len__(self) -> int:
        return len(self._docs)

    def search(self, query: str, *, limit: int | None = None, kinds: Sequence[str] | None = None) -> list[Hit]:
        """Entries matching every term of ``query``, best first; an empty query lists all by name."""
        terms = tokenize(query)
        hits: list[Hit] = []
        for doc in self._docs:
            if kinds and doc.entry.kind not in kinds:
                continue
            total = 0
            for term in terms:
                if term not in doc.blob:
                    break
                score = _score(doc, term)
                if score == 0:  # matched only across a field boundary
                    break
                total += score
            else:
                hits.append(Hit(doc.entry, total))
        hits.sort(key=lambda h: (-h.score, h.entry.name, h.entry.source))
        return hits[:limit] if limit is not None else hits

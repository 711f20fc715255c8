"""The tool index: each tool's search words and token estimate, rebuilt from what changed.

:meth:`ToolRegistry.index <kairox._tool_registry.ToolRegistry.index>` hands it out; the session's
context selection (``_context``) ranks tools with it."""

from __future__ import annotations

import bisect
import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ._tools import Tool, ToolSpec


@attrs.frozen
class _Entry:
    tool: Tool
    spec: ToolSpec
    provider: str
    rank: int = 0


def estimate_tokens(value: Any) -> int:
    """A rough token count (~4 characters a token), enough for budgeting."""
    return max(1, len(json.dumps(value, ensure_ascii=False)) // 4)


#: the parts a text is cut into for the word index: runs of letters and digits
_PART = re.compile(r"[^\W_]+")


#: how much of a tool's description ranking reads (characters)
SEARCHED_DESCRIPTION = 4096
#: ids an index may carry over as changed beyond the number of tools before it starts afresh
CHANGED_SLACK = 1024


@attrs.define
class _Facts:
    """What ranking and budgeting need of one spec, made once while the spec is the same object."""

    spec: ToolSpec
    #: ``"<id> <exported name>"`` and the description, lowercased
    name_text: str
    text: str
    #: the runs of letters and digits in each
    name_parts: frozenset[str]
    parts: frozenset[str]
    #: the estimate of its model shape, once asked for
    tokens: int | None = None

    @classmethod
    def of(cls, spec: ToolSpec) -> _Facts:
        # a description is searched in its first SEARCHED_DESCRIPTION characters: a server's
        # megabyte of text must not make every turn's ranking slow
        name_text = f"{spec.id} {spec.exported_name}".lower()
        text = spec.description[:SEARCHED_DESCRIPTION].lower()
        return cls(spec, name_text, text, frozenset(_PART.findall(name_text)), frozenset(_PART.findall(text)))


def _query_words(query: str) -> dict[str, int]:
    """Each word of ``query``, lowercased, with how often it stands there."""
    words: dict[str, int] = {}
    for word in query.lower().split():
        words[word] = words.get(word, 0) + 1
    return words


class _Words:
    """Which tools hold which part (a run of letters and digits) of one of their texts. A
    word that is a run of letters and digits itself is in a text exactly when it is in one
    of the text's parts, so it is looked for in the distinct parts alone (joined into one
    string), not in every tool's text. Kept up to date by :meth:`add` and :meth:`remove`
    (tool by tool), so an index made after a change takes it over."""

    def __init__(self) -> None:
        self._holders: dict[str, set[str]] = {}
        self._joined: tuple[str, list[int], list[str]] | None = None

    def add(self, tool_id: str, parts: frozenset[str]) -> None:
        for part in parts:
            holders = self._holders.get(part)
            if holders is None:
                self._holders[part] = {tool_id}
                self._joined = None
            else:
                holders.add(tool_id)

    def remove(self, tool_id: str, parts: frozenset[str]) -> None:
        for part in parts:
            holders = self._holders[part]
            holders.discard(tool_id)
            if not holders:
                del self._holders[part]
                self._joined = None

    def holding(self, word: str) -> set[str]:
        """The ids of the tools whose text holds ``word`` (a run of letters and digits)."""
        if self._joined is None:
            parts = list(self._holders)
            self._joined = ("\n".join(parts), _starts(parts), parts)
        joined, starts, parts = self._joined
        found: set[str] = set()
        for at in _found_in(joined, starts, word):
            found.update(self._holders[parts[at]])
        return found


class ToolIndex:
    """The registry's tools at one moment, in id order, ready to be ranked and budgeted.

    Ranking (``tools.search``, and the tools a turn's budget keeps) scores each tool by
    the query's words: 3 for a word in its id or exported name, else 1 for a word in its
    description; the best score first, then id order. A word is looked for among the
    distinct runs of letters and digits of all tools (``_Words``), so a query costs the
    tools it finds, not every tool (a word with punctuation in it, ``fs.read``, is looked
    for in every tool's text). Each tool's lowercased text, its parts and its token
    estimate are kept per spec object. An index made after a change takes them, and the
    word index, over from the one before and redoes only the ids the change touched
    (``changed``); the one before then makes its own again if it is ever asked.
    """

    def __init__(
        self,
        ids: list[str],
        entries: Mapping[str, _Entry],
        previous: ToolIndex | None = None,
        changed: Iterable[str] = (),
    ) -> None:
        self.ids = ids
        self._entries = entries
        self._changed = set(changed)
        self._state: tuple[dict[str, _Facts], _Words, _Words] | None = None
        self._previous: ToolIndex | None = previous
        while previous is not None and previous._state is None:  # one that never ranked knows nothing
            self._changed |= previous._changed
            previous = previous._previous
        if previous is None or len(self._changed) > len(ids) + CHANGED_SLACK:
            # many changes and no ranking between them (a gateway that only lists tools):
            # redoing every id once is cheaper than remembering them all
            previous, self._changed = None, set()
        self._previous = previous
        self._texts: tuple[tuple[str, list[int]], tuple[str, list[int]]] | None = None

    @property
    def specs(self) -> list[ToolSpec]:
        """Every tool's spec, in id order."""
        return [self._entries[tid].spec for tid in self.ids]

    def spec(self, position: int) -> ToolSpec:
        return self._entries[self.ids[position]].spec

    @functools.cached_property
    def hidden(self) -> int:
        """How many tools are not for the model (:attr:`ToolSpec.model_visible`)."""
        return sum(1 for tid in self.ids if not self._entries[tid].spec.model_visible)

    def __len__(self) -> int:
        return len(self.ids)

    def _ready(self) -> tuple[dict[str, _Facts], _Words, _Words]:
        if self._state is None:
            previous, self._previous = self._previous, None
            changed: Iterable[str] = self._changed
            if previous is not None and previous._state is not None:
                facts, names, texts = previous._state
                previous._state = None  # taken over
            else:
                facts, names, texts = {}, _Words(), _Words()
                changed = self.ids
            for tid in changed:
                old = facts.pop(tid, None)
                entry = self._entries.get(tid)
                if old is not None and entry is not None and old.spec is entry.spec:
                    facts[tid] = old
                    continue
                if old is not None:
                    names.remove(tid, old.name_parts)
                    texts.remove(tid, old.parts)
                if entry is not None:
                    fact = facts[tid] = _Facts.of(entry.spec)
                    names.add(tid, fact.name_parts)
                    texts.add(tid, fact.parts)
            self._changed = set()
            self._state = (facts, names, texts)
        return self._state

    def tokens(self, position: int) -> int:
        """The token estimate of the tool at ``position`` in its model shape."""
        fact = self._ready()[0][self.ids[position]]
        if fact.tokens is None:
            fact.tokens = estimate_tokens(fact.spec.to_model_tool())
        return fact.tokens

    def position(self, tool_id: str) -> int | None:
        """Where ``tool_id`` stands in :attr:`ids` (``None``: not registered)."""
        at = bisect.bisect_left(self.ids, tool_id)
        return at if at < len(self.ids) and self.ids[at] == tool_id else None

    def _holding(self, word: str) -> tuple[set[int], set[int]]:
        """The positions of the tools that hold ``word`` in their name text, and in their description."""
        facts, names, texts = self._ready()
        if _PART.fullmatch(word) is None:  # it spans punctuation: look in every text
            if self._texts is None:
                listed = [facts[tid] for tid in self.ids]
                self._texts = (_joined(f.name_text for f in listed), _joined(f.text for f in listed))
            return _found_in(*self._texts[0], word), _found_in(*self._texts[1], word)
        ids, at = self.ids, bisect.bisect_left
        return {at(ids, t) for t in names.holding(word)}, {at(ids, t) for t in texts.holding(word)}

    def rank(self, query: str) -> list[int]:
        """The positions of the tools that match ``query``, best first (ties in id order)."""
        words = _query_words(query)
        if not words or not self.ids:
            return []
        scores: dict[int, int] = {}
        for word, times in words.items():
            in_name, in_text = self._holding(word)
            for at in in_name:
                scores[at] = scores.get(at, 0) + 3 * times
            for at in in_text - in_name:
                scores[at] = scores.get(at, 0) + times
        return sorted(scores, key=lambda at: (-scores[at], at))


def _joined(texts: Iterable[str]) -> tuple[str, list[int]]:
    listed = list(texts)
    return "\n".join(listed), _starts(listed)


def _starts(texts: Iterable[str]) -> list[int]:
    starts, at = [], 0
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    return starts


def _found_in(joined: str, starts: list[int], word: str) -> set[int]:
    """The positions of the texts (joined with newlines, starting at ``starts``) that hold
    ``word`` (it holds no whitespace, so no match runs from one text into the next)."""
    found: set[int] = set()
    at = joined.find(word)
    last = len(starts) - 1
    while at >= 0:
        i = bisect.bisect_right(starts, at) - 1
        found.add(i)
        if i >= last:
            break
        at = joined.find(word, starts[i + 1])
    return found

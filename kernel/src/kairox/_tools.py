"""Tools: specs, results, the ``Tool`` protocol and the dynamic registry."""

from __future__ import annotations

import base64
import bisect
import contextlib
import difflib
import inspect
import itertools
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, Union, runtime_checkable

import attrs

from ._events import EventBus, ToolNameCollision, ToolsChanged
from ._names import assign_exported_names, first_suffixed, sanitize_name
from ._types import Capability, Domain, Permissions
from .errors import RegistrationError, ToolNotFound

if TYPE_CHECKING:
    from ._runtime import Runtime, Session

logger = logging.getLogger(__name__)

__all__ = [
    "AudioContent",
    "Content",
    "FunctionTool",
    "ImageContent",
    "ResourceContent",
    "ResourceLink",
    "TextContent",
    "Tool",
    "ToolContext",
    "ToolIndex",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "ToolView",
]

EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


def _freeze_schema(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(value) if value else dict(EMPTY_SCHEMA)


def _icon_tuple(icons: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    return tuple(icons)


def _respec(spec: ToolSpec, **changes: str) -> ToolSpec:
    """``spec`` with other ``exported_name`` or ``provider`` (fields with no converter): a copy
    sharing the other fields, which were converted once already (``attrs.evolve`` would copy
    the input schema again, for every tool registered and named)."""
    new = object.__new__(ToolSpec)
    for field in _SPEC_FIELDS:
        _set_field(new, field, getattr(spec, field))
    for field, value in changes.items():
        if field not in _PLAIN_FIELDS:
            raise TypeError(f"_respec sets only {', '.join(sorted(_PLAIN_FIELDS))}, not {field!r}")
        _set_field(new, field, value)
    return new


_set_field = object.__setattr__


@attrs.frozen
class ToolSpec:
    """What a tool is: identity, schema and the facts the policy engine needs.

    ``id`` is the canonical id (``fs.read``, ``git.git_status``);
    ``exported_name`` is filled in by the registry. A tool that declares no
    domain/capability is treated as ``system``/``execute``.
    """

    id: str
    description: str = ""
    input_schema: dict[str, Any] = attrs.field(factory=lambda: dict(EMPTY_SCHEMA), converter=_freeze_schema)
    domain: Domain = attrs.field(default=Domain.SYSTEM, converter=Domain)
    capability: Capability = attrs.field(default=Capability.EXECUTE, converter=Capability)
    provider: str = ""
    title: str | None = None
    output_schema: dict[str, Any] | None = None
    #: what the tool says about itself (MCP ``annotations``): untrusted, it decides nothing
    #: unless the user trusts its server (``trust_annotations``)
    annotations: dict[str, Any] = attrs.field(factory=dict)
    #: icons the tool's server gave it (MCP ``icons``: ``{"src", "mimeType", "sizes", "theme"}``)
    icons: tuple[dict[str, Any], ...] = attrs.field(default=(), converter=_icon_tuple)
    #: the tool's MCP ``_meta``, as sent
    meta: dict[str, Any] = attrs.field(factory=dict)
    #: argument names that hold a filesystem path the tool writes to (policy checks them)
    path_arguments: tuple[str, ...] | None = None
    #: argument name of the working directory for execute tools
    permissions: Permissions | None = None
    exported_name: str = ""

    def to_model_tool(self) -> dict[str, Any]:
        """The shape model APIs take: exported name, description, JSON schema."""
        return {
            "name": self.exported_name or self.id,
            "description": self.description,
            "input_schema": self.input_schema,
        }


_SPEC_FIELDS = tuple(field.name for field in attrs.fields(ToolSpec))
_PLAIN_FIELDS = frozenset({"exported_name", "provider"})


#: every content block may carry MCP ``annotations`` (``audience``, ``priority``,
#: ``lastModified``) and ``_meta`` as its server sent them (``None``: none sent)


@attrs.frozen
class TextContent:
    text: str
    type: Literal["text"] = "text"
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class _Media:
    """What an image and an audio block share: base64 data of a MIME type."""

    data: str  # base64
    mime_type: str

    def raw(self) -> bytes:
        return base64.b64decode(self.data)


@attrs.frozen
class ImageContent(_Media):
    type: Literal["image"] = "image"
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class AudioContent(_Media):
    type: Literal["audio"] = "audio"
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class ResourceContent:
    """An embedded resource: text or base64 blob."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    type: Literal["resource"] = "resource"
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class ResourceLink:
    uri: str
    name: str = ""
    mime_type: str | None = None
    description: str | None = None
    type: Literal["resource_link"] = "resource_link"
    title: str | None = None
    #: the resource's size in bytes, as the server states it
    size: int | None = None
    icons: tuple[dict[str, Any], ...] | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


#: fields of content blocks left out of :meth:`ToolResult.to_dict` when unset
_OPTIONAL_BLOCK_FIELDS = frozenset({"annotations", "meta", "title", "size", "icons"})


def _block_dict(block: Content) -> dict[str, Any]:
    data = attrs.asdict(block, filter=lambda a, v: not (a.name in _OPTIONAL_BLOCK_FIELDS and v is None))
    if "meta" in data:
        data["_meta"] = data.pop("meta")
    return data


Content = Union[TextContent, ImageContent, AudioContent, ResourceContent, ResourceLink]


def _content_tuple(blocks: Iterable[Content]) -> tuple[Content, ...]:
    return tuple(blocks)


def _b64_size(data: str) -> int:
    """Decoded size of base64 text, without decoding it."""
    data = data.rstrip()
    return len(data) * 3 // 4 - data[-2:].count("=")


@attrs.frozen
class ToolResult:
    """What a tool returns. Content blocks are kept as they came (images stay images)."""

    content: tuple[Content, ...] = attrs.field(default=(), converter=_content_tuple)
    structured: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] = attrs.field(factory=dict)

    @classmethod
    def from_text(cls, text: str, *, is_error: bool = False, structured: dict[str, Any] | None = None) -> ToolResult:
        return cls(content=(TextContent(text),), is_error=is_error, structured=structured)

    @property
    def text(self) -> str:
        """A text rendering of every block (the fallback for text-only callers)."""
        parts: list[str] = []
        for block in self.content:
            if isinstance(block, TextContent):
                parts.append(block.text)
            elif isinstance(block, ImageContent):
                parts.append(f"[image {block.mime_type}, {_b64_size(block.data)} bytes]")
            elif isinstance(block, AudioContent):
                parts.append(f"[audio {block.mime_type}, {_b64_size(block.data)} bytes]")
            elif isinstance(block, ResourceContent):
                if block.text is not None:
                    parts.append(block.text)
                else:
                    parts.append(f"[resource {block.uri} {block.mime_type or ''}]".replace(" ]", "]"))
            else:
                parts.append(f"[resource link {block.uri}]")
        if not parts and self.structured is not None:
            parts.append(json.dumps(self.structured, ensure_ascii=False))
        return "\n".join(parts)

    def limited(self, *, max_text: int = 200_000, max_binary: int = 20_000_000) -> ToolResult:
        """A copy within size limits: long text blocks are cut with a marker, binary
        blocks (images, audio, blobs) over ``max_binary`` bytes become a text note.
        Returns ``self`` when nothing is over."""
        blocks: list[Content] = []
        changed = False
        for block in self.content:
            if isinstance(block, TextContent) and len(block.text) > max_text:
                cut = len(block.text) - max_text
                blocks.append(
                    attrs.evolve(block, text=block.text[:max_text] + f"\n[... truncated: {cut} more characters ...]")
                )
                changed = True
            elif isinstance(block, (ImageContent, AudioContent)) and _b64_size(block.data) > max_binary:
                blocks.append(
                    TextContent(
                        f"[{block.type} {block.mime_type} of {_b64_size(block.data)} bytes omitted: over the size limit]"
                    )
                )
                changed = True
            elif isinstance(block, ResourceContent) and block.blob is not None and _b64_size(block.blob) > max_binary:
                blocks.append(
                    TextContent(f"[resource {block.uri} of {_b64_size(block.blob)} bytes omitted: over the size limit]")
                )
                changed = True
            elif isinstance(block, ResourceContent) and block.text is not None and len(block.text) > max_text:
                cut = len(block.text) - max_text
                blocks.append(
                    attrs.evolve(block, text=block.text[:max_text] + f"\n[... truncated: {cut} more characters ...]")
                )
                changed = True
            else:
                blocks.append(block)
        return attrs.evolve(self, content=tuple(blocks)) if changed else self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: content blocks (their ``annotations`` and ``_meta`` when sent),
        ``structured``, ``is_error``, and the result's ``_meta`` when it has one."""
        data: dict[str, Any] = {
            "content": [_block_dict(c) for c in self.content],
            "structured": self.structured,
            "is_error": self.is_error,
        }
        if self.meta:
            data["_meta"] = dict(self.meta)
        return data


ProgressCallback = Callable[[float, Union[float, None], Union[str, None]], Union[None, Awaitable[None]]]


@attrs.define
class ToolContext:
    """Handed to :meth:`Tool.call`: who is calling and how to report progress."""

    runtime: Runtime | None = None
    session: Session | None = None
    call_id: str = ""
    progress: ProgressCallback | None = None
    timeout: float | None = None
    #: the roots a write must land inside: set when the policy allowed this call only
    #: because its targets resolved inside them (a tool that resolves its path again must
    #: check it, so a link changed since the decision cannot take the write outside);
    #: ``None`` when where it lands did not decide it (the user approved, or the policy
    #: decides the same anywhere)
    confined_to: tuple[Path, ...] | None = None

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self.progress is None:
            return
        result = self.progress(progress, total, message)
        if inspect.isawaitable(result):
            await result


@runtime_checkable
class Tool(Protocol):
    """Anything the agent can call."""

    @property
    def spec(self) -> ToolSpec: ...

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult: ...


ToolFunction = Callable[..., Any]


class FunctionTool:
    """A tool backed by a plain (sync or async) function.

    The function receives the arguments as keyword arguments, plus ``context``
    when it declares that parameter. It may return a :class:`ToolResult`, a
    string, or any JSON-serialisable value (returned as structured content).
    """

    def __init__(self, spec: ToolSpec, fn: ToolFunction) -> None:
        self._spec = spec
        self._fn = fn
        self._wants_context = "context" in inspect.signature(fn).parameters

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def with_spec(self, spec: ToolSpec) -> FunctionTool:
        return FunctionTool(spec, self._fn)

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        kwargs = dict(arguments)
        if self._wants_context:
            kwargs["context"] = context
        value = self._fn(**kwargs)
        if inspect.isawaitable(value):
            value = await value
        return as_result(value)


def as_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult.from_text(value)
    if value is None:
        return ToolResult()
    structured = value if isinstance(value, dict) else {"result": value}
    return ToolResult(content=(TextContent(json.dumps(value, ensure_ascii=False, default=str)),), structured=structured)


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


def publish_change(
    events: EventBus, provider: str, removed: list[str], added: list[str], displaced: Mapping[str, list[str]]
) -> None:
    """The events of one registry change: each displaced provider's loss, then ``provider``'s
    :class:`ToolsChanged` (a replaced tool that kept its id is both removed and added: it
    is listed as added)."""
    gone, new = set(removed), set(added)
    really_removed = tuple(t for t in removed if t not in new)
    really_added = tuple(t for t in added if t not in gone)
    changed = tuple(t for t in added if t in gone)
    for loser, ids in displaced.items():
        logger.warning("tools %s of %s are replaced by %s's, which ranks above", ", ".join(ids), loser, provider)
        events.publish(ToolsChanged(provider=loser, added=(), removed=tuple(ids)))
    if really_added or really_removed or changed:
        events.publish(ToolsChanged(provider=provider, added=really_added + changed, removed=really_removed))


def _with_id(group: str | set[str] | None, tid: str) -> str | set[str]:
    """A group of ids (one id, kept as itself, or a set of several) with ``tid`` in it."""
    if group is None or group == tid:
        return tid
    if isinstance(group, set):
        group.add(tid)
        return group
    return {group, tid}


def _without_id(group: str | set[str], tid: str) -> str | set[str] | None:
    """``group`` without ``tid`` (``None``: nothing is left; a set left with one is that id)."""
    if isinstance(group, set):
        group.discard(tid)
        return next(iter(group)) if len(group) == 1 else group
    return None if group == tid else group


def _set_group(groups: dict[str, str | set[str]], key: str, group: str | set[str] | None) -> None:
    if group is None:
        del groups[key]
    else:
        groups[key] = group


def _members(group: str | set[str] | None) -> Iterable[str]:
    if group is None:
        return ()
    return (group,) if isinstance(group, str) else group


class ToolRegistry:
    """Every tool the agent may call, keyed by canonical id.

    Providers add and remove tools while the runtime runs; each change is one
    :class:`ToolsChanged` event. A tool keeps its exported name for the
    registry's life, even across a removal and a return (a server restart, a
    ``tools/list_changed``), as long as its provider removed no more than
    :attr:`remembered_removals` other tools since (a server that lists new names
    without end cannot grow the registry without end, nor make another server's
    tools forget their names): a newcomer that sanitises to a name someone holds
    gets a hash suffix (:func:`kairox.ext.assign_exported_names`). Tools that arrive
    together, inside one :meth:`batch` (the runtime's parallel start is one), are
    named from their set alone, whatever order they registered in: the best
    :class:`~kairox.ext.ToolRank` keeps a contested name.

    A change costs what it changes: each id is sanitised once, and only the
    newcomers that compete for a name with a tool the change touched are named
    again (the names are those :func:`~kairox.ext.assign_exported_names` gives the
    whole set of newcomers; it is called on the whole set only when a newcomer's
    hash-suffixed name meets another name, which takes a crafted id).
    """

    #: how many removed tools of one provider keep their exported names for their return
    #: (the provider's oldest removal is forgotten first; its name is free again). A provider
    #: that is gone keeps its quota (it may return), so at most this many names are kept
    #: for each provider the registry has had
    remembered_removals = 10_000

    def __init__(self, events: EventBus | None = None) -> None:
        self._events = events or EventBus()
        self._entries: dict[str, _Entry] = {}
        self._by_exported: dict[str, str] = {}
        #: canonical id -> exported name, kept after a removal (the id gets it back)
        self._pinned: dict[str, str] = {}
        #: every pinned name (they never change, and no two ids hold one)
        self._taken: set[str] = set()
        #: provider -> its removed ids whose names are kept (oldest removal first)
        self._gone: dict[str, dict[str, None]] = {}
        #: removed id whose name is kept -> the provider that removed it
        self._gone_from: dict[str, str] = {}
        self._provider_ranks: dict[str, int] = {}
        self._batch_depth = 0
        #: canonical id -> sanitize_name(id), for every registered id and every removed one
        #: whose name is kept
        self._sanitized: dict[str, str] = {}
        #: provider -> its registered ids (in registration order)
        self._by_provider: dict[str, dict[str, None]] = {}
        #: sanitised name -> the registered id that wants it, or the ids (a set: a collision);
        #: one id is kept as itself, not as a set of one, for every tool not in a collision
        self._groups: dict[str, str | set[str]] = {}
        #: newcomers of the running batch (registered, no pinned name): their names and groups
        #: (by sanitised name, one id kept as itself as in ``_groups``)
        self._fresh: dict[str, str] = {}
        self._fresh_groups: dict[str, str | set[str]] = {}
        #: losers of the fresh groups: id -> its first suffixed candidate, and how many want each
        self._loser_names: dict[str, str] = {}
        self._loser_counts: dict[str, int] = {}
        #: a suffixed name met another name in this batch: name every newcomer from scratch
        self._tangled = False
        #: every registered id, sorted (kept so by each change)
        self._ids: list[str] = []
        #: the tools as ranking sees them (``None``: changed since; the last one lends its facts)
        self._index: ToolIndex | None = None
        self._last_index: ToolIndex | None = None
        #: the ids changed since the last index was made
        self._dirty: set[str] = set()

    # -- changes ---------------------------------------------------------
    def add(self, tool: Tool, *, provider: str | None = None, rank: int | None = None) -> ToolSpec:
        """Register one tool; a second tool with the same canonical id is refused, unless its
        provider ranks above the holder's (then the holder's tool is replaced)."""
        self.replace(provider or tool.spec.provider or "<code>", add=[tool], remove=(), rank=rank)
        return self._entries[tool.spec.id].spec

    def remove(self, tool_id: str) -> None:
        entry = self._entries.get(tool_id)
        if entry is None:
            raise ToolNotFound(f"no tool {tool_id!r}")
        self.replace(entry.provider, add=(), remove=[tool_id])

    def replace_provider(self, provider: str, tools: Iterable[Tool], *, rank: int | None = None) -> None:
        """Atomically swap every tool of ``provider`` for ``tools`` (one event)."""
        current = list(self._by_provider.get(provider, ()))
        self.replace(provider, add=list(tools), remove=current, rank=rank)

    def remove_provider(self, provider: str) -> None:
        if provider in self._by_provider:  # a provider with no tools changes nothing
            self.replace_provider(provider, ())

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Tools registered inside are named together, as one set, when it ends.

        Until then their exported names may still change (a better ranked
        newcomer can take a name from one); names held before the batch never do.
        """
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1
            if self._batch_depth == 0:
                self._pin_fresh()

    def replace(self, provider: str, *, add: Iterable[Tool], remove: Iterable[str], rank: int | None = None) -> None:
        """Remove ``remove`` and add ``add`` for ``provider``, as one change.

        ``rank`` (a :class:`~kairox.ext.ToolRank`; default: what the provider had,
        else ``USER``) decides contested exported names among newcomers.
        """
        if rank is not None:
            self._provider_ranks[provider] = int(rank)
        provider_rank = self._provider_ranks.get(provider, 0)
        entries = self._entries
        removed = list(dict.fromkeys(tid for tid in remove if tid in entries))
        removing = set(removed)
        tools = list(add)
        # check everything before changing anything: a refused change leaves the registry as it was
        claimed: dict[str, _Entry] = {}
        displaced: dict[str, list[str]] = {}
        for tool in tools:
            tid = tool.spec.id
            holder = claimed.get(tid) or (entries.get(tid) if tid not in removing else None)
            if holder is not None:
                if holder.provider == provider or holder.rank <= provider_rank:
                    raise RegistrationError(f'tool "{tid}" is registered twice: by {holder.provider} and by {provider}')
                # a better ranked provider (the user's own server) takes its id back
                displaced.setdefault(holder.provider, []).append(tid)
            spec = tool.spec
            claimed[tid] = _Entry(
                tool, spec if spec.provider else _respec(spec, provider=provider), provider, provider_rank
            )
        if not removed and not claimed:
            return
        self._index = None
        old_collisions = {key: self._collision(key) for key in self._keys_of([*removed, *claimed])}
        touched: set[str] = set()
        for tid in removed:
            self._drop(tid, touched)
        for ids in displaced.values():
            for tid in ids:
                self._drop(tid, touched)
        for tid, entry in claimed.items():
            self._put(tid, entry, touched)
        self._rename(touched)
        if len(self._dirty) > len(self._ids) + CHANGED_SLACK:
            # more changed than an index could take over: the next one starts afresh (as ToolIndex
            # itself would), and the changed ids are not kept without end while no index is made
            self._last_index, self._dirty = None, set()
        if self._batch_depth == 0:
            self._pin_fresh()
        publish_change(self._events, provider, removed, list(claimed), displaced)
        new_collisions = []
        for key, before in old_collisions.items():
            group = self._collision(key)
            if group is not None and group != before:
                new_collisions.append(group)
        for group in sorted(new_collisions):
            self._events.publish(ToolNameCollision(exported_name=self._sanitize(group[0]), canonical_ids=group))

    def rank_of(self, tool_id: str) -> int | None:
        """The :class:`~kairox.ext.ToolRank` of the provider that registered ``tool_id`` (``None``: none did)."""
        entry = self._entries.get(tool_id)
        return None if entry is None else entry.rank

    # -- the bookkeeping behind replace() ----------------------------------
    def _sanitize(self, tid: str) -> str:
        name = self._sanitized.get(tid)
        if name is None:
            name = self._sanitized[tid] = sanitize_name(tid)
        return name

    def _keys_of(self, ids: Iterable[str]) -> set[str]:
        return {self._sanitize(tid) for tid in ids}

    def _collision(self, key: str) -> tuple[str, ...] | None:
        group = self._groups.get(key)
        return tuple(sorted(group)) if isinstance(group, set) else None

    def _drop(self, tid: str, touched: set[str]) -> None:
        entry = self._entries.pop(tid, None)
        if entry is None:
            return
        del self._ids[bisect.bisect_left(self._ids, tid)]
        if self._last_index is not None:  # before the first index, every id is new to it anyway
            self._dirty.add(tid)
        key = self._sanitize(tid)
        owned = self._by_provider.get(entry.provider)
        if owned is not None:
            owned.pop(tid, None)
            if not owned:
                del self._by_provider[entry.provider]
        _set_group(self._groups, key, _without_id(self._groups[key], tid))
        name = entry.spec.exported_name
        if self._by_exported.get(name) == tid:
            del self._by_exported[name]
        if tid in self._fresh:
            del self._fresh[tid]
            self._unlose(tid)
            _set_group(self._fresh_groups, key, _without_id(self._fresh_groups[key], tid))
            touched.add(key)
        if tid in self._pinned:  # its name (and sanitised form) kept for its return
            self._gone.setdefault(entry.provider, {})[tid] = None
            self._gone_from[tid] = entry.provider
        else:
            del self._sanitized[tid]

    def _put(self, tid: str, entry: _Entry, touched: set[str]) -> None:
        key = self._sanitize(tid)
        if tid not in self._entries:
            bisect.insort(self._ids, tid)
        self._entries[tid] = entry
        if self._last_index is not None:
            self._dirty.add(tid)
        self._by_provider.setdefault(entry.provider, {})[tid] = None
        self._groups[key] = _with_id(self._groups.get(key), tid)
        pinned = self._pinned.get(tid)
        if pinned is not None:
            self._drop_gone(tid)
            self._set_name(tid, pinned)
            return
        self._fresh[tid] = ""
        self._fresh_groups[key] = _with_id(self._fresh_groups.get(key), tid)
        touched.add(key)

    def _set_name(self, tid: str, name: str) -> None:
        entry = self._entries[tid]
        if entry.spec.exported_name != name:
            old = entry.spec.exported_name
            if old and self._by_exported.get(old) == tid:
                del self._by_exported[old]
            spec = _respec(entry.spec, exported_name=name)
            self._entries[tid] = _Entry(entry.tool, spec, entry.provider, entry.rank)
            if self._last_index is not None:
                self._dirty.add(tid)
        self._by_exported[name] = tid

    def _rename(self, touched: set[str]) -> None:
        """Name the newcomers again where a touched group may have moved a name: exactly the
        names ``assign_exported_names(newcomers, taken=pinned names, rank=...)`` gives."""
        if not self._tangled:
            for key in touched:
                self._name_group(key)
        if self._tangled:
            self._rename_all()
            return
        for key in touched:
            for tid in _members(self._fresh_groups.get(key)):
                self._set_name(tid, self._fresh[tid])

    def _name_group(self, key: str) -> None:
        """One group of newcomers: the winner takes the free name, the others get suffixes."""
        group = _members(self._fresh_groups.get(key))
        winner = None
        if group and key not in self._taken:
            winner = min(group, key=lambda c: (self._entries[c].rank, c != key, c))
            self._fresh[winner] = key
            if key in self._loser_counts:  # a newcomer's suffixed name is this group's name
                self._tangled = True
        for tid in group:
            if tid == winner:
                self._unlose(tid)
                continue
            candidate = self._loser_names.get(tid)
            if candidate is None:
                candidate = self._loser_names[tid] = first_suffixed(tid, key)
                count = self._loser_counts.get(candidate, 0) + 1
                self._loser_counts[candidate] = count
                if count > 1 or candidate in self._taken or candidate in self._fresh_groups:
                    self._tangled = True
            self._fresh[tid] = candidate

    def _unlose(self, tid: str) -> None:
        candidate = self._loser_names.pop(tid, None)
        if candidate is not None:
            count = self._loser_counts[candidate] - 1
            if count:
                self._loser_counts[candidate] = count
            else:
                del self._loser_counts[candidate]

    def _rename_all(self) -> None:
        names, _ = assign_exported_names(
            self._fresh, taken=self._taken, rank={tid: self._entries[tid].rank for tid in self._fresh}
        )
        for tid, name in names.items():
            self._fresh[tid] = name
            self._set_name(tid, name)

    def _pin_fresh(self) -> None:
        for tid, name in self._fresh.items():
            self._pinned[tid] = name
            self._taken.add(name)
        self._fresh.clear()
        self._fresh_groups.clear()
        self._loser_names.clear()
        self._loser_counts.clear()
        self._tangled = False
        for gone in list(self._gone.values()):
            excess = len(gone) - self.remembered_removals
            if excess > 0:
                for tid in list(itertools.islice(gone, excess)):
                    self._drop_gone(tid)
                    self._taken.discard(self._pinned.pop(tid))
                    del self._sanitized[tid]

    def _drop_gone(self, tid: str) -> None:
        """``tid`` is no longer among the removed ids whose names are kept."""
        provider = self._gone_from.pop(tid, None)
        if provider is not None:
            gone = self._gone[provider]
            del gone[tid]
            if not gone:
                del self._gone[provider]

    # -- lookups ---------------------------------------------------------
    def lookup(self, name: str) -> tuple[ToolSpec, Tool] | None:
        """What a call of ``name`` runs: the registered spec (its exported name filled in)
        and the tool itself, by exported name first, then canonical id; ``None`` when
        neither is registered (see :meth:`resolve`)."""
        tid = self._by_exported.get(name)
        entry = self._entries.get(tid if tid is not None else name)
        return None if entry is None else (entry.spec, entry.tool)

    def resolve(self, name: str) -> Tool:
        """The tool with this exported name, else with this canonical id.

        Exported names first: they are what a model sees, and an id such as
        ``a_b`` may be another tool's exported name when that tool held it first.
        """
        tid = self._by_exported.get(name)
        entry = self._entries.get(tid if tid is not None else name)
        if entry is None:
            close = difflib.get_close_matches(name, [*self._entries, *self._by_exported], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ToolNotFound(f"no tool named {name!r}{hint}")
        if entry.spec is entry.tool.spec:
            return entry.tool
        return ToolView(entry.tool, entry.spec)

    def get_spec(self, name: str) -> ToolSpec:
        return self.resolve(name).spec

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._by_exported

    def specs(self) -> list[ToolSpec]:
        return self.index().specs

    def index(self) -> ToolIndex:
        """The tools in id order, with their search text and token estimates (:class:`ToolIndex`);
        made again after a change, taking over what it knew of the specs the change did not touch."""
        if self._index is None:
            self._index = ToolIndex(list(self._ids), dict(self._entries), self._last_index, self._dirty)
            self._last_index = self._index
            self._dirty = set()
        return self._index

    def by_provider(self, provider: str) -> list[ToolSpec]:
        return [self._entries[t].spec for t in sorted(self._by_provider.get(provider, ()))]

    @property
    def collisions(self) -> list[tuple[str, ...]]:
        """Each group of registered ids that sanitise to one name (they competed for it)."""
        return sorted(tuple(sorted(g)) for g in self._groups.values() if isinstance(g, set))

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self.specs())

    def __len__(self) -> int:
        return len(self._entries)


class ToolView:
    """``tool`` seen with another ``spec`` (its calls go to ``tool``): the registry hands out
    tools with their exported names filled in this way, and a bundle's tools carry its
    narrowed permissions. ``inner`` is the tool itself."""

    def __init__(self, tool: Tool, spec: ToolSpec) -> None:
        self._tool = tool
        self._spec = spec

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def inner(self) -> Tool:
        return self._tool

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await self._tool.call(arguments, context)

"""Workspace trust: the *decide* stage between discovering a workspace and activating it.

A workspace is someone else's code until the user trusts it. Everything a
workspace declares that would run a process or contact a URL (a server entry of
its ``kairox.toml`` or ``.mcp.json``, a bundle, a section such as remote catalog
sources) is a :class:`Declared` item with a fingerprint of what it declares.
The user's trust (``kairox trust``) records those fingerprints, keyed by the
workspace's resolved path, in ``$KAIROX_HOME/trust.json``. An item whose
fingerprint the record holds is trusted; an item the record does not hold, or
holds with another fingerprint, is ``changed`` since the workspace was trusted
and does not run until the user trusts it again (direnv's ``allow``).

Items the user's own files declare need no trust (:attr:`TrustState.USER`).
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import shlex
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Union

import attrs

from ._declared import Declared
from ._types import StrEnum
from .files import atomic_write_text, locked

logger = logging.getLogger(__name__)

TRUST_FILE = "trust.json"
_VERSION = 1


class TrustState(StrEnum):
    """Whether a declared item may run."""

    #: declared by the user's own files (or given in code): needs no trust
    USER = "user"
    #: declared by the workspace, and covered by the user's trust
    TRUSTED = "trusted"
    #: declared by a workspace the user has not trusted
    UNTRUSTED = "untrusted"
    #: the workspace is trusted, but this item is new or differs from what was trusted
    CHANGED = "changed"
    #: its fingerprint cannot cover everything it runs (:attr:`Declared.refused` says why):
    #: it cannot be trusted as it is
    REFUSED = "refused"

    @property
    def allowed(self) -> bool:
        return self in (TrustState.USER, TrustState.TRUSTED)

    @property
    def label(self) -> str:
        """How ``status`` and the listing commands name the state."""
        return "changed since trusted" if self is TrustState.CHANGED else self.value


def workspace_key(workspace: str | os.PathLike[str]) -> str:
    """The key a workspace's trust is recorded under: its resolved path."""
    return os.path.realpath(os.fspath(workspace))


@attrs.frozen
class TrustRecord:
    """What the user trusted in one workspace: item key -> fingerprint."""

    path: str
    trusted_at: float
    items: Mapping[str, str] = attrs.field(factory=dict)
    #: the whole workspace was trusted (``kairox trust``), not only some items of it
    #: (``kairox plugin trust NAME``): then an item it lacks is new, "changed since trusted"
    whole: bool = True


class TrustStore:
    """The user's trust decisions, in ``<home>/trust.json``.

    Every change is a read-modify-write under an exclusive lock on
    ``trust.json.lock``, written atomically (a reader never sees half a file,
    and concurrent ``kairox trust`` runs lose nothing). A file that cannot be
    read or parsed trusts nothing (and is not overwritten silently: the next
    write replaces it, keeping a ``.broken`` copy).
    """

    def __init__(self, home: str | os.PathLike[str]) -> None:
        self.home = Path(home)
        self.path = self.home / TRUST_FILE
        #: why the file could not be read, if it could not
        self.problem = ""

    def _read(self) -> dict[str, Any]:
        self.problem = ""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            self.problem = f"{self.path}: cannot read: {exc}"
            return {}
        try:
            data = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            self.problem = f"{self.path}: not valid JSON: {exc.msg} (line {exc.lineno}); trusting nothing"
            return {}
        except (RecursionError, ValueError) as exc:  # nested too deep; an integer too long to convert
            self.problem = f"{self.path}: cannot be read: {type(exc).__name__}; trusting nothing"
            return {}
        if not isinstance(data, dict) or not isinstance(data.get("workspaces", {}), dict):
            self.problem = f"{self.path}: expected an object with `workspaces`; trusting nothing"
            return {}
        return data

    def records(self) -> dict[str, TrustRecord]:
        """Every trusted workspace by resolved path."""
        out: dict[str, TrustRecord] = {}
        for path, entry in self._read().get("workspaces", {}).items():
            if not isinstance(entry, dict):
                continue
            items = entry.get("items")
            when = entry.get("trusted_at")
            if not isinstance(items, dict):
                continue
            clean = {str(k): v for k, v in items.items() if isinstance(v, str)}
            try:
                stamp = float(when) if isinstance(when, (int, float)) and not isinstance(when, bool) else 0.0
            except (OverflowError, ValueError):
                stamp = 0.0
            out[str(path)] = TrustRecord(str(path), stamp, clean, entry.get("whole", True) is not False)
        return out

    def get(self, workspace: str | os.PathLike[str]) -> TrustRecord | None:
        return self.records().get(workspace_key(workspace))

    def _update(self, change: Any) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        with locked(self.path.with_name(self.path.name + ".lock")):
            data = self._read()
            if self.problem and self.path.exists():
                try:
                    os.replace(self.path, self.path.with_name(self.path.name + ".broken"))
                except OSError:
                    pass
            workspaces = data.setdefault("workspaces", {})
            change(workspaces)
            data["version"] = _VERSION
            atomic_write_text(self.path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")

    def trust(
        self, workspace: str | os.PathLike[str], items: Iterable[Declared], *, replace: bool = True
    ) -> TrustRecord:
        """Trust ``items`` in ``workspace``. With ``replace`` (``kairox trust``) the record
        becomes exactly these items; without it (``kairox plugin trust NAME``) they are added.
        A refused item (:attr:`Declared.refused`) is never recorded: it is not trusted in part."""
        key = workspace_key(workspace)
        wanted = {item.key: item.digest for item in items if not item.refused}
        now = time.time()

        def change(workspaces: dict[str, Any]) -> None:
            entry = workspaces.get(key)
            old = entry.get("items") if isinstance(entry, dict) and not replace else None
            merged = {**(old if isinstance(old, dict) else {}), **wanted}
            whole = replace or (isinstance(entry, dict) and entry.get("whole", True) is not False)
            workspaces[key] = {"trusted_at": now, "items": merged, "whole": whole}

        self._update(change)
        record = self.get(key)
        assert record is not None
        return record

    def revoke(self, workspace: str | os.PathLike[str], keys: Iterable[str] | None = None) -> bool:
        """Forget the trust of ``workspace`` (or only of the items ``keys``); whether anything was recorded."""
        key = workspace_key(workspace)
        found: list[bool] = []

        def change(workspaces: dict[str, Any]) -> None:
            entry = workspaces.get(key)
            if not isinstance(entry, dict):
                return
            if keys is None:
                del workspaces[key]
                found.append(True)
                return
            items = entry.get("items")
            if isinstance(items, dict):
                for k in keys:
                    if items.pop(k, None) is not None:
                        found.append(True)
                if not items and entry.get("whole") is False:
                    del workspaces[key]  # nothing of it is trusted any more

        self._update(change)
        return bool(found)


class WorkspaceTrust:
    """The decide stage of one runtime: which declared workspace items the user's trust covers.

    Discovery calls :meth:`check` for each item a workspace declares; the answer
    says whether it may run. :attr:`declared` keeps every workspace item, so
    ``kairox trust`` can show and record exactly what would run.

    ``override`` is for embedding code that vouches for the workspace itself
    (``Runtime(trusted=True)``) or wants it treated as untrusted (``False``).
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        record: TrustRecord | None,
        *,
        override: bool | None = None,
        problem: str = "",
    ) -> None:
        self.workspace = workspace_key(workspace)
        self.record = record
        self.override = override
        #: why the trust file could not be read ("" when it could)
        self.problem = problem
        self.declared: dict[str, Declared] = {}
        self._states: dict[str, TrustState] = {}
        #: the user's own ``[policy.rules]`` (pattern -> action), to say which apply to an item's tools
        self.user_rules: dict[str, str] = {}

    @classmethod
    def load(
        cls, workspace: str | os.PathLike[str], home: str | os.PathLike[str], *, override: bool | None = None
    ) -> WorkspaceTrust:
        store = TrustStore(home)
        record = store.get(workspace) if override is None else None
        return cls(workspace, record, override=override, problem=store.problem)

    @property
    def trusted(self) -> bool:
        """Whether the user has trusted this workspace as a whole (some items may have changed since)."""
        return self.override is True or (self.override is None and self.record is not None and self.record.whole)

    def set_user_rules(self, rules: Mapping[str, str]) -> None:
        """The user's own ``[policy.rules]``: an item whose tools they match says so (:meth:`check`)."""
        self.user_rules = dict(rules)

    def check(self, item: Declared) -> TrustState:
        """The state of a workspace item (recorded in :attr:`declared`, with a note naming
        the user's rules that would apply to its tools)."""
        self.declared[item.key] = item
        applying = rules_for_prefixes(self.user_rules, item.tool_prefixes)
        if applying:
            shown = ", ".join(f"{json.dumps(p, ensure_ascii=False)} = {json.dumps(a)}" for p, a in applying.items())
            tools = ", ".join(f"{p}.*" for p in item.tool_prefixes)
            self.note(item.key, f"your own [policy.rules] apply to its tools ({tools}): {shown}")
        if self.override is not None:
            state = TrustState.TRUSTED if self.override else TrustState.UNTRUSTED
        elif item.refused:
            state = TrustState.REFUSED
        elif self.record is None:
            state = TrustState.UNTRUSTED
        elif self.record.items.get(item.key) == item.digest:
            state = TrustState.TRUSTED
        elif item.key in self.record.items or self.record.whole:
            state = TrustState.CHANGED
        else:  # only some items were trusted (kairox plugin trust NAME), not this one
            state = TrustState.UNTRUSTED
        self._states[item.key] = state
        return state

    def note(self, key: str, text: str) -> None:
        """Add something the user should know about a declared item before trusting it."""
        item = self.declared.get(key)
        if item is not None and text not in item.notes:
            self.declared[key] = attrs.evolve(item, notes=(*item.notes, text))

    def allow(self, key: str) -> None:
        """Let a declared item run because the user's own config says so
        (``[plugins] workspace_trust = "trust"`` in the user's file)."""
        if key in self.declared:
            self._states[key] = TrustState.TRUSTED

    def state_of(self, key: str) -> TrustState | None:
        return self._states.get(key)

    @property
    def pending(self) -> list[Declared]:
        """Declared items that do not run: until the user trusts the workspace (again), or,
        refused, until they change (:attr:`askable` leaves those out)."""
        return [self.declared[k] for k, s in self._states.items() if not s.allowed]

    @property
    def askable(self) -> list[Declared]:
        """Pending items the user's trust would let run (not refused ones)."""
        return [self.declared[k] for k, s in self._states.items() if not s.allowed and s is not TrustState.REFUSED]

    def hint(self, state: TrustState | None = None) -> str:
        """The command that lets a held item run (naming the workspace, whatever the current directory)."""
        again = " again" if state is TrustState.CHANGED else ""
        return f"run `kairox trust {shlex.quote(self.workspace)}` to trust the workspace{again}"

    def explain(self, key: str) -> str:
        """Why a held item does not run, with the command that changes that."""
        state = self._states.get(key)
        if state is None or state.allowed:
            return ""
        if state is TrustState.REFUSED:
            return f"refused: {self.declared[key].refused}; it cannot be trusted as it is"
        return f"{state.label}: {self.hint(state)}"


def rules_for_prefixes(rules: Mapping[str, str], prefixes: Iterable[str]) -> dict[str, str]:
    """The rules whose pattern matches some tool under one of ``prefixes``: by canonical id
    (``<prefix>.<tool>``) or by exported name (``<prefix>_<tool>``, dots as underscores)."""
    from ._names import sanitize_name

    starts = [s for p in prefixes for s in (f"{p}.", sanitize_name(f"{p}.x")[:-1])]
    return {p: a for p, a in rules.items() if any(_glob_matches_some_under(p, s) for s in starts)}


def _glob_tokens(pattern: str) -> list[str]:
    """An fnmatch pattern as tokens: ``*``, ``?``, a ``[...]`` set, or one literal character."""
    tokens: list[str] = []
    i, n = 0, len(pattern)
    last_close = pattern.rfind("]")  # a "[" after it is a literal: no rescan to the end for each one
    while i < n:
        c = pattern[i]
        if c == "[" and i < last_close:
            j = i + 1
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j < n:
                tokens.append(pattern[i : j + 1])
                i = j + 1
                continue
        if not (c == "*" and tokens and tokens[-1] == "*"):
            tokens.append(c)
        i += 1
    return tokens


def _glob_matches_some_under(pattern: str, start: str) -> bool:
    """Whether the fnmatch ``pattern`` matches some name ``start + tail`` with a non-empty
    ``tail``: the pattern run over ``start`` as a small automaton (time: their lengths' product)."""
    from ._text import glob_match

    tokens = _glob_tokens(pattern)

    def closure(states: set[int]) -> set[int]:
        out = set(states)
        for s in sorted(states):
            while s < len(tokens) and tokens[s] == "*":
                s += 1
                out.add(s)
        return out

    states = closure({0})
    for ch in start:
        nxt: set[int] = set()
        for s in states:
            if s >= len(tokens):
                continue
            tok = tokens[s]
            if tok == "*":
                nxt.add(s)
            elif tok == "?" or (len(tok) > 1 and glob_match(ch, tok)) or tok == ch:
                nxt.add(s + 1)
        states = closure(nxt)
        if not states:
            return False
    # a non-empty tail exists when some state still has a token to match (or a * to stay in)
    return any(s < len(tokens) for s in states)


@attrs.frozen
class TrustRequest:
    """What a trust prompt shows: the workspace and every item it declares that would run."""

    workspace: Path
    #: items the user's trust does not cover (new, or changed since trusted); refused ones
    #: (which no answer lets run) are among :attr:`declared` only
    pending: tuple[Declared, ...]
    #: every item the workspace declares (what trusting it records)
    declared: tuple[Declared, ...]
    #: whether the workspace was trusted before (so the pending items changed since)
    changed: bool


#: asked once, before a command activates an untrusted workspace; True trusts it
TrustPrompt = Callable[[TrustRequest], Union[bool, Awaitable[bool]]]


async def ask_trust(trust: WorkspaceTrust, workspace: Path, prompt: TrustPrompt) -> bool:
    """Ask ``prompt`` about what the user's trust does not cover (a refused item stays refused
    whatever the answer, so it is not asked about): whether the user said yes."""
    pending = trust.askable
    if not pending:
        return False
    request = TrustRequest(workspace, tuple(pending), tuple(trust.declared.values()), changed=trust.trusted)
    answer: Any = prompt(request)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer is True

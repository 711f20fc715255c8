"""Per-principal limits of the gateway's tool calls (``[serve.limits]``).

Each principal has a token bucket (``rate`` calls per ``per`` seconds, at most ``burst``
at once) and a count of its calls in flight (at most ``concurrent``); a rule that matches
the principal sets its own numbers. A ``tools/call`` is admitted once ``[serve.principals]``
lets it through, before the policy or a backend sees it (a retry of a held call is the same
call, not another): a call over a limit is the tool's error result naming the limit, with
a retry hint, and takes no token.

The counts live behind :class:`LimitStore` (take a token; acquire and release a slot in
flight): :class:`MemoryStore`, the one this process keeps (each replica counts its own
calls), or with ``[serve.state] redis`` the one every replica counts in
(:class:`kairox_serve.state.RedisStore`). A store that cannot be reached refuses the call
(the limit ``unavailable``): limits that cannot be counted are not lifted.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import anyio
import attrs

from .config import LimitsConfig
from .state import StateUnavailable

if TYPE_CHECKING:
    import mcp_types as types

    from .identity import Principal

__all__ = ["Admitted", "LimitStore", "Limited", "Limits", "MemoryStore", "Quota"]

#: the ``_meta`` key of a limited call's result: which limit, and the seconds to wait
META_KEY = "io.kairox/limited"

T = TypeVar("T")

log = logging.getLogger(__name__)


@runtime_checkable
class LimitStore(Protocol):
    """Where the counts of ``[serve.limits]`` are kept, by key (one per principal)."""

    async def take(self, key: str, rate: int, per: float, burst: int) -> float:
        """Take one call from ``key``'s bucket (``rate`` calls per ``per`` seconds, at most
        ``burst`` kept): ``0.0`` when taken, else the seconds until one will be there."""
        ...

    async def acquire(self, key: str, most: int) -> bool:
        """Count one more call in flight for ``key``, unless it has ``most`` already."""
        ...

    async def release(self, key: str) -> None:
        """A call of ``key`` counted by :meth:`acquire` ended."""
        ...


@attrs.define
class _Entry:
    tokens: float | None = None  # None: full (the bucket was never drawn from)
    stamp: float = 0.0
    in_flight: int = 0


class MemoryStore:
    """:class:`LimitStore` in this process's memory: at most ``max_keys`` keys, the least
    recently used without a call in flight forgotten first (forgetting fills its bucket);
    keys with calls in flight are kept (they are as many as the calls the gateway runs).
    ``clock`` gives seconds (monotonic)."""

    def __init__(self, max_keys: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_keys = max_keys
        self.clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def _entry(self, key: str) -> _Entry:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            return entry
        if len(self._entries) >= self.max_keys:
            idle = next((k for k, e in self._entries.items() if e.in_flight == 0), None)
            if idle is not None:
                del self._entries[idle]
        entry = self._entries[key] = _Entry()
        return entry

    async def take(self, key: str, rate: int, per: float, burst: int) -> float:
        now = self.clock()
        entry = self._entry(key)
        if entry.tokens is None:
            tokens = float(burst)
        else:
            tokens = min(float(burst), entry.tokens + max(0.0, now - entry.stamp) * rate / per)
        entry.stamp = now
        if tokens >= 1.0:
            entry.tokens = tokens - 1.0
            return 0.0
        entry.tokens = tokens
        return (1.0 - tokens) * per / rate

    async def acquire(self, key: str, most: int) -> bool:
        entry = self._entry(key)
        if entry.in_flight >= most:
            return False
        entry.in_flight += 1
        return True

    async def release(self, key: str) -> None:
        entry = self._entries.get(key)
        if entry is not None and entry.in_flight > 0:
            entry.in_flight -= 1


@attrs.frozen
class Quota:
    """One principal's limits, and where they come from (``[serve.limits]`` or one of its rules)."""

    rate: int | None
    per: float
    burst: int
    concurrent: int | None
    source: str

    @classmethod
    def of(cls, config: LimitsConfig, principal: Principal) -> Quota:
        for i, rule in enumerate(config.rules):
            if principal.matched_by(rule):
                rate = rule.rate if rule.rate is not None else config.rate
                # a rule that sets its own rate and no burst bursts to its rate
                burst = rule.burst or (rule.rate if rule.rate is not None else config.burst)
                return cls(
                    rate,
                    rule.per if rule.per is not None else config.per,
                    burst or rate or 1,
                    rule.concurrent if rule.concurrent is not None else config.concurrent,
                    f"[serve.limits] rules[{i}]",
                )
        return cls(config.rate, config.per, config.burst or config.rate or 1, config.concurrent, "[serve.limits]")


@attrs.frozen
class Limited:
    """A call refused by a limit: ``limit`` (``"rate"``, ``"concurrent"``), what to tell the
    caller, and the whole seconds to wait (rate), if known."""

    limit: str
    message: str
    retry_after: int | None = None

    def result(self) -> types.CallToolResult:
        """The tool's error result: the message for the model, the numbers in ``_meta``."""
        import mcp_types as types

        meta: dict[str, Any] = {"limit": self.limit}
        if self.retry_after is not None:
            meta["retryAfter"] = self.retry_after
        return types.CallToolResult(
            content=[types.TextContent(text=self.message)], is_error=True, _meta={META_KEY: meta}
        )


class Admitted:
    """A call let through: :meth:`release` (once, shielded from cancellation) ends its slot in flight."""

    def __init__(self, store: LimitStore | None = None, key: str = "") -> None:
        self._store = store
        self._key = key

    async def release(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            with anyio.CancelScope(shield=True):  # a cancelled call must still give its slot back
                await store.release(self._key)

    def holding(self, run: Callable[[], Awaitable[T]]) -> Callable[[], Awaitable[T]]:
        """``run`` that releases the slot when it ends (a call the gateway holds runs on)."""

        async def held() -> T:
            try:
                return await run()
            finally:
                await self.release()

        return held


#: what an unlimited call is admitted with
_FREE = Admitted()


class Limits:
    """``[serve.limits]`` over ``store`` (a :class:`MemoryStore` of ``max_principals`` by default)."""

    def __init__(
        self, config: LimitsConfig | None, store: LimitStore | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.config = config
        self.store: LimitStore | None = None
        if config is not None:
            self.store = store if store is not None else MemoryStore(config.max_principals, clock)

    async def admit(self, principal: Principal) -> Admitted | Limited:
        """Let one call of ``principal`` through (then :meth:`Admitted.release` when it ends),
        or say which limit refuses it (``unavailable``: the shared store cannot count it)."""
        try:
            return await self._admit(principal)
        except StateUnavailable as exc:
            log.error("kairox serve: a call is refused: %s", exc)
            return Limited(
                "unavailable", f"limited: the call's limits cannot be counted, so it is refused: {exc.public}"
            )

    async def _admit(self, principal: Principal) -> Admitted | Limited:
        if self.config is None or self.store is None:
            return _FREE
        quota = Quota.of(self.config, principal)
        if quota.rate is None and quota.concurrent is None:
            return _FREE
        key = f"{principal.via}:{principal.name}"
        admitted = _FREE
        if quota.concurrent is not None:
            if not await self.store.acquire(key, quota.concurrent):
                return Limited(
                    "concurrent",
                    f"limited: the principal {principal.name!r} already has {quota.concurrent} calls in flight, "
                    f"its limit ({quota.source} concurrent = {quota.concurrent}); retry when one of them has finished",
                )
            admitted = Admitted(self.store, key)
        if quota.rate is not None:
            try:
                wait = await self.store.take(key, quota.rate, quota.per, quota.burst)
            except BaseException:
                await admitted.release()  # a store that fails (or a cancelled call) keeps no slot
                raise
            if wait > 0:
                await admitted.release()
                seconds = max(1, math.ceil(wait))
                return Limited(
                    "rate",
                    f"limited: the principal {principal.name!r} has used its {quota.rate} calls per {quota.per:g} s "
                    f"({quota.source} rate = {quota.rate}, per = {quota.per:g}, burst = {quota.burst}); "
                    f"retry after {seconds} s",
                    seconds,
                )
        return admitted

"""What the replicas of one gateway share in Redis (``[serve.state] redis``).

:class:`RedisStore` is the :class:`~kairox_serve.limits.LimitStore` of ``[serve.limits]``
that every replica counts in: each principal's token bucket is one Redis hash, taken from
by a Lua script (the read, the refill and the take are one atomic step, whichever replica
runs it, on Redis's own clock); its calls in flight are the members of a sorted set, one
per call, each a *lease* that its replica renews while the call runs. A replica that dies
stops renewing, and its calls stop counting ``lease`` seconds later instead of holding the
principal's slots for ever.

Held calls (:mod:`kairox_serve.held`) cannot move: each is a live backend call in the
process of the replica that holds it. That replica names its tokens in Redis (token ->
replica, for ``held_call_timeout``) and keeps a heartbeat key alive; a retry that reaches
another replica is *relayed*: pushed to the holder's inbox list, answered (the next
``InputRequiredResult``, the result or the refusal) on a reply list the relaying replica
waits on. The holder checks the token as for a retry of its own (the same client, tool and
arguments, once); a relayed retry its client gives up is cancelled at the holder too (a
``cancel`` message); a holder whose heartbeat lapsed is gone, and the retry fails saying so.

Redis down is not a reason to let calls through: a call whose limits cannot be counted is
refused (:class:`StateUnavailable`, the limit ``unavailable``); the replica's log names the
server (its password hidden), the caller is not told where it is.

redis-py (the ``redis`` extra of kairox-serve) is imported only when ``[serve.state]`` is set.
"""

from __future__ import annotations

import itertools
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from kairox import KairoxError, redact_text
from kairox.ext import redact_url

from .config import StateConfig

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["GONE", "RedisStore", "StateUnavailable", "open_store"]

#: what a retry relayed to a replica that died gets
GONE = "the replica that held the call is gone (its heartbeat in [serve.state] lapsed); retry the call"
#: seconds one wait on a list blocks (below the client's socket timeout), between heartbeat checks
POLL = 2
#: how long a relayed message or reply waits in Redis for its reader (ms)
MESSAGE_TTL = 120_000

log = logging.getLogger(__name__)

#: one take from a token bucket (KEYS[1]: the bucket's hash; ARGV: rate, per, burst).
#: Returns the seconds to wait as a string (a Lua number would come back cut to an integer).
#: The hash expires once it would have filled again: an absent bucket is a full one.
TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local rate, per, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'stamp')
local tokens = tonumber(v[1])
if tokens == nil then
  tokens = burst
else
  tokens = math.min(burst, tokens + math.max(0, now - tonumber(v[2])) * rate / per)
end
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) * per / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'stamp', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * per / rate * 1000) + 1000)
return tostring(wait)
"""

#: one more call in flight (KEYS[1]: the sorted set of leases; ARGV: most, lease id,
#: lease ms): the expired leases go first. 1: counted, 0: ``most`` already in flight.
ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return 1
"""

#: the leases ARGV[2..] of KEYS[1] live ARGV[1] ms more (those already expired stay gone)
RENEW = """
local t = redis.call('TIME')
local until_ = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', until_, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return 1
"""


#: what a caller is told when Redis fails (where it is and why is for the replica's log)
UNAVAILABLE = "the gateway's shared state ([serve.state]) does not answer; retry later"


class StateUnavailable(KairoxError):
    """The replicas' shared state (Redis) cannot be reached or answered with an error.
    ``str()`` names the server (its password hidden) for the operator; ``public`` is what a
    client may be told (not where the replicas' Redis is)."""

    def __init__(self, message: str, public: str | None = None) -> None:
        super().__init__(message)
        self.public = message if public is None else public


class RedisStore:
    """:class:`~kairox_serve.limits.LimitStore` in Redis, shared by every replica that names
    the same server and ``prefix``. :meth:`run` renews this replica's leases (beside the
    gateway, for as long as it serves)."""

    def __init__(self, client: Redis, where: str, prefix: str = "kairox:", lease: float = 30.0) -> None:
        self.client = client
        #: the server, as it may be shown (its password hidden)
        self.where = where
        self.prefix = prefix
        self.lease_ms = max(1, round(lease * 1000))
        #: this replica, in its lease ids
        self.replica = secrets.token_hex(8)
        self._ids = itertools.count()
        #: this replica's leases by key (a release gives back any one of them: they are alike)
        self._leases: dict[str, list[str]] = {}
        #: the relayed retries this replica is answering, by reply list (a "cancel" names one)
        self._answering: dict[str, anyio.CancelScope] = {}
        self._take = client.register_script(TAKE)
        self._acquire = client.register_script(ACQUIRE)
        self._renew = client.register_script(RENEW)

    def _unavailable(self, exc: BaseException) -> StateUnavailable:
        return StateUnavailable(
            f"the replicas' shared state at {self.where} ([serve.state] redis) cannot be used: "
            f"{redact_text(str(exc), 500) or type(exc).__name__}",
            UNAVAILABLE,
        )

    async def check(self) -> None:
        """Raise :class:`StateUnavailable` unless the server answers."""
        from redis.exceptions import RedisError

        try:
            await self.client.ping()
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None

    async def take(self, key: str, rate: int, per: float, burst: int) -> float:
        from redis.exceptions import RedisError

        try:
            wait = await self._take(keys=[f"{self.prefix}bucket:{key}"], args=[rate, per, burst])
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None
        return float(wait)

    async def acquire(self, key: str, most: int) -> bool:
        from redis.exceptions import RedisError

        lease = f"{self.replica}:{next(self._ids)}"
        try:
            counted = await self._acquire(keys=[f"{self.prefix}flight:{key}"], args=[most, lease, self.lease_ms])
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None
        if counted:
            self._leases.setdefault(key, []).append(lease)
        return bool(counted)

    async def release(self, key: str) -> None:
        from redis.exceptions import RedisError

        leases = self._leases.get(key)
        if not leases:
            return
        lease = leases.pop()
        if not leases:
            del self._leases[key]
        try:
            await self.client.zrem(f"{self.prefix}flight:{key}", lease)
        except (RedisError, OSError) as exc:  # the lease expires by itself
            log.warning("%s", self._unavailable(exc))

    def leases(self) -> int:
        """This replica's calls in flight, counted in Redis."""
        return sum(len(v) for v in self._leases.values())

    async def renew(self) -> None:
        """Every lease of this replica lives ``lease`` seconds more."""
        for key, leases in list(self._leases.items()):
            if leases:
                await self._renew(keys=[f"{self.prefix}flight:{key}"], args=[self.lease_ms, *leases])

    async def run(self) -> None:
        """Beat this replica's heartbeat and renew its leases three times a lease, until
        cancelled. A renewal that fails is logged as an error once an outage (the CLI shows
        errors without ``-v``; the leases may lapse, the principal's slots come back early,
        and retries relayed here fail), and the recovery as a warning."""
        from redis.exceptions import RedisError

        failing = False
        while True:
            try:
                await self.client.set(self._heart(self.replica), "1", px=self.lease_ms)
                await self.renew()
            except (RedisError, OSError) as exc:
                if not failing:
                    log.error("kairox serve: %s; calls are refused until it answers", self._unavailable(exc))
                failing = True
            else:
                if failing:
                    log.warning("kairox serve: the replicas' shared state at %s answers again", self.where)
                failing = False
            await anyio.sleep(self.lease_ms / 3000)

    # -- held calls across replicas ----------------------------------------------------
    def _heart(self, replica: str) -> str:
        return f"{self.prefix}replica:{replica}"

    async def hold(self, token: str, seconds: float) -> None:
        """Name this replica as the holder of ``token`` for ``seconds``."""
        from redis.exceptions import RedisError

        try:
            await self.client.set(f"{self.prefix}held:{token}", self.replica, px=max(1, round(seconds * 1000)))
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None

    async def relay(self, token: str, message: dict[str, Any]) -> dict[str, Any] | None:
        """``message`` (a retry) to the replica that holds ``token``, and its answer; ``None``
        when no other replica holds it. Raises :class:`StateUnavailable` (:data:`GONE` when
        the holder died)."""
        from redis.exceptions import RedisError

        try:
            got_owner = await self.client.get(f"{self.prefix}held:{token}")
            owner = got_owner.decode() if isinstance(got_owner, bytes) else got_owner
            if owner is None or owner == self.replica:
                return None
            heart = self._heart(owner)
            if not await self.client.exists(heart):
                raise StateUnavailable(GONE)
            reply = f"{self.prefix}reply:{self.replica}:{next(self._ids)}"
            inbox = f"{self.prefix}inbox:{owner}"
            await self.client.rpush(inbox, json.dumps({"reply": reply, **message}))
            await self.client.pexpire(inbox, MESSAGE_TTL)
            try:
                while True:  # as long as the holder lives: its round lasts as long as the call needs
                    got = await self.client.blpop([reply], timeout=POLL)
                    if got is not None:
                        answer: dict[str, Any] = json.loads(got[1])
                        return answer
                    if not await self.client.exists(heart):
                        raise StateUnavailable(GONE)
            except anyio.get_cancelled_exc_class():
                # the client gave up its retry: so does the holder's round (which cancels the call)
                with anyio.CancelScope(shield=True), anyio.move_on_after(POLL):
                    await self.client.rpush(inbox, json.dumps({"cancel": reply}))
                raise
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None

    async def serve(self, answer: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]) -> None:
        """Answer the retries other replicas relay to this one (each ``answer(message)`` in a
        task of its own), until cancelled."""
        from redis.exceptions import RedisError

        inbox = f"{self.prefix}inbox:{self.replica}"
        async with anyio.create_task_group() as tg:
            while True:
                try:
                    got = await self.client.blpop([inbox], timeout=POLL)
                except (RedisError, OSError) as exc:
                    log.warning("%s", self._unavailable(exc))
                    await anyio.sleep(POLL)
                    continue
                if got is None:
                    continue
                message = json.loads(got[1])
                if "cancel" in message:
                    scope = self._answering.get(message["cancel"])
                    if scope is not None:
                        scope.cancel()
                else:
                    tg.start_soon(self._answer, answer, message)

    async def _answer(
        self, answer: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]], message: dict[str, Any]
    ) -> None:
        from redis.exceptions import RedisError

        with anyio.CancelScope() as scope:  # cancelled by the relaying replica's "cancel"
            self._answering[message["reply"]] = scope
            try:
                reply = await answer(message)
            finally:
                self._answering.pop(message["reply"], None)
        if scope.cancelled_caught:
            return
        try:
            await self.client.rpush(message["reply"], json.dumps(reply))
            await self.client.pexpire(message["reply"], MESSAGE_TTL)
        except (RedisError, OSError) as exc:  # the relaying replica sees the holder as silent
            log.warning("%s", self._unavailable(exc))

    async def aclose(self) -> None:
        """Stop being a replica: the heartbeat goes first, so a retry another replica relays
        here fails at once (:data:`GONE`) instead of waiting ``lease`` seconds for it to lapse."""
        from redis.exceptions import RedisError

        try:
            with anyio.move_on_after(POLL):
                await self.client.delete(self._heart(self.replica))
        except (RedisError, OSError):  # it lapses by itself
            pass
        await self.client.aclose()


def open_store(config: StateConfig) -> RedisStore:
    """A :class:`RedisStore` on ``config``'s server (no connection is made until it is used)."""
    try:
        from redis.asyncio import Redis
    except ImportError:
        raise StateUnavailable(
            "[serve.state] redis needs redis-py: install kairox-serve[redis] (pip install 'kairox-serve[redis]')"
        ) from None
    where = redact_url(config.redis)
    # bounded: a server that does not answer fails the call after seconds, not at the OS's timeout
    client = Redis.from_url(config.redis, socket_timeout=5.0, socket_connect_timeout=5.0)
    return RedisStore(client, where, config.prefix, config.lease)

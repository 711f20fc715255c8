"""Tool providers' lives: discover, start (all, lazily, or by name), start for one tool, stop.

One map holds each provider's state (:attr:`Supervisor.states`): absent (not started),
``idle`` (its ``discover`` said there is nothing to do in this workspace), ``starting``,
``ready``, ``failed`` (with the error). Providers start in parallel; one that fails or
takes longer than :attr:`Supervisor.start_timeout` is ``failed`` and the others go on.

An idle provider is an ordinary object (providers are cheap to build: they import what
they run with when they start). It starts when :meth:`Supervisor.start` names it, or when a
start of all finds it has servers after all (its ``status()`` lists some: a bundle handed
it servers during discovery).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import anyio
import attrs

from ._events import ProviderFailed, ProviderReady, ProviderStarting, ProviderStopped
from ._types import ServerState
from .protocols import Discovers, ExplainsMissing, StartsFor

if TYPE_CHECKING:
    from ._host import LoadFailure, PluginInfo
    from ._runtime import Runtime
    from ._types import ServerStatus
    from .errors import ConfigError
    from .protocols import ToolProvider

__all__ = ["PROVIDER_START_TIMEOUT", "STOP_TIMEOUT", "ProviderState", "Supervisor"]

logger = logging.getLogger(__name__)

STOP_TIMEOUT = 15.0
#: a provider whose start() takes longer fails (its servers have their own, shorter timeouts)
PROVIDER_START_TIMEOUT = 120.0

#: the start stage the running code is inside (its done event): a provider's start that
#: closes the runtime does not wait for its own stage to end
_inside: contextvars.ContextVar[anyio.Event | None] = contextvars.ContextVar("kairox_start_stage", default=None)


@attrs.frozen
class ProviderState:
    name: str
    owner: str
    #: "idle" (nothing to do here), "starting", "ready", "failed" or "stopped"
    state: str
    error: str = ""


class Supervisor:
    """The tool providers of one runtime, through their lives (the runtime delegates here)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        #: each provider's state; absent: not started (or stopped)
        self.states: dict[str, ProviderState] = {}
        #: how all providers were started: "all", "lazy", or None (not yet, or closing)
        self.mode: Literal["all", "lazy"] | None = None
        self.start_timeout = PROVIDER_START_TIMEOUT
        #: each provider's discovery: running (set when it ends) or ended
        self._discovery: dict[str, anyio.Event] = {}
        #: providers whose start_for ran (lazy activation): stopped at close too
        self._activated: set[str] = set()
        #: the start stages running, each one's done event: closing cancels them and waits
        self._stages: dict[anyio.CancelScope, anyio.Event] = {}
        self._closing = False

    def _owner(self, name: str) -> str:
        return self.runtime.providers.owner_of(name) or ""

    def _fail(self, name: str, error: str) -> None:
        self.states[name] = ProviderState(name, self._owner(name), "failed", error)
        self.runtime.events.publish(ProviderFailed(provider=name, error=error))

    # -- discover -------------------------------------------------------------------

    async def discover(self) -> None:
        """The discover stage: each provider reads what it would run (nothing runs). One that
        raises is ``failed``; one that says there is nothing to do here is ``idle``."""
        for provider in list(self.runtime.providers):
            await self._discover(provider)

    async def _discover(self, provider: ToolProvider) -> None:
        """Run the provider's ``discover`` once; a caller while it runs waits for it. One
        that was cancelled is no discovery: the next caller discovers."""
        name = provider.name
        while (running := self._discovery.get(name)) is not None:
            await running.wait()
            if self._discovery.get(name) is running:
                return  # ended (else it was cancelled, or another caller began one meanwhile)
        if not isinstance(provider, Discovers):
            self._discovery[name] = _ENDED
            return
        done = self._discovery[name] = anyio.Event()
        ended = False
        try:
            found = await provider.discover(self.runtime)
            ended = True
            if found is False:
                self.states[name] = ProviderState(name, self._owner(name), "idle")
        except Exception as exc:
            ended = True
            logger.debug("provider %s failed to discover", name, exc_info=True)
            self._fail(name, f"discovery failed: {type(exc).__name__}: {exc}")
        finally:
            if not ended:  # cancelled
                del self._discovery[name]
            done.set()

    # -- start ----------------------------------------------------------------------

    async def start(self, names: Iterable[str] | None = None, *, lazy: bool = False) -> None:
        """Start providers in parallel (those named, else all); a failing one is recorded and
        the others go on. With ``lazy``, providers that can start for one tool call
        (:class:`~kairox.protocols.StartsFor`) wait for that call. An idle provider starts
        when named, or when it has servers after all (its ``status()`` lists some)."""
        wanted = set(names) if names is not None else None
        if wanted is None:
            self.mode = "lazy" if lazy else "all"
        async with self._stage():
            # one batch: the tools of providers starting together are named as one set
            with self.runtime.tools.batch():
                async with anyio.create_task_group() as tg:
                    for provider in list(self.runtime.providers):
                        if wanted is not None and provider.name not in wanted:
                            continue
                        if lazy and isinstance(provider, StartsFor):
                            continue
                        tg.start_soon(self._start, provider, wanted is not None)

    @contextlib.asynccontextmanager
    async def _stage(self) -> AsyncIterator[None]:
        """A start stage: closing the runtime cancels it and waits for it to end."""
        done = anyio.Event()
        token = _inside.set(done)
        try:
            with anyio.CancelScope() as scope:
                self._stages[scope] = done
                yield
        finally:
            self._stages.pop(scope, None)
            _inside.reset(token)
            done.set()

    async def _start(self, provider: ToolProvider, named: bool) -> None:
        name = provider.name
        await self._discover(provider)
        state = self.states.get(name)
        if state is not None and not (state.state == "idle" and (named or _has_servers(provider))):
            return  # starting, ready or failed already, or idle with nothing to do
        if self._closing:
            return
        # "starting" before the first await: a start running beside this one skips it
        self.states[name] = ProviderState(name, self._owner(name), "starting")
        self.runtime.events.publish(ProviderStarting(provider=name))
        try:
            with anyio.fail_after(self.start_timeout):
                await provider.start(self.runtime)
        except Exception as exc:
            logger.debug("provider %s failed to start", name, exc_info=True)
            if isinstance(exc, TimeoutError):
                error = f"did not finish starting within {self.start_timeout:g} s"
            else:
                error = f"{type(exc).__name__}: {exc}"
            self._fail(name, error)
            return
        self.states[name] = ProviderState(name, self._owner(name), "ready")
        self.runtime.events.publish(ProviderReady(provider=name))

    async def start_for(self, tool: str, arguments: Mapping[str, Any]) -> None:
        """Lazy activation: every provider that can starts what would provide ``tool`` (a start
        stage: closing the runtime cancels it; nothing starts once closing began). A provider
        whose ``start_for`` fails is not marked failed (its other tools may still start): the
        failure is logged, and the call finds no tool, with the provider's ``why_missing``."""

        async def one(provider: ToolProvider) -> None:
            try:
                await self._discover(provider)
                if self._closing or self.states.get(provider.name, _NONE).state == "failed":
                    return
                self._activated.add(provider.name)
                with anyio.fail_after(self.start_timeout):
                    await provider.start_for(tool, dict(arguments))  # type: ignore[attr-defined]
                if provider.name not in self.states:  # activated: status says so, not "stopped"
                    self.states[provider.name] = ProviderState(provider.name, self._owner(provider.name), "ready")
            except Exception:
                logger.warning("provider %s failed starting for %s", provider.name, tool, exc_info=True)

        if self._closing:
            return
        async with self._stage():
            with self.runtime.tools.batch():
                async with anyio.create_task_group() as tg:
                    for provider in list(self.runtime.providers):
                        if isinstance(provider, StartsFor):
                            tg.start_soon(one, provider)

    def why_missing(self, tool: str) -> str | None:
        """Why no tool ``tool`` is registered, as a provider that would own it explains."""
        for provider in list(self.runtime.providers):
            if not isinstance(provider, ExplainsMissing):
                continue
            try:
                reason = provider.why_missing(tool)
            except Exception:  # a provider that fails to answer says nothing
                logger.exception("why_missing of provider %s failed", provider.name)
                continue
            if reason:
                return str(reason)
        return None

    # -- stop -----------------------------------------------------------------------

    async def stop_all(self) -> None:
        """End the start stages still running (cancelled, then awaited: a stop never runs
        beside its start), then stop every started provider, in parallel, each bounded in
        time. Nothing starts from now on."""
        self._closing = True
        self.mode = None
        mine = _inside.get()
        stages = list(self._stages.items())
        for scope, _ in stages:
            scope.cancel()
        for _, done in stages:
            if done is not mine:
                await done.wait()
        # what started, or was activated for a call, or runs servers all the same (an idle
        # provider given one later starts it itself in an "all" runtime)
        started = [
            p
            for p in list(self.runtime.providers)
            if self.states.get(p.name, _NONE).state not in ("", "idle") or p.name in self._activated or _has_servers(p)
        ]

        async def stop(provider: ToolProvider) -> None:
            try:
                with anyio.fail_after(STOP_TIMEOUT):
                    await provider.stop()
            except Exception:
                logger.exception("provider %s failed to stop", provider.name)
            self.states.pop(provider.name, None)
            self._activated.discard(provider.name)
            self.runtime.tools.remove_provider(provider.name)
            self.runtime.events.publish(ProviderStopped(provider=provider.name))

        async with anyio.create_task_group() as tg:
            for provider in started:
                tg.start_soon(stop, provider)

    # -- what it says ---------------------------------------------------------------

    def status(self) -> list[ProviderState]:
        """Each provider's state (``stopped`` when it is not started)."""
        return [
            self.states.get(p.name) or ProviderState(p.name, self._owner(p.name), "stopped")
            for p in self.runtime.providers
        ]

    def failed(self) -> list[ProviderState]:
        return [s for s in self.states.values() if s.state == "failed"]


_NONE = ProviderState("", "", "")


class _Ended:
    """A discovery that ended: waiting for it returns at once."""

    async def wait(self) -> None:
        return None


_ENDED: Any = _Ended()


def _has_servers(provider: ToolProvider) -> bool:
    try:
        return bool(provider.status())
    except Exception:
        return False


@attrs.frozen
class RuntimeStatus:
    """What :meth:`Runtime.status` returns: plugins, load failures, config errors, providers, servers, tool and skill counts."""

    plugins: list[PluginInfo]
    failures: list[LoadFailure]
    config_errors: list[ConfigError]
    providers: list[ProviderState]
    servers: list[ServerStatus]
    tools: int
    skills: int
    skill_errors: list[str] = attrs.field(factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.failures
            or self.config_errors
            or self.skill_errors
            or any(p.state == "failed" for p in self.providers)
            or any(s.state is ServerState.FAILED for s in self.servers)
        )

"""The runtime: plugins + config + registries + policy, and the one way to call a tool."""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union

import anyio
import anyio.abc
import anyio.lowlevel
import attrs

from ._agents import AgentError, AgentPrepared, AgentRegistry, AgentRun, OutputStyleRegistry, scan_definitions
from ._call import ApprovalAnswer, ApprovalRequest, Approver, CallPipeline, authorize, current_session
from ._config import Config, ConfigSection, load_config
from ._contained import Root
from ._context import build_turn_context
from ._dispatch import HookOutcome
from ._events import (
    Event,
    EventBus,
    HookFailed,
    PluginLoadFailed,
    ProviderFailed,
    ProviderReady,
    ProviderStarting,
    ProviderStopped,
    SessionEnded,
    SessionStarted,
    SkillActivated,
)
from ._home import user_home
from ._hooks import HookRegistry
from ._host import LoadFailure, PluginHost, PluginInfo, build_plugin_host
from ._policy import PolicyConfig, PolicyEngine
from ._registrar import Registrar
from ._skill_model import RenderedSkill, SkillDef
from ._skills import SkillRegistry
from ._tools import ProgressCallback, ToolRegistry, ToolResult, ToolSpec
from ._trust import Declared, TrustStore, WorkspaceTrust
from ._types import ServerState, ServerStatus
from .errors import ConfigError, RegistrationError, ToolNotFound

if TYPE_CHECKING:
    from ._tools import Tool
    from .protocols import CatalogSource, ManifestFormat, SkillSource, ToolProvider, Transport

__all__ = [
    "ApprovalAnswer",
    "ApprovalRequest",
    "Approver",
    "Runtime",
    "RuntimeStatus",
    "Session",
    "StartMode",
    "HostCallback",
    "TrustPrompt",
    "TrustRequest",
    "current_session",
]

logger = logging.getLogger(__name__)

STOP_TIMEOUT = 15.0
#: a provider whose start() takes longer fails (its servers have their own, shorter timeouts)
PROVIDER_START_TIMEOUT = 120.0
#: a guard that takes longer blocks the call it guards
HOOK_TIMEOUT = 30.0


#: a host callback for requests an MCP server sends the client: ``sampling_callback``,
#: ``elicitation_callback`` and ``list_roots_callback`` take the MCP SDK's own signatures
#: (``mcp.client.session.SamplingFnT``, ``ElicitationFnT``, ``ListRootsFnT``: an async
#: function of ``(context, params)``, or ``(context)`` for roots, returning the SDK's result
#: type or ``ErrorData``), so a callback written for ``mcp.ClientSession`` works unchanged.
#: The kernel only holds them (it never imports ``mcp``); kairox-mcp calls them.
HostCallback = Callable[..., Awaitable[Any]]


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

#: ``True``: start every provider; ``False``: start none (discover only);
#: ``"lazy"``: start only what a tool call needs (providers with ``start_for`` wait)
StartMode = Union[bool, Literal["lazy"]]


@attrs.frozen
class ProviderState:
    name: str
    owner: str
    #: "starting" | "ready" | "failed" | "stopped", or "idle": dormant, with nothing to do
    #: in this workspace (not built; its first use wakes it, see :meth:`Runtime.active_providers`)
    state: str
    error: str = ""


@attrs.frozen
class RuntimeStatus:
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


#: the start stages the running code is inside (their done events): a start that closes the
#: runtime does not wait for its own stage to end
_inside_stages: contextvars.ContextVar[tuple[anyio.Event, ...]] = contextvars.ContextVar(
    "kairox_inside_stages", default=()
)


def _in_a_task_of(loop: object) -> bool:
    """Whether this code runs in a task of the event loop ``loop`` (a native token), not in a
    callback of it, another thread, or a task of another loop (a thread running its own)."""
    try:
        anyio.get_current_task()
        return anyio.lowlevel.current_token().native_token is loop
    except Exception:
        return False


def _spawner(tg: anyio.abc.TaskGroup) -> Callable[[Callable[[], Awaitable[None]]], None]:
    def spawn(fn: Callable[[], Awaitable[None]]) -> None:
        async def run() -> None:
            await fn()

        tg.start_soon(run)

    return spawn


class Runtime:
    """Everything one agent process needs: open it with :meth:`open`.

    ``async with Runtime.open(workspace=".") as rt:`` loads plugins and config,
    starts every tool provider in parallel and closes them all on exit.
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str] = ".",
        *,
        home: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        approver: Approver | None = None,
        plugins: Iterable[object] = (),
        load_entrypoints: bool = True,
        host: PluginHost | None = None,
        config_documents: list[tuple[str, dict[str, Any]]] | None = None,
        config_files: list[Path] | None = None,
        trusted: bool | None = None,
        sampling_callback: HostCallback | None = None,
        elicitation_callback: HostCallback | None = None,
        list_roots_callback: HostCallback | None = None,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        #: host callbacks for MCP servers' requests (see :data:`HostCallback`): a server is told
        #: the client can sample / elicit exactly when the runtime has that callback
        self.sampling_callback = sampling_callback
        self.elicitation_callback = elicitation_callback
        self.list_roots_callback = list_roots_callback
        self._roots_listeners: list[Callable[[], Awaitable[None]]] = []
        self.env: Mapping[str, str] = dict(os.environ if env is None else env)
        self.home = Path(home).resolve() if home is not None else None
        #: the decide stage: what of the workspace the user's trust covers (``trusted``
        #: True/False overrides the user's trust file, for code that vouches itself)
        self.trust = WorkspaceTrust.load(self.workspace, self.home or user_home(self.env), override=trusted)
        self.approver = approver
        self.events = EventBus()
        self.tools = ToolRegistry(self.events)
        self.hooks = HookRegistry()
        self.skills = SkillRegistry(self.events)
        #: agents (``.claude/agents``, bundles' ``agents/``) and output styles the host can use
        self.agents = AgentRegistry(self.events)
        self.output_styles = OutputStyleRegistry(self.events)
        self.host = host or build_plugin_host(plugins=plugins, load_entrypoints=load_entrypoints, env=self.env)
        #: every hook call: the host's dispatcher, with this runtime's hooks and HookFailed reports
        self.dispatch = self.host.dispatch.bind(hooks=self.hooks, report=self._report)
        if host is not None:
            for plugin in plugins:
                self.host.register(plugin)
        self._config_documents = config_documents
        self._config_files = config_files
        self._tg: anyio.abc.TaskGroup | None = None
        self._provider_states: dict[str, ProviderState] = {}
        #: tools approved for the runtime's life ("allow for the session" without a session)
        self.approved: set[str] = set()
        #: the steps every tool call takes
        self.calls = CallPipeline(self)
        self.dispatch.guard_timeout = HOOK_TIMEOUT
        self._failures_seen = 0
        self._catalog_sources: Registrar[CatalogSource] | None = None
        self._discovered = False
        self._lazy = False
        #: how the providers were started (``start_providers``): None (not yet), "all" or "lazy";
        #: a dormant provider woken later starts as they did
        self._start_mode: str | None = None
        self._closing = False
        #: tool providers with nothing to do in this workspace, neither built nor started (by name)
        self._dormant: dict[str, ToolProvider] = {}
        #: each provider's discovery, once the discover stage began: running (when it ends),
        #: done (True) or failed (False); a provider not in it has not been discovered
        self._discovery: dict[str, anyio.Event | bool] = {}
        #: the start stages in progress: each one's task group, when it ends, and whether a provider
        #: woken meanwhile joins it (start_providers() of all); aclose cancels and awaits them
        self._stages: list[tuple[anyio.abc.TaskGroup, anyio.Event, bool]] = []
        #: woken providers starting after the start stage: their cancel scopes, and when each ends
        self._waking: dict[anyio.CancelScope, anyio.Event] = {}
        #: woken providers whose start is scheduled and has not begun (by name)
        self._scheduled: set[str] = set()
        #: the open runtime's event loop (its native token): what _soon schedules on
        self._loop: Any = None
        #: providers whose start_for ran (lazy activation): aclose stops them too
        self._activated: set[str] = set()
        #: seconds a provider's start() may take before it is marked failed
        self.provider_start_timeout = PROVIDER_START_TIMEOUT
        #: size limits applied to every tool result (see ToolResult.limited)
        self.max_result_text = 200_000
        self.max_result_binary = 20_000_000
        # listening only while some plugin implements kairox_event (events.has_listeners)
        # (the dispatcher's target list itself: non-empty is "someone implements it", and the
        # check, made twice a tool call, runs no Python frame of its own)
        self.events.subscribe(
            self._forward_event,
            active=partial(self.dispatch.implemented, "kairox_event", False),
        )
        self._setup()

    @property
    def hook_timeout(self) -> float | None:
        """Seconds a guard (a ``pre_tool_call`` coroutine) may take before it blocks the call."""
        return self.dispatch.guard_timeout

    @hook_timeout.setter
    def hook_timeout(self, seconds: float | None) -> None:
        self.dispatch.guard_timeout = seconds

    @functools.cached_property
    def readable_roots(self) -> tuple[str, ...]:
        """Folders the user's own ``[files] readable_roots`` lets links from any root reach
        (none while the section does not validate: the stricter reading, reported as a config error)."""
        if "files" not in self.config_sections:
            return ()
        try:
            return tuple(self.config.section("files").readable_roots)
        except ConfigError:
            return ()

    def contained(self, folder: str | os.PathLike[str], *, label: str = "") -> Root:
        """``folder`` as a contained root (:class:`kairox.files.Root`): a skills folder, a
        bundle, the user's agents folder. What it contains is read inside it, or in a folder
        the user's own ``[files] readable_roots`` names."""
        return Root(folder, label=label, also=self.readable_roots)

    @functools.cached_property
    def workspace_root(self) -> Root:
        """The workspace as a contained root: every file the workspace contains or names
        is read through it (:meth:`contained`)."""
        return self.contained(self.workspace, label="the workspace")

    # -- construction ------------------------------------------------------
    def _setup(self) -> None:
        dispatch = self.dispatch
        self.config_sections: Registrar[ConfigSection] = dispatch.register_config_sections(Registrar("config section"))
        self.transports: Registrar[Transport] = dispatch.register_transports(Registrar("transport"))
        self.manifest_formats: Registrar[ManifestFormat] = dispatch.register_manifest_formats(
            Registrar("manifest format")
        )
        self.config: Config = load_config(
            workspace=self.workspace,
            sections=self.config_sections,
            env=self.env,
            home=self.home,
            files=self._config_files,
            documents=self._config_documents,
            trust=self.trust,
            defaults=self.host.distribution.config_documents(),
        )
        try:
            policy_config = self.config.section("policy") if "policy" in self.config_sections else PolicyConfig()
            self.policy = PolicyEngine.build(policy_config, self.workspace)
        except ConfigError as exc:  # a policy that does not validate refuses every call, naming why
            self.policy = PolicyEngine.refusing(PolicyConfig(), self.workspace, str(exc))
        self.providers: Registrar[ToolProvider] = dispatch.register_tool_providers(Registrar("tool provider"), self)
        self._sort_out_dormant()
        self.skill_sources: Registrar[SkillSource] = dispatch.register_skill_sources(Registrar("skill source"), self)
        self._publish_failures()

    def _sort_out_dormant(self) -> None:
        """Build each lazy provider (``adds(..., lazy=...)``) that has something to do here,
        and leave the others dormant, watched: the first use of one builds it and wakes it
        (:meth:`_woken`). One that cannot be built is its plugin's failure, taken out."""
        from .declare import Lazy, is_needed, watch

        for provider in self.providers:
            if type(provider) is not Lazy or provider.resolved:
                continue
            if not is_needed(provider, self):
                self._dormant[provider.name] = provider
                watch(provider, self._woken)
                continue
            try:
                provider.resolve()
            except RegistrationError as exc:
                self._take_out(provider, exc)

    def _take_out(self, provider: Any, error: RegistrationError, *, woken: bool = False) -> None:
        """A provider that cannot be built: its plugin's load failure; the others go on.

        Strict mode (``KAIROX_STRICT_PLUGINS=1``) raises it here when the runtime is made;
        for a provider woken later the use that woke it raises it already."""
        owner = self.providers.owner_of(provider.name) or provider.name
        self.providers.discard({provider.name})
        failure = LoadFailure(owner, *self.host.distribution_of(owner), "kairox_register_tool_providers", str(error))
        try:
            self.host.record(failure, None if woken else error)
        finally:
            self._publish_failures()

    @property
    def start_mode(self) -> Literal["all", "lazy"] | None:
        """How :meth:`start_providers` started the providers: ``"all"``, ``"lazy"`` (only
        what a tool call needs), or ``None`` (not yet; the runtime opened with
        ``start=False``; closing). A provider built after that (a dormant one, woken) is
        started as they were, so one woken into an ``"all"`` runtime may act as started
        (kairox-mcp's ``add_server`` starts the server at once) before its ``start`` runs."""
        return self._start_mode  # type: ignore[return-value]

    def active_providers(self) -> list[ToolProvider]:
        """The tool providers but the dormant ones: those registered lazily with ``needed``
        (:func:`kairox.declare.adds`) that have nothing to do in this workspace and that
        nothing has used yet. Going through these wakes none; asking a dormant provider
        for anything (``runtime.providers.get(name).status``) builds it and wakes it."""
        dormant = self._dormant
        if not dormant:
            return list(self.providers)
        return [p for p in self.providers if p.name not in dormant]

    def _woken(self, provider: Any, error: RegistrationError | None) -> None:
        """A dormant provider was used (from any thread): it is built (else taken out,
        ``error``). What follows is decided on the loop's thread (:meth:`_wake`), one step
        with the start stage and closing, so a thread's wake cannot slip between them."""
        if self._loop is not None and not _in_a_task_of(self._loop):
            try:
                self._soon(partial(self._wake, provider, error))
                return
            except RuntimeError:  # the loop is closed: nothing runs on it any more
                pass
        self._wake(provider, error)

    def _wake(self, provider: Any, error: RegistrationError | None) -> None:
        """On the loop's thread (or with no loop): a woken provider leaves the dormant set
        and starts as the others did, if they did; one that cannot be built is taken out."""
        if error is not None:
            self._dormant.pop(provider.name, None)
            self._take_out(provider, error, woken=True)
            return
        mode = self._start_mode
        starts = not (mode is None or self._closing or self._tg is None or provider.name in self._provider_states)
        if starts and mode == "lazy" and getattr(provider, "start_for", None) is not None:
            starts = False  # a lazy runtime starts it for the call that needs it
        self._dormant.pop(provider.name, None)
        if not starts:
            return
        # "starting" now: a start_providers() before the task runs does not start it again
        owner = self.providers.owner_of(provider.name) or ""
        self._provider_states[provider.name] = ProviderState(provider.name, owner, "starting")
        name = f"kairox: start woken provider {provider.name}"
        for group, _, joins in reversed(self._stages):  # a start stage runs: start_providers waits for it
            if not joins:
                continue
            try:
                group.start_soon(self._start_provider, provider, name=name)
                return
            except RuntimeError:  # that stage is ending: the runtime's own group then
                continue
        self._scheduled.add(provider.name)
        assert self._tg is not None
        self._tg.start_soon(self._start_woken, provider, name=name)

    def _soon(self, fn: Callable[[], object]) -> None:
        """Run ``fn()`` on the runtime's event loop soon, from a callback of the loop or
        another thread (the loop's own thread-safe scheduling)."""
        native = self._loop
        schedule = getattr(native, "call_soon_threadsafe", None) or native.run_sync_soon
        schedule(fn)

    async def _start_woken(self, provider: ToolProvider) -> None:
        """Start a provider woken once the start stage is over; :meth:`aclose` cancels it and
        waits for it before stopping the providers, so a stop never runs beside its start,
        and one whose start had not begun when the runtime began closing never starts."""
        self._scheduled.discard(provider.name)
        if self._closing:
            self._provider_states.pop(provider.name, None)
            return
        done = anyio.Event()
        with anyio.CancelScope() as scope:
            self._waking[scope] = done
            try:
                await self._start_provider(provider)
            finally:
                del self._waking[scope]
                done.set()

    def _publish_failures(self) -> None:
        for failure in self.host.failures[self._failures_seen :]:
            self.events.publish(PluginLoadFailed(plugin=failure.plugin, stage=failure.stage, error=failure.error))
        self._failures_seen = len(self.host.failures)

    def catalog_sources(self) -> Registrar[CatalogSource]:
        """Catalog sources, collected on first use."""
        if self._catalog_sources is None:
            self._catalog_sources = self.dispatch.register_catalog_sources(Registrar("catalog source"), self)
            self._publish_failures()
        return self._catalog_sources

    def _forward_event(self, event: Event) -> None:
        for outcome in self.dispatch.event(event, self):
            if inspect.isawaitable(outcome.value):  # an async implementation runs as a task, like async subscribers
                self.events.run_async(outcome.value)

    # -- lifetime ----------------------------------------------------------
    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        workspace: str | os.PathLike[str] = ".",
        *,
        start: StartMode = True,
        trust_prompt: TrustPrompt | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Runtime]:
        """Open a runtime: discover, decide, activate.

        Discovery reads every source; nothing runs. Then, when ``start`` would
        activate something and the workspace declares items the user's trust does
        not cover, ``trust_prompt`` (if given) is asked once; a yes records the
        trust and the runtime is discovered again under it. Activation follows
        ``start`` (:data:`StartMode`): everything, nothing, or ``"lazy"`` (what a
        tool call needs, when it needs it).

        The other keywords are the constructor's; among them the host callbacks for MCP
        servers' requests, with the MCP SDK's signatures (:data:`HostCallback`):
        ``sampling_callback``, ``elicitation_callback``, ``list_roots_callback``.
        """
        rt = cls(workspace, **kwargs)
        if start is not False and trust_prompt is not None:
            rt = await rt._ask_trust(trust_prompt, workspace, kwargs)
        body_error: Exception | None = None
        async with anyio.create_task_group() as tg:
            rt._tg = tg
            rt._loop = anyio.lowlevel.current_token().native_token
            rt.events.bind(_spawner(tg))
            try:
                await rt.discover()
                await rt.skills.scan(rt.skill_sources, rt)
                await scan_definitions(rt)
                if start == "lazy":
                    rt._lazy = True
                    await rt.start_providers(lazy=True)
                elif start:
                    await rt.start_providers()
                try:
                    yield rt
                except Exception as exc:  # re-raised below, outside the task group,
                    body_error = exc  # so the caller sees it as is, not in an ExceptionGroup
            finally:
                with anyio.CancelScope(shield=True):
                    await rt.aclose()
                tg.cancel_scope.cancel()
                rt.events.bind(None)
                rt._tg = None
                rt._loop = None
        if body_error is not None:
            raise body_error

    async def _ask_trust(self, prompt: TrustPrompt, workspace: Any, kwargs: dict[str, Any]) -> Runtime:
        """Ask ``prompt`` about the workspace's pending items; on a yes, trust and rediscover."""
        await self.discover()  # discovery starts nothing (runtime.spawn is refused here)
        pending = self.trust.askable  # a refused item stays refused whatever the answer: not asked about
        if not pending:
            return self
        request = TrustRequest(
            self.workspace, tuple(pending), tuple(self.trust.declared.values()), changed=self.trust.trusted
        )
        answer = prompt(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is not True:
            return self
        self.trust_workspace()
        fresh = {**kwargs, "host": self.host, "plugins": ()}
        return type(self)(workspace, **fresh)

    def trust_workspace(self) -> None:
        """Record the user's trust of everything the workspace declares now (``kairox trust``);
        a refused item is not recorded (:meth:`TrustStore.trust`)."""
        TrustStore(self.home or user_home(self.env)).trust(self.workspace, self.trust.declared.values())

    async def discover(self) -> None:
        """The discover stage: each provider with ``discover`` reads what it would run
        (nothing runs). One that raises is recorded as failed; the others go on."""
        if self._discovered:
            return
        self._discovered = True
        while True:  # a provider woken by another's discovery (a bundle's servers) discovers too
            pending = [p for p in self.active_providers() if p.name not in self._discovery]
            if not pending:
                return
            for provider in pending:
                await self._discover_one(provider)

    async def _discover_one(self, provider: ToolProvider) -> bool:
        """Run the provider's ``discover`` (if it has one) once; False when it failed
        (recorded). A caller while it runs waits for it and has its answer; one that was
        cancelled is no discovery (the next caller discovers)."""
        name = provider.name
        entry = self._discovery.get(name)
        while isinstance(entry, anyio.Event):
            await entry.wait()
            entry = self._discovery.get(name)
        if entry is not None:
            return entry
        fn = getattr(provider, "discover", None)
        if fn is None:
            self._discovery[name] = True
            return True
        done = self._discovery[name] = anyio.Event()
        result: bool | None = None
        try:
            await fn(self)
            result = True
        except Exception as exc:
            result = False
            logger.debug("provider %s failed to discover", name, exc_info=True)
            error = f"discovery failed: {type(exc).__name__}: {exc}"
            owner = self.providers.owner_of(name) or ""
            self._provider_states[name] = ProviderState(name, owner, "failed", error)
            self.events.publish(ProviderFailed(provider=name, error=error))
        finally:
            if result is None:  # cancelled
                del self._discovery[name]
            else:
                self._discovery[name] = result
            done.set()
        return result

    async def _discovered_too(self, provider: ToolProvider) -> bool:
        """A provider woken since the discover stage discovers first (False: that discovery
        failed); one whose discovery ended before, well or not, goes on as it always did."""
        if not self._discovered or isinstance(self._discovery.get(provider.name), bool):
            return True
        return await self._discover_one(provider)

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None:
        """Run ``fn(*args)`` as a task that lives as long as the runtime.

        The task is cancelled when the runtime closes. If it raises, the error is
        logged and the runtime goes on (one plugin's task never takes it down).
        """
        if self._tg is None:
            raise RuntimeError("the runtime is not open (use `async with Runtime.open(...)`)")

        async def guarded() -> None:
            try:
                await fn(*args)
            except Exception:
                logger.exception("background task %s failed", name or getattr(fn, "__qualname__", fn))

        self._tg.start_soon(guarded, name=name or getattr(fn, "__qualname__", None))

    async def start_providers(self, names: Iterable[str] | None = None, *, lazy: bool = False) -> None:
        """Start providers in parallel; a failing one is recorded and the others go on.

        With ``lazy``, providers that can start part of themselves for a tool call
        (``start_for``) wait for that call."""
        wanted = set(names) if names is not None else None
        if wanted is None:  # a dormant provider woken from now on starts as these do
            self._start_mode = "lazy" if lazy else "all"
        # one batch: the tools of providers starting together are named as one set
        with self.tools.batch():
            await self._start_some(wanted, lazy)

    async def _start_some(self, wanted: set[str] | None, lazy: bool) -> None:
        done = anyio.Event()
        stage: tuple[anyio.abc.TaskGroup, anyio.Event, bool] | None = None
        inside = _inside_stages.set((*_inside_stages.get(), done))  # the tasks started here inherit it
        try:
            async with anyio.create_task_group() as tg:
                # a provider woken while all start starts with them; aclose cancels and awaits a stage
                stage = (tg, done, wanted is None)
                self._stages.append(stage)
                for provider in self.active_providers():
                    if wanted is not None and provider.name not in wanted:
                        continue
                    if lazy and getattr(provider, "start_for", None) is not None:
                        continue
                    if self._provider_states.get(provider.name, None) is not None:
                        continue  # started (or starting, or failed discovering) already
                    # "starting" now: a start_providers() running beside this one skips it
                    owner = self.providers.owner_of(provider.name) or ""
                    self._provider_states[provider.name] = ProviderState(provider.name, owner, "starting")
                    tg.start_soon(self._start_provider, provider)
        finally:
            _inside_stages.reset(inside)
            if stage is not None:
                self._stages.remove(stage)
            done.set()

    def _providers_for(self, tool: str) -> list[ToolProvider]:
        """The providers to ask about the tool ``tool``: the active ones, and the dormant
        ones whose name starts it (``lsp`` for ``lsp.definition``), which the asking wakes."""
        if not self._dormant:
            return list(self.providers)
        return [
            p for p in self.providers if p.name not in self._dormant or tool.startswith((f"{p.name}.", f"{p.name}_"))
        ]

    async def _start_for(self, name: str, arguments: Mapping[str, Any]) -> None:
        """Lazy activation: every provider with ``start_for`` starts what would provide ``name``."""

        async def one(provider: ToolProvider) -> None:
            try:
                fn = getattr(provider, "start_for", None)
                if fn is None:
                    return
                if not await self._discovered_too(provider):
                    return
                self._activated.add(provider.name)
                with anyio.fail_after(self.provider_start_timeout):
                    await fn(name, dict(arguments))
            except Exception:
                logger.warning("provider %s failed starting for %s", provider.name, name, exc_info=True)

        with self.tools.batch():
            async with anyio.create_task_group() as tg:
                for provider in self._providers_for(name):
                    tg.start_soon(one, provider)

    def why_missing(self, name: str) -> str | None:
        """Why no tool ``name`` is registered, as a provider that would own it explains
        (a dormant provider whose name starts the tool's is asked too, which wakes it: "no
        language server is configured" for ``lsp.definition`` is worth saying)."""
        for provider in self._providers_for(name):
            try:
                fn = getattr(provider, "why_missing", None)
                reason = None if fn is None else fn(name)
            except Exception:  # a provider that fails to answer (or to be built) says nothing
                logger.exception("why_missing of provider %s failed", provider.name)
                continue
            if reason:
                return str(reason)
        return None

    async def resolve_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> Tool:
        """The tool ``name``, started on demand when the runtime is lazy; a missing tool
        raises :class:`~kairox.ToolNotFound` with the owner's reason when one explains."""
        try:
            return self.tools.resolve(name)
        except ToolNotFound as exc:
            missing = exc
        if self._lazy and self._tg is not None:
            await self._start_for(name, arguments or {})
            try:
                return self.tools.resolve(name)
            except ToolNotFound as exc:
                missing = exc
        reason = self.why_missing(name)
        if reason:
            raise ToolNotFound(f"{name}: {reason}") from None
        broken = self.broken_parts()
        if broken:  # the tool may be one of theirs: say so rather than only "no tool named"
            raise ToolNotFound(f"{missing}; it may belong to what failed: {'; '.join(broken)}") from None
        raise missing

    def broken_parts(self) -> list[str]:
        """What failed that may have provided tools, one line each: plugin packages that
        did not load or register, and tool providers that failed to start."""
        lines = [f"plugin {f.distribution or f.plugin} ({f.stage}): {f.error}" for f in self.host.failures]
        for state in self._provider_states.values():
            if state.state == "failed":
                lines.append(f"tool provider {state.name} of {state.owner or '?'}: {state.error}")
        return lines

    async def _start_provider(self, provider: ToolProvider) -> None:
        try:
            discovered = await self._discovered_too(provider)
        except BaseException:  # cancelled before it began to start: not starting (a later stage may)
            state = self._provider_states.get(provider.name)
            if state is not None and state.state == "starting":
                del self._provider_states[provider.name]
            raise
        if not discovered:
            return
        owner = self.providers.owner_of(provider.name) or ""
        self._provider_states[provider.name] = ProviderState(provider.name, owner, "starting")
        self.events.publish(ProviderStarting(provider=provider.name))
        try:
            with anyio.fail_after(self.provider_start_timeout):
                await provider.start(self)
        except Exception as exc:
            logger.debug("provider %s failed to start", provider.name, exc_info=True)
            if isinstance(exc, TimeoutError):
                error = f"did not finish starting within {self.provider_start_timeout:g} s"
            else:
                error = f"{type(exc).__name__}: {exc}"
            self._provider_states[provider.name] = ProviderState(provider.name, owner, "failed", error)
            self.events.publish(ProviderFailed(provider=provider.name, error=error))
            return
        self._provider_states[provider.name] = ProviderState(provider.name, owner, "ready")
        self.events.publish(ProviderReady(provider=provider.name))

    async def aclose(self) -> None:
        """Stop every started provider (in parallel, each bounded in time)."""
        self._closing = True  # a provider woken from now on is not started
        self._start_mode = None
        stages = list(self._stages)  # start stages still running (a spawned start_providers): ended first
        for group, _, _ in stages:
            group.cancel_scope.cancel()
        mine = _inside_stages.get()  # (a provider's start that closes the runtime: not its own stage)
        for _, done, _ in stages:
            if done not in mine:
                await done.wait()
        waking = list(self._waking.items())  # woken providers still starting: cancelled, then stopped
        for scope, _ in waking:
            scope.cancel()
        for _, done in waking:
            await done.wait()
        for name in list(self._scheduled):  # woken, their start not begun: it will not (_start_woken)
            self._provider_states.pop(name, None)
        started = [p for p in self.active_providers() if p.name in self._provider_states or p.name in self._activated]

        async def stop(provider: ToolProvider) -> None:
            try:
                with anyio.fail_after(STOP_TIMEOUT):
                    await provider.stop()
            except Exception:
                logger.exception("provider %s failed to stop", provider.name)
            self._provider_states.pop(provider.name, None)
            self._activated.discard(provider.name)
            self.tools.remove_provider(provider.name)
            self.events.publish(ProviderStopped(provider=provider.name))

        async with anyio.create_task_group() as tg:
            for provider in started:
                tg.start_soon(stop, provider)

    # -- tool calls -----------------------------------------------------------
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        session: Session | None = None,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        approver: Approver | None = None,
    ) -> ToolResult:
        """Call a tool by canonical id or exported name, through validation, policy and hooks
        (the steps are :class:`kairox._call.CallPipeline`'s).

        Raises :class:`~kairox.ToolNotFound`, :class:`~kairox.PolicyDenied` (the
        policy, a hook or the user refused) or :class:`~kairox.ToolError` (the
        tool failed or timed out). Arguments that do not fit the tool's input schema,
        and a tool that ran and reported an error, return a result with ``is_error=True``.
        """
        return await self.calls.call(
            name, arguments, session=session, timeout=timeout, progress=progress, approver=approver
        )

    async def authorize(
        self,
        spec: ToolSpec,
        args: Mapping[str, Any],
        *,
        session: Session | None = None,
        approver: Approver | None = None,
        reason: str | None = None,
    ) -> tuple[Path, ...] | None:
        """The one approval flow: the policy decides ``spec`` with ``args``; on *ask*, the
        approver (``approver``, else the session's, else the runtime's) is asked once, and an
        "allow for the session" answer is remembered. Raises :class:`PolicyDenied` when the
        policy denies, nobody can be asked, or the answer is anything but an explicit allow.

        Every tool call passes here; so do plugins' own privileged acts (an install writing
        a config file describes itself as a :class:`ToolSpec` and calls this).

        Returns the roots the call's writes must stay inside when the policy allowed it
        only because its targets resolved inside them (:attr:`ToolContext.confined_to`).

        ``reason`` (say, "server X wants to ask the model") is what the approver is told
        instead of the policy's own reason."""
        return await authorize(self, spec, args, session=session, approver=approver, reason=reason)

    def _report(self, outcome: HookOutcome) -> None:
        """A lifecycle hook failed (the dispatcher calls this after the hook's implementations ran)."""
        error = outcome.error
        self.events.publish(
            HookFailed(hook=outcome.hook, plugin=outcome.source, error=f"{type(error).__name__}: {error}")
        )

    # -- sessions ---------------------------------------------------------------
    @asynccontextmanager
    async def session(
        self,
        *,
        approver: Approver | None = None,
        sampling_callback: HostCallback | None = None,
        elicitation_callback: HostCallback | None = None,
        list_roots_callback: HostCallback | None = None,
        output_style: str | None = None,
    ) -> AsyncIterator[Session]:
        """``async with rt.session() as s``: start/end hooks fire exactly once each.

        The host callbacks (:data:`HostCallback`) answer what an MCP server asks while a
        tool call of this session runs, in place of the runtime's. ``output_style`` names
        the output style of this session in place of ``[instructions] output_style``
        (``"default"``: none); a name that is no style raises :class:`~kairox.ConfigError`."""
        if output_style is not None:
            self.output_styles.ensure_scanned(self)
            self.output_styles.selected(self.config, output_style)
        session = Session(
            self,
            approver=approver,
            sampling_callback=sampling_callback,
            elicitation_callback=elicitation_callback,
            list_roots_callback=list_roots_callback,
            output_style=output_style,
        )
        await self.dispatch.session_start(session)
        self.events.publish(SessionStarted(session_id=session.id))
        reason = "closed"
        try:
            yield session
        except anyio.get_cancelled_exc_class():
            reason = "cancelled"
            raise
        except BaseException:
            reason = "error"
            raise
        finally:
            with anyio.CancelScope(shield=True):
                session.closed = True
                await self.dispatch.session_end(session, reason)
                self.skills.end_session(session.id)
                self.events.publish(SessionEnded(session_id=session.id, reason=reason))

    # -- roots -------------------------------------------------------------------
    def roots(self) -> tuple[Path, ...]:
        """What MCP servers are told the client's roots are (``roots/list``, unless a
        ``list_roots_callback`` answers): the workspace, then the configured writable roots
        (``[policy] writable_roots``; not the temporary directory ``include_temp_dir`` adds)."""
        configured = PolicyEngine.build(attrs.evolve(self.policy.config, include_temp_dir=False), self.workspace)
        return tuple(dict.fromkeys([self.workspace, *configured.roots]))

    def on_roots_changed(self, listener: Callable[[], Awaitable[None]]) -> Callable[[], None]:
        """Call ``listener`` whenever :meth:`roots_changed` is; returns a function that removes it.
        (kairox-mcp sends each ready server ``notifications/roots/list_changed``.)"""
        self._roots_listeners.append(listener)

        def remove() -> None:
            if listener in self._roots_listeners:
                self._roots_listeners.remove(listener)

        return remove

    async def roots_changed(self) -> None:
        """Tell every listener the roots changed: call it after changing what
        :meth:`roots` or a ``list_roots_callback`` returns. A failing listener is logged."""
        for listener in list(self._roots_listeners):
            try:
                await listener()
            except Exception:
                logger.exception("a roots listener failed")

    # -- status ------------------------------------------------------------------
    def tool_row(self, spec: ToolSpec) -> dict[str, Any]:
        """A tool as a listing shows it (``kairox tools list``, the dashboard's Tools page):
        what it is, where it comes from, and what the policy decides of it
        (:meth:`PolicyEngine.summary`)."""
        return {
            "id": spec.id,
            "exported_name": spec.exported_name,
            "provider": spec.provider,
            "domain": spec.domain.value,
            "capability": spec.capability.value,
            "description": spec.description,
            **self.policy.summary(spec),
        }

    def status(self) -> RuntimeStatus:
        servers: list[ServerStatus] = []
        for provider in self.active_providers():
            status = getattr(provider, "status", None)
            if status is None:
                continue
            try:
                servers.extend(status())
            except Exception:
                logger.exception("status() of provider %s failed", provider.name)
        return RuntimeStatus(
            plugins=self.host.plugins(),
            failures=list(self.host.failures),
            config_errors=list(self.config.errors),
            providers=[
                self._provider_states.get(p.name)
                or ProviderState(
                    p.name, self.providers.owner_of(p.name) or "", "idle" if p.name in self._dormant else "stopped"
                )
                for p in self.providers
            ],
            servers=servers,
            tools=len(self.tools),
            skills=len(self.skills),
            skill_errors=[str(e) for e in self.skills.errors],
        )


class Session:
    """One conversation: its approvals, state and session-scoped skills end with it."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        approver: Approver | None = None,
        sampling_callback: HostCallback | None = None,
        elicitation_callback: HostCallback | None = None,
        list_roots_callback: HostCallback | None = None,
        output_style: str | None = None,
    ) -> None:
        self.id = uuid.uuid4().hex[:12]
        #: this session's output style (``None``: ``[instructions] output_style``)
        self.output_style = output_style
        self.runtime = runtime
        self.approver = approver
        self.sampling_callback = sampling_callback
        self.elicitation_callback = elicitation_callback
        self.list_roots_callback = list_roots_callback
        self.approved: set[str] = set()
        self.state: dict[str, Any] = {}
        self.activated: list[RenderedSkill] = []
        self.closed = False

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, **kwargs: Any) -> ToolResult:
        kwargs.setdefault("approver", self.approver)
        return await self.runtime.call_tool(name, arguments, session=self, **kwargs)

    #: ``await session.turn_context(prompt, *, tool_budget=None, max_skills=5, cwd=None,
    #: skill_budget=SKILL_BUDGET)``: what the model should see this turn (see
    #: :func:`kairox._context.build_turn_context`)
    turn_context = build_turn_context

    def add_skill(self, skill: SkillDef) -> SkillDef:
        """Add a session-scoped skill: it shadows workspace and user skills of the
        same name, and is gone when the session ends."""
        return self.runtime.skills.add_session_skill(self.id, skill)

    async def activate_skill(self, name: str, arguments: Mapping[str, Any] | None = None) -> RenderedSkill:
        """Render a skill for this session: it must be enabled, every tool it lists
        registered, its arguments valid (:class:`~kairox.SkillError` otherwise).
        The result carries the prompt text, the arguments, the tools and the
        pinned ``model``; it is recorded in :attr:`activated`."""
        rendered = self.runtime.skills.prepare(name, arguments, tools=self.runtime.tools, session_id=self.id)
        self.activated.append(rendered)
        self.runtime.events.publish(SkillActivated(session_id=self.id, skill=rendered.name, model=rendered.model))
        return rendered

    def agent(self, name: str, *, strict: bool = False) -> AgentRun:
        """The definition of agent ``name`` to run: its prompt, pinned model and the registered
        tools it may use (every tool when it lists none). Tools it lists that are not registered
        are in ``unknown_tools`` (``strict``: an :class:`~kairox.AgentError` naming them).
        An unknown agent is an :class:`~kairox.AgentError` naming the close match."""
        self.runtime.agents.ensure_scanned(self.runtime)
        run = self.runtime.agents.prepare(name, self.runtime.tools)
        if strict and run.unknown_tools:
            raise AgentError(
                f"agent {run.name} lists tools that are not registered: {', '.join(run.unknown_tools)}",
                file=run.agent.file,
                field="tools",
            )
        self.runtime.events.publish(
            AgentPrepared(session_id=self.id, agent=run.name, model=run.model, unknown_tools=run.unknown_tools)
        )
        return run

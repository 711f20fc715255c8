"""The runtime: plugins + config + registries + policy, and the one way to call a tool."""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union

import anyio
import anyio.abc
import attrs

from ._call import ApprovalAnswer, ApprovalRequest, Approver, CallPipeline, authorize, current_session
from ._config import Config, ConfigSection
from ._config_load import load_config
from ._contained import Root
from ._dispatch import HookOutcome
from ._events import (
    Event,
    EventBus,
    HookFailed,
    PluginLoadFailed,
    SessionEnded,
    SessionStarted,
    Subscriber,
)
from ._home import user_home
from ._hooks import HookRegistry
from ._host import PluginHost, build_plugin_host
from ._policy import PolicyConfig, PolicyEngine
from ._registrar import Registrar
from ._skills import SkillRegistry
from ._supervisor import RuntimeStatus, Supervisor
from ._tool_registry import ToolRegistry
from ._tools import ProgressCallback, ToolResult, ToolSpec
from ._trust import TrustPrompt, TrustStore, WorkspaceTrust, ask_trust
from ._types import ServerStatus
from .errors import ConfigError, ToolNotFound

if TYPE_CHECKING:
    from ._session import HostCallback, Session
    from ._tools import Tool
    from .protocols import CatalogSource, ManifestFormat, SkillSource, ToolProvider

__all__ = [
    "ApprovalAnswer",
    "ApprovalRequest",
    "Approver",
    "Runtime",
    "StartMode",
    "current_session",
]

logger = logging.getLogger(__name__)

#: a guard that takes longer blocks the call it guards
HOOK_TIMEOUT = 30.0

T = TypeVar("T")


#: ``True``: start every provider; ``False``: start none (discover only);
#: ``"lazy"``: start only what a tool call needs (providers with ``start_for`` wait)
StartMode = Union[bool, Literal["lazy"]]
#: config given as data (``Runtime.open(config_documents=[...])``): the name errors and
#: ``config show`` cite for it (a path, or any label), and its table as TOML parses to
ConfigDocument = tuple[str, Mapping[str, Any]]


def _spawner(tg: anyio.abc.TaskGroup) -> Callable[[Callable[[], Awaitable[None]]], None]:
    def spawn(fn: Callable[[], Awaitable[None]]) -> None:
        async def run() -> None:
            await fn()

        tg.start_soon(run)

    return spawn


class Runtime:
    """Everything one agent process needs: open it with :meth:`open`.

    ``async with Runtime.open(workspace=".") as rt:`` loads plugins and config, runs each
    tool provider's discovery, starts the providers with something to do in parallel
    (``start="lazy"``: only those that cannot start for one call; ``start=False``: none) and
    stops every started one on exit.
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
        config_documents: Sequence[ConfigDocument] | None = None,
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
        self.host = host or build_plugin_host(plugins=plugins, load_entrypoints=load_entrypoints, env=self.env)
        #: every hook call: the host's dispatcher, with this runtime's hooks and HookFailed reports
        self.dispatch = self.host.dispatch.bind(hooks=self.hooks, report=self._report)
        if host is not None:
            for plugin in plugins:
                self.host.register(plugin)
        self._config_documents = config_documents
        self._config_files = config_files
        self._tg: anyio.abc.TaskGroup | None = None
        #: tools approved for the runtime's life ("allow for the session" without a session)
        self.approved: set[str] = set()
        #: the steps every tool call takes
        self.calls = CallPipeline(self)
        self.dispatch.guard_timeout = HOOK_TIMEOUT
        self._failures_seen = 0
        self._catalog_sources: Registrar[CatalogSource] | None = None
        self._discovered = False
        #: the tool providers' lives: discover, start, start for a call, stop
        self.supervisor = Supervisor(self)
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

    @property
    def provider_start_timeout(self) -> float:
        """Seconds a provider's ``start()`` may take before it is marked failed."""
        return self.supervisor.start_timeout

    @provider_start_timeout.setter
    def provider_start_timeout(self, seconds: float) -> None:
        self.supervisor.start_timeout = seconds

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
        self.manifest_formats: Registrar[ManifestFormat] = dispatch.register_manifest_formats(
            Registrar("manifest format")
        )
        self.config: Config = load_config(
            workspace=self.workspace,
            sections=self.config_sections,
            env=self.env,
            home=self.home,
            files=self._config_files,
            documents=[(f, dict(t)) for f, t in self._config_documents] if self._config_documents else None,
            trust=self.trust,
            defaults=self.host.distribution.config_documents(),
            floors=self.host.distribution.floor_documents(),
        )
        try:
            policy_config = self.config.section("policy") if "policy" in self.config_sections else PolicyConfig()
            self.policy = PolicyEngine.build(policy_config, self.workspace)
        except ConfigError as exc:  # a policy that does not validate refuses every call, naming why
            self.policy = PolicyEngine.refusing(PolicyConfig(), self.workspace, str(exc))
        self.providers: Registrar[ToolProvider] = dispatch.register_tool_providers(Registrar("tool provider"), self)
        self.skill_sources: Registrar[SkillSource] = dispatch.register_skill_sources(Registrar("skill source"), self)
        self._publish_failures()

    @property
    def start_mode(self) -> Literal["all", "lazy"] | None:
        """How :meth:`start_providers` started the providers: ``"all"``, ``"lazy"`` (only
        what a tool call needs), or ``None`` (not yet; the runtime opened with
        ``start=False``; closing). A provider that gains work later (kairox-mcp's
        ``add_server``) starts it at once in an ``"all"`` runtime."""
        return self.supervisor.mode

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

    def register_owned(self, hook: str, registrar: Registrar[T], **kwargs: Any) -> Registrar[T]:
        """Call ``hook``, a registration hook a plugin declared (``kairox_addhooks``), into
        ``registrar`` as the kernel calls its own (:meth:`Dispatcher.register_owned`), and
        publish a :class:`~kairox.PluginLoadFailed` for each implementation that failed."""
        try:
            return self.dispatch.register_owned(hook, registrar, **kwargs)
        finally:
            self._publish_failures()

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
        approver: Approver | None = None,
        on_event: Subscriber | None = None,
        trusted: bool | None = None,
        config_documents: Sequence[ConfigDocument] | None = None,
        config_files: list[Path] | None = None,
        home: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        plugins: Iterable[object] = (),
        load_entrypoints: bool = True,
        host: PluginHost | None = None,
        sampling_callback: HostCallback | None = None,
        elicitation_callback: HostCallback | None = None,
        list_roots_callback: HostCallback | None = None,
    ) -> AsyncIterator[Runtime]:
        """Open a runtime: discover, decide, activate.

        Discovery reads every source; nothing runs. Then, when ``start`` would
        activate something and the workspace declares items the user's trust does
        not cover, ``trust_prompt`` (if given) is asked once; a yes records the
        trust and the runtime is discovered again under it. Activation follows
        ``start`` (:data:`StartMode`): everything, nothing, or ``"lazy"`` (what a
        tool call needs, when it needs it).

        - ``approver``: asked when the policy says *ask* and the call's session has none.
        - ``on_event``: subscribed to :attr:`events` before discovery, so it sees the start-up
          (``ProviderStarting``/``ProviderReady``/``ProviderFailed``, each server's events).
        - ``trusted``: ``True``/``False`` overrides the user's trust file for this workspace
          (code that vouches for it, or refuses it); ``None`` reads the file.
        - ``config_documents``: config given as data instead of files, each a
          :data:`ConfigDocument` ``(file, table)``: the name errors and ``config show`` cite,
          and the parsed TOML table, read as a user config file (never as the workspace's).
          ``config_files``: user config files read instead of ``$KAIROX_HOME/kairox.toml``.
        - ``home``: the kairox home (default ``$KAIROX_HOME``, else ``~/.kairox``); ``env``: the
          environment config expands and child processes inherit (default ``os.environ``).
        - ``plugins``: plugin objects registered besides the installed ones (``load_entrypoints``
          False: instead of them); ``host``: a plugin host built already.
        - ``sampling_callback``, ``elicitation_callback``, ``list_roots_callback``: the host's
          answers to MCP servers' requests, with the MCP SDK's signatures (:data:`HostCallback`).
        """
        kwargs: dict[str, Any] = {
            "home": home,
            "env": env,
            "approver": approver,
            "plugins": plugins,
            "load_entrypoints": load_entrypoints,
            "host": host,
            "config_documents": config_documents,
            "config_files": config_files,
            "trusted": trusted,
            "sampling_callback": sampling_callback,
            "elicitation_callback": elicitation_callback,
            "list_roots_callback": list_roots_callback,
        }
        rt = cls(workspace, **kwargs)
        if start is not False and trust_prompt is not None:
            rt = await rt._ask_trust(trust_prompt, workspace, kwargs)
        if on_event is not None:
            rt.events.subscribe(on_event)
        body_error: Exception | None = None
        async with anyio.create_task_group() as tg:
            rt._tg = tg
            rt.events.bind(_spawner(tg))
            try:
                await rt.discover()
                await rt.skills.scan(rt.skill_sources, rt)
                if start == "lazy":
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
        if body_error is not None:
            raise body_error

    async def _ask_trust(self, prompt: TrustPrompt, workspace: Any, kwargs: dict[str, Any]) -> Runtime:
        """Ask ``prompt`` about the workspace's pending items; on a yes, trust and rediscover."""
        await self.discover()  # discovery starts nothing (runtime.spawn is refused here)
        if not await ask_trust(self.trust, self.workspace, prompt):
            return self
        self.trust_workspace()
        with anyio.CancelScope(shield=True):  # this one only discovered: it gives back what that took
            await self.aclose()
        fresh = {**kwargs, "host": self.host, "plugins": ()}
        return type(self)(workspace, **fresh)

    def trust_workspace(self) -> None:
        """Record the user's trust of everything the workspace declares now (``kairox trust``);
        a refused item is not recorded (:meth:`TrustStore.trust`)."""
        TrustStore(self.home or user_home(self.env)).trust(self.workspace, self.trust.declared.values())

    async def discover(self) -> None:
        """The discover stage: each provider reads what it would run (nothing runs; see
        :class:`~kairox.protocols.Discovers`). One that raises is recorded as failed; one
        with nothing to do here is idle; the others go on."""
        if self._discovered:
            return
        self._discovered = True
        await self.supervisor.discover()

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
        """Start providers in parallel (those named, else all); a failing one is recorded and
        the others go on. With ``lazy``, providers that can start part of themselves for a
        tool call (:class:`~kairox.protocols.StartsFor`) wait for that call."""
        await self.supervisor.start(names, lazy=lazy)

    def why_missing(self, name: str) -> str | None:
        """Why no tool ``name`` is registered, as a provider that would own it explains."""
        return self.supervisor.why_missing(name)

    async def resolve_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> Tool:
        """The tool ``name``, started on demand when the runtime is lazy; a missing tool
        raises :class:`~kairox.ToolNotFound` with the owner's reason when one explains."""
        try:
            return self.tools.resolve(name)
        except ToolNotFound as exc:
            missing = exc
        if self.supervisor.mode == "lazy" and self._tg is not None:
            await self.supervisor.start_for(name, arguments or {})
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
        did not load or register, config sections that do not validate (what they configure
        is off), and tool providers that failed to start."""
        lines = [f"plugin {f.distribution or f.plugin} ({f.stage}): {f.error}" for f in self.host.failures]
        for section, errors in self.config.broken_sections.items():  # what it configures is off
            owner = self.config.owners.get(section) or "?"
            lines.append(f"config section [{section}] of {owner}: {errors[0] if errors else 'does not validate'}")
        for state in self.supervisor.failed():
            lines.append(f"tool provider {state.name} of {state.owner or '?'}: {state.error}")
        return lines

    async def aclose(self) -> None:
        """Stop every started provider (in parallel, each bounded in time)."""
        await self.supervisor.stop_all()

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
    ) -> AsyncIterator[Session]:
        """``async with rt.session() as s``: start/end hooks fire exactly once each.

        The host callbacks (:data:`HostCallback`) answer what an MCP server asks while a
        tool call of this session runs, in place of the runtime's."""
        from ._session import Session

        session = Session(
            self,
            approver=approver,
            sampling_callback=sampling_callback,
            elicitation_callback=elicitation_callback,
            list_roots_callback=list_roots_callback,
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
        for provider in list(self.providers):
            try:
                servers.extend(provider.status())
            except Exception:
                logger.exception("status() of provider %s failed", provider.name)
        return RuntimeStatus(
            plugins=self.host.plugins(),
            failures=list(self.host.failures),
            config_errors=list(self.config.errors),
            providers=self.supervisor.status(),
            servers=servers,
            tools=len(self.tools),
            skills=len(self.skills),
            skill_errors=[str(e) for e in self.skills.errors],
        )

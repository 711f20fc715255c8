"""Test helpers for kairox plugin authors, shipped as a pytest plugin.

kairox-testing declares this module as its ``pytest11`` entry point, so in any
environment where it is installed these fixtures exist without a ``conftest.py``
line:

``kairox_workspace``
    an empty workspace directory (under ``tmp_path``).
``kairox_home``
    an empty ``KAIROX_HOME`` (so the user's real ``~/.kairox`` is never read).
``kairox_env``
    the environment the runtime sees: ``os.environ`` without any ``KAIROX_*``
    variable, plus ``KAIROX_HOME``. A plain dict: change it in a test.
``kairox_plugins``
    the inline plugins (modules, classes or objects with ``@hookimpl``
    functions) every runtime of the test registers. Empty by default;
    override the fixture in your ``conftest.py`` or test module.
``kairox_harness``
    a :class:`KairoxHarness`: write config files, open runtimes, build plugin
    hosts, run the ``kairox`` CLI, all over the temporary workspace.
``kairox_tool_provider``
    an :class:`InMemoryToolProvider` named ``memory`` that ``kairox_runtime``
    registers; add tools to it before or while the runtime runs.
``kairox_runtime``
    an open, started :class:`~kairox.Runtime` (an async fixture: mark the test
    ``@pytest.mark.anyio``).

Runtimes opened here are hermetic: they load the kernel's built-ins and the
inline plugins only, never the installed entry points (pass
``load_entrypoints=True`` to :meth:`KairoxHarness.open` to include them).
Every runtime gets a fresh plugin manager, so nothing leaks between tests.

Everything here is importable for use outside the fixtures too
(``from kairox_testing import InMemoryToolProvider``); hypothesis strategies for
manifests are in :mod:`kairox_testing.strategies`.
"""

from __future__ import annotations

import inspect
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from kairox import hookimpl

if TYPE_CHECKING:
    import click.testing

    from kairox import ApprovalAnswer, ApprovalRequest, Approver, Event, Runtime, ServerStatus, Tool
    from kairox.ext import EventBus, PluginHost, Registrar
    from kairox.protocols import ToolProvider

__all__ = [
    "Approvals",
    "EventLog",
    "InMemoryToolProvider",
    "KairoxHarness",
    "make_plugin",
    "trust_workspace",
]

F = TypeVar("F", bound=Callable[..., Any])


def make_plugin(name: str = "inline", **hooks: Callable[..., Any]) -> object:
    """An inline plugin object from hook functions, keyed by hook name.

    ``make_plugin(kairox_pre_tool_call=lambda call: Block("no"))``. Each
    function is marked with ``@hookimpl`` (it may already be).
    """

    class Plugin:
        def __repr__(self) -> str:
            return f"<inline kairox plugin {name}>"

    plugin = Plugin()
    plugin.__name__ = name  # type: ignore[attr-defined]  # pluggy names a plugin after __name__
    for hook_name, fn in hooks.items():
        if not hook_name.startswith("kairox_"):
            raise ValueError(f"{hook_name!r} is not a kairox hook name (they start with kairox_)")
        setattr(plugin, hook_name, fn if hasattr(fn, "kairox_impl") else hookimpl(fn))
    return plugin


class InMemoryToolProvider:
    """A :class:`~kairox.protocols.ToolProvider` whose tools are Python functions.

    Add tools before the runtime starts (they are registered on ``start``) or
    while it runs (each :meth:`add` / :meth:`remove` is one ``ToolsChanged``
    event). ``start_error`` makes ``start`` raise it, to test failure
    isolation; ``servers`` is what :meth:`status` reports.
    """

    def __init__(
        self,
        name: str = "memory",
        tools: Iterable[Tool] = (),
        *,
        start_error: BaseException | None = None,
        servers: Sequence[ServerStatus] = (),
    ) -> None:
        self.name = name
        self.start_error = start_error
        self.servers = list(servers)
        self.runtime: Runtime | None = None
        self.starts = 0
        self.stops = 0
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self._tools[tool.spec.id] = tool

    # -- adding tools ---------------------------------------------------------
    def tool(self, id: str | None = None, **spec: Any) -> Callable[[F], F]:
        """Decorator: register a function as a tool.

        ``id`` defaults to the function name; ``description`` to its docstring;
        ``input_schema`` to :func:`kairox.declare.schema_from_signature`; other keywords go to
        :class:`~kairox.ToolSpec` (``domain``, ``capability``, ...).
        """

        def decorate(fn: F) -> F:
            self.add_function(fn, id, **spec)
            return fn

        return decorate

    def add_function(self, fn: Callable[..., Any], id: str | None = None, **spec: Any) -> Tool:
        from kairox import FunctionTool, ToolSpec
        from kairox.declare import schema_from_signature

        spec.setdefault("description", inspect.getdoc(fn) or "")
        spec.setdefault("input_schema", schema_from_signature(fn))
        tool = FunctionTool(ToolSpec(id or fn.__name__, **spec), fn)
        self.add(tool)
        return tool

    def add(self, *tools: Tool) -> None:
        """Add tools (one event when the runtime runs); a taken id raises ``RegistrationError``."""
        merged = dict(self._tools)
        for tool in tools:
            merged[tool.spec.id] = tool
        self._swap(merged)

    def remove(self, *tool_ids: str) -> None:
        merged = {tid: t for tid, t in self._tools.items() if tid not in tool_ids}
        self._swap(merged)

    def _swap(self, tools: dict[str, Tool]) -> None:
        if self.runtime is not None:  # one event with exactly what changed
            changed = [t for tid, t in tools.items() if self._tools.get(tid) is not t]
            gone = [tid for tid, t in self._tools.items() if tools.get(tid) is not t]
            self.runtime.tools.replace(self.name, add=changed, remove=gone)
        self._tools = tools

    @property
    def tool_ids(self) -> list[str]:
        return sorted(self._tools)

    # -- the ToolProvider protocol ------------------------------------------------
    async def start(self, runtime: Runtime) -> None:
        self.starts += 1
        if self.start_error is not None:
            raise self.start_error
        self.runtime = runtime
        runtime.tools.replace_provider(self.name, self._tools.values())

    async def stop(self) -> None:
        self.stops += 1
        if self.runtime is not None:
            self.runtime.tools.remove_provider(self.name)
        self.runtime = None

    def status(self) -> list[ServerStatus]:
        return list(self.servers)

    def plugin(self) -> object:
        """An inline plugin that registers this provider."""
        provider = self

        def kairox_register_tool_providers(registrar: Registrar[ToolProvider]) -> None:
            registrar.add(provider)

        return make_plugin(f"{self.name}-provider", kairox_register_tool_providers=kairox_register_tool_providers)


class EventLog:
    """Records the events published on a bus: ``log = EventLog(rt.events)``."""

    def __init__(self, bus: EventBus | None = None) -> None:
        self.events: list[Event] = []
        self._unsubscribe: Callable[[], None] | None = None
        if bus is not None:
            self.attach(bus)

    def attach(self, bus: EventBus) -> None:
        self._unsubscribe = bus.subscribe(self.events.append)

    def detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def of(self, cls: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]

    def clear(self) -> None:
        self.events.clear()


class Approvals:
    """An approver that gives one answer and records every request."""

    def __init__(self, answer: ApprovalAnswer | bool = True) -> None:
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> ApprovalAnswer | bool:
        self.requests.append(request)
        return self.answer


def trust_workspace(
    workspace: str | os.PathLike[str],
    home: str | os.PathLike[str],
    *,
    env: dict[str, str] | None = None,
    host: PluginHost | None = None,
) -> list[str]:
    """Trust everything ``workspace`` declares now, in the trust file under ``home``,
    as ``kairox trust`` does (nothing is started). Returns the keys of the trusted items.

    For tests whose workspace declares servers or bundles that must run; a change
    to them afterwards needs trust again, as for a user."""
    import anyio

    from kairox import Runtime

    async def go() -> list[str]:
        rt = Runtime(workspace, home=home, env=env if env is not None else _clean_env(Path(home)), host=host)
        await rt.discover()
        rt.trust_workspace()
        return list(rt.trust.declared)

    keys: list[str] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            keys.extend(anyio.run(go))
        except BaseException as exc:
            errors.append(exc)

    # in a thread of its own: callable from sync tests and from inside a running event loop alike
    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if errors:
        raise errors[0]
    return keys


#: other tools' homes a runtime reads things from (their skill folders: ``~/.claude/skills``,
#: ``$CODEX_HOME/skills``, ...), left out of a test runtime's environment
OTHER_HOMES = ("CODEX_HOME", "USERPROFILE", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME")


def _clean_env(home: Path) -> dict[str, str]:
    """The environment of a test runtime: no ``KAIROX_*`` variable but ``KAIROX_HOME``, and
    ``HOME`` is the test's own home too, so nothing the user keeps in ``~`` (other tools'
    skills, configs) reaches a test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_") and k not in OTHER_HOMES}
    env["KAIROX_HOME"] = str(home)
    env["HOME"] = str(home)
    return env


class KairoxHarness:
    """Runtimes, plugin hosts and CLI runs over one temporary workspace."""

    def __init__(
        self,
        workspace: Path,
        home: Path,
        env: dict[str, str] | None = None,
        plugins: Iterable[object] = (),
    ) -> None:
        self.workspace = workspace
        self.home = home
        self.env: dict[str, str] = _clean_env(home) if env is None else env
        self.plugins: list[tuple[str | None, object]] = [(None, p) for p in plugins]

    def register(self, plugin: object, name: str | None = None) -> object:
        """Register an inline plugin in every runtime, host and CLI opened from now on."""
        self.plugins.append((name, plugin))
        return plugin

    def write_config(self, text: str, *, where: str = "workspace") -> Path:
        """Write a ``kairox.toml``: ``where`` is ``workspace`` (``./kairox.toml``),
        ``workspace-dir`` (``./.kairox/kairox.toml``) or ``user`` (``$KAIROX_HOME/kairox.toml``)."""
        targets = {
            "workspace": self.workspace / "kairox.toml",
            "workspace-dir": self.workspace / ".kairox" / "kairox.toml",
            "user": self.home / "kairox.toml",
        }
        if where not in targets:
            raise ValueError(f"where must be one of {', '.join(targets)}")
        path = targets[where]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def trust(self, *, load_entrypoints: bool = False) -> list[str]:
        """Trust everything the workspace declares now (``kairox trust``); returns the item keys."""
        return trust_workspace(
            self.workspace, self.home, env=self.env, host=self.host(load_entrypoints=load_entrypoints)
        )

    def host(self, *, plugins: Iterable[object] = (), load_entrypoints: bool = False) -> PluginHost:
        """A fresh plugin host with the built-ins, the inline plugins and ``plugins``."""
        from kairox.ext import build_plugin_host

        host = build_plugin_host(load_entrypoints=load_entrypoints, env=self.env)
        for name, plugin in [*self.plugins, *((None, p) for p in plugins)]:
            if host.pm.is_registered(plugin):  # loaded from its entry point already: not a failure
                continue
            host.register(plugin, name=name)
        host.check_pending()
        return host

    @asynccontextmanager
    async def open(
        self,
        *,
        plugins: Iterable[object] = (),
        load_entrypoints: bool = False,
        start: bool = True,
        approver: Approver | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Runtime]:
        """``async with harness.open() as rt``: a runtime over the workspace."""
        from kairox import Runtime

        host = self.host(plugins=plugins, load_entrypoints=load_entrypoints)
        async with Runtime.open(
            self.workspace, host=host, env=self.env, home=self.home, start=start, approver=approver, **kwargs
        ) as rt:
            yield rt

    def cli(
        self,
        *args: str,
        input: str | None = None,
        load_entrypoints: bool = False,
        catch_exceptions: bool = False,
    ) -> click.testing.Result:
        """Run ``kairox --workspace WORKSPACE *args`` in process; returns click's ``Result``
        (``exit_code``, ``stdout``, ``stderr``)."""
        from click.testing import CliRunner

        from kairox_cli import build_cli

        group = build_cli(self.host(load_entrypoints=load_entrypoints))
        overrides: dict[str, str | None] = {k: None for k in os.environ if k not in self.env}
        overrides.update(self.env)
        return CliRunner().invoke(
            group,
            ["--workspace", str(self.workspace), *args],
            input=input,
            env=overrides,
            catch_exceptions=catch_exceptions,
        )


# -- fixtures ---------------------------------------------------------------------


def _directory(parent: Path, name: str) -> Path:
    """``parent / name``, created if missing."""
    (parent / name).mkdir(exist_ok=True)
    return parent / name


@pytest.fixture
def kairox_workspace(tmp_path: Path) -> Path:
    return _directory(tmp_path, "workspace")


@pytest.fixture
def kairox_home(tmp_path: Path) -> Path:
    return _directory(tmp_path, "kairox-home")


@pytest.fixture
def kairox_env(kairox_home: Path) -> dict[str, str]:
    return _clean_env(kairox_home)


@pytest.fixture
def kairox_plugins() -> list[object]:
    """Override to register your plugin in every runtime of a test: ``return [my_plugin.hooks]``."""
    return []


@pytest.fixture
def kairox_harness(
    kairox_workspace: Path, kairox_home: Path, kairox_env: dict[str, str], kairox_plugins: list[object]
) -> KairoxHarness:
    return KairoxHarness(kairox_workspace, kairox_home, kairox_env, kairox_plugins)


@pytest.fixture
def kairox_tool_provider() -> InMemoryToolProvider:
    return InMemoryToolProvider("memory")


@pytest.fixture
async def kairox_runtime(
    kairox_harness: KairoxHarness, kairox_tool_provider: InMemoryToolProvider
) -> AsyncIterator[Runtime]:
    async with kairox_harness.open(plugins=[kairox_tool_provider.plugin()]) as rt:
        yield rt

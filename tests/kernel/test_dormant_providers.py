"""Dormant tool providers: ``adds(target, runtime=True, lazy=NAME, needed=CHECK)``.

A lazy provider whose ``needed`` check says it has nothing to do in a runtime is
neither imported, built nor started there; its first use builds it and wakes it, and
a woken provider starts as the runtime's providers did (all, lazily, or not at all).
The built-in features (kairox-mcp, -lsp, -dap, -manifests) register theirs so; the
modules they keep out of an empty workspace are checked in test_open_imports.py."""

from __future__ import annotations

import copy
import logging
import pickle
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from kairox import ProviderReady, Runtime, RuntimeStatus, ToolNotFound
from kairox.declare import Lazy, adds, has_entries, is_needed, servers
from kairox.testing import EventLog, KairoxHarness, make_plugin

pytestmark = pytest.mark.anyio

MODULE = "kairox_dormant_fixture"


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A module on ``sys.path``, not imported yet, whose providers record what happens to them."""
    (tmp_path / f"{MODULE}.py").write_text(
        textwrap.dedent(
            """
            import time

            LOG = []
            WANTED = {"pigeon": False}
            START_DELAY = [0.0]
            STARTING = [False]

            def wanted(runtime):
                LOG.append(("needed?", runtime is not None))
                return WANTED["pigeon"]

            def broken_check(runtime):
                raise RuntimeError("the check itself is broken")

            class Pigeon:
                name = "pigeon"

                def __init__(self, runtime):
                    self.runtime = runtime
                    LOG.append("built")

                async def discover(self, runtime):
                    LOG.append("discover")

                async def start(self, runtime):
                    LOG.append("start")
                    STARTING[0] = True
                    try:
                        if START_DELAY[0]:
                            import anyio

                            await anyio.sleep(START_DELAY[0])
                            LOG.append("started")
                        runtime.tools.replace_provider(self.name, [])
                    finally:
                        STARTING[0] = False

                async def stop(self):
                    LOG.append("stop during start" if STARTING[0] else "stop")

                def status(self):
                    return []

                def fly(self):
                    return "flown"

            class LazyPigeon(Pigeon):
                async def start_for(self, name, arguments):
                    LOG.append(("start_for", name))

            class SlowlyDiscoveredPigeon(LazyPigeon):
                async def discover(self, runtime):
                    import anyio

                    LOG.append("discover")
                    await anyio.sleep(0.2)
                    LOG.append("discovered")

            class SlowPigeon(Pigeon):
                def __init__(self, runtime):
                    time.sleep(0.2)
                    super().__init__(runtime)

            class BrokenPigeon:
                name = "pigeon"

                def __init__(self, runtime):
                    raise RuntimeError("cannot build a pigeon")

            class Starter:
                '''A provider whose start uses the pigeon.'''

                name = "starter"

                def __init__(self, runtime):
                    pass

                async def start(self, runtime):
                    runtime.providers.get("pigeon").fly()

                async def stop(self):
                    pass

            class ThreadStarter(Starter):
                '''A provider whose start uses the pigeon from a worker thread.'''

                async def start(self, runtime):
                    import anyio

                    await anyio.to_thread.run_sync(lambda: runtime.providers.get("pigeon").fly())

            class Crow:
                name = "crow"

                def __init__(self, runtime):
                    import kairox_not_installed_anywhere  # noqa: F401

            class Toucher:
                '''A provider whose discovery uses the pigeon (as a bundle hands servers over).'''

                name = "toucher"

                def __init__(self, runtime):
                    pass

                async def discover(self, runtime):
                    runtime.providers.get("pigeon").fly()

                async def start(self, runtime):
                    pass

                async def stop(self):
                    pass
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(MODULE, None)
    yield _Fixture()
    sys.modules.pop(MODULE, None)


class _Fixture:
    """The fixture module, imported on first look (so a test can check it was not)."""

    def imported(self) -> bool:
        return MODULE in sys.modules

    @property
    def log(self) -> list[Any]:
        return sys.modules[MODULE].LOG  # type: ignore[no-any-return]

    def want(self, value: bool) -> None:
        __import__(MODULE).WANTED["pigeon"] = value


def pigeon(cls: str = "Pigeon", needed: Any = f"{MODULE}:wanted", name: str = "pigeon") -> object:
    return make_plugin(
        "pigeons", kairox_register_tool_providers=adds(f"{MODULE}:{cls}", runtime=True, lazy=name, needed=needed)
    )


#: the kernel's own provider (agents), there in every runtime
KERNEL = "kairox"


def states(rt: Runtime) -> dict[str, str]:
    status: RuntimeStatus = rt.status()
    return {p.name: p.state for p in status.providers if p.name != KERNEL}


def active(rt: Runtime) -> list[str]:
    return [p.name for p in rt.active_providers() if p.name != KERNEL]


def ready_event(rt: Runtime, name: str) -> anyio.Event:
    """Set once the provider ``name`` is ready (subscribe before what should start it)."""
    ready = anyio.Event()
    rt.events.subscribe(lambda e: ready.set() if isinstance(e, ProviderReady) and e.provider == name else None)
    return ready


async def settle(ready: anyio.Event) -> None:
    with anyio.fail_after(10):
        await ready.wait()


async def test_a_provider_with_nothing_to_do_is_neither_imported_nor_started(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    async with kairox_harness.open(plugins=[pigeon(needed=lambda rt: False)]) as rt:
        assert not target.imported()
        assert "pigeon" in rt.providers and rt.providers.names() == [KERNEL, "pigeon"]
        assert active(rt) == []
        assert states(rt) == {"pigeon": "idle"}
        rt.status()  # a status (and a turn's instructions) asks nothing of it
        async with rt.session() as session:
            await session.turn_context("hello")
        assert not target.imported() and type(rt.providers.get("pigeon")) is Lazy
    assert not target.imported()  # closing stops nothing


async def test_a_provider_with_something_to_do_is_built_and_started(kairox_harness: KairoxHarness, target: Any) -> None:
    __import__(MODULE)
    target.want(True)
    async with kairox_harness.open(plugins=[pigeon()]) as rt:
        assert target.log == [("needed?", True), "built", "discover", "start"]
        assert states(rt) == {"pigeon": "ready"}
        assert active(rt) == ["pigeon"]
    assert target.log[-1] == "stop"


async def test_a_lazy_provider_without_needed_is_built_at_open(kairox_harness: KairoxHarness, target: Any) -> None:
    async with kairox_harness.open(plugins=[pigeon(needed=None)]) as rt:
        assert target.log == ["built", "discover", "start"]
        assert states(rt) == {"pigeon": "ready"}


async def test_the_first_use_wakes_it_and_it_starts_as_the_others_did(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    log = EventLog()
    async with kairox_harness.open(plugins=[pigeon()]) as rt:
        rt.events.subscribe(log.events.append)
        ready = ready_event(rt, "pigeon")
        assert target.log == [("needed?", True)] and states(rt) == {"pigeon": "idle"}
        assert rt.providers.get("pigeon").fly() == "flown"  # built by this use
        await settle(ready)
        assert target.log == [("needed?", True), "built", "discover", "start"]
        assert states(rt) == {"pigeon": "ready"}
        assert [e.provider for e in log.of(ProviderReady)] == ["pigeon"]
    assert target.log[-1] == "stop"


async def test_a_woken_provider_starts_once_when_the_providers_are_started_again(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    async with kairox_harness.open(plugins=[pigeon()]) as rt:
        ready = ready_event(rt, "pigeon")
        rt.providers.get("pigeon").fly()
        await rt.start_providers()  # before the woken provider's own start ran
        await settle(ready)
        assert target.log.count("start") == 1


async def test_woken_from_a_worker_thread_it_starts_too(kairox_harness: KairoxHarness, target: Any) -> None:
    async with kairox_harness.open(plugins=[pigeon()]) as rt:
        ready = ready_event(rt, "pigeon")
        assert await anyio.to_thread.run_sync(lambda: rt.providers.get("pigeon").fly()) == "flown"
        await settle(ready)
        assert states(rt) == {"pigeon": "ready"}


async def test_woken_during_discovery_it_starts_with_the_others(kairox_harness: KairoxHarness, target: Any) -> None:
    toucher = make_plugin("toucher", kairox_register_tool_providers=adds(f"{MODULE}:Toucher", runtime=True))
    async with kairox_harness.open(plugins=[pigeon(), toucher]) as rt:
        # the toucher's discover used it: it discovered and started in the start stage, not later
        assert target.log == [("needed?", True), "built", "discover", "start"]
        assert states(rt) == {"pigeon": "ready", "toucher": "ready"}


async def test_a_runtime_that_starts_nothing_starts_no_woken_provider(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    async with kairox_harness.open(plugins=[pigeon()], start=False) as rt:
        assert rt.start_mode is None
        rt.providers.get("pigeon").fly()
        await anyio.sleep(0.05)
        assert "start" not in target.log and states(rt) == {"pigeon": "stopped"}
        await rt.start_providers()  # started by hand: now it is one of the providers
        assert states(rt) == {"pigeon": "ready"} and rt.start_mode == "all"
        assert target.log.count("discover") == 1


@pytest.mark.parametrize(("cls", "started"), [("LazyPigeon", False), ("Pigeon", True)])
async def test_a_lazy_runtime_starts_a_woken_provider_only_without_start_for(
    kairox_harness: KairoxHarness, target: Any, cls: str, started: bool
) -> None:
    async with kairox_harness.open(plugins=[pigeon(cls)], start="lazy") as rt:  # type: ignore[arg-type]
        assert rt.start_mode == "lazy"
        ready = ready_event(rt, "pigeon")
        rt.providers.get("pigeon").fly()
        if started:
            await settle(ready)
        else:
            await anyio.sleep(0.05)
        assert ("start" in target.log) is started


async def test_a_provider_woken_while_closing_is_not_started(kairox_harness: KairoxHarness, target: Any) -> None:
    async with kairox_harness.open(plugins=[pigeon()]) as rt:
        assert rt.start_mode == "all"
    assert rt.start_mode is None
    rt.providers.get("pigeon").fly()  # after close (and during it: the same flag)
    assert "built" in target.log and "start" not in target.log


async def test_a_broken_check_counts_as_needed(
    kairox_harness: KairoxHarness, target: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="kairox.declare"):
        async with kairox_harness.open(plugins=[pigeon(needed=f"{MODULE}:broken_check")]) as rt:
            assert states(rt) == {"pigeon": "ready"}
    assert "the check of whether 'pigeon' is needed failed" in caplog.text


async def test_a_needed_provider_that_cannot_be_built_is_its_plugin_s_failure(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    __import__(MODULE)
    target.want(True)
    crow = make_plugin(
        "crows",
        kairox_register_tool_providers=adds(f"{MODULE}:Crow", runtime=True, lazy="crow", needed=lambda rt: True),
    )
    async with kairox_harness.open(plugins=[pigeon(), crow]) as rt:
        assert "crow" not in rt.providers
        assert states(rt) == {"pigeon": "ready"}  # the other provider is not affected
        [failure] = rt.status().failures
        assert failure.plugin == "crows" and "kairox_not_installed_anywhere" in failure.error


def test_needed_is_for_lazy_tool_providers_only() -> None:
    with pytest.raises(ValueError, match="needed= is for lazy tool providers"):
        adds("a.b:C", runtime=True, needed="a.b:d")
    with pytest.raises(ValueError, match="needed= is for lazy tool providers"):
        adds("a.b:C", lazy="c", needed="a.b:d")
    with pytest.raises(ValueError, match=r"is not 'package\.module:attribute'"):
        adds("a.b:C", runtime=True, lazy="c", needed="no-colon")


def test_copies_and_pickles_keep_the_check(target: Any) -> None:
    stand_in = Lazy("pigeon", f"{MODULE}:Pigeon", None, needed=f"{MODULE}:wanted")
    for twin in (copy.copy(stand_in), copy.deepcopy(stand_in), pickle.loads(pickle.dumps(stand_in))):
        assert twin._needed == f"{MODULE}:wanted" and not twin.resolved
    assert not target.imported()
    assert is_needed(Lazy("pigeon", f"{MODULE}:Pigeon"), None) is True  # type: ignore[arg-type]


async def test_servers_with_a_name_is_dormant_until_its_section_has_entries(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    sections, providers = servers(
        "pigeon_servers", f"{MODULE}:Pigeon", f"{MODULE}:Pigeon", name="pigeon", description="pigeons"
    )
    plugin = make_plugin("pigeons", kairox_register_config_sections=sections, kairox_register_tool_providers=providers)
    async with kairox_harness.open(plugins=[plugin]) as rt:
        assert not has_entries("pigeon_servers", rt) and states(rt) == {"pigeon": "idle"}
    assert not target.imported()
    # a workspace entry the user has not trusted is held, and still wakes it (to list it as untrusted)
    kairox_harness.write_config('[pigeon_servers.one]\ncommand = "x"\n')
    async with kairox_harness.open(plugins=[plugin], start=False) as rt:
        assert has_entries("pigeon_servers", rt) and rt.config.held_entries("pigeon_servers")
        assert active(rt) == ["pigeon"] and target.log == ["built", "discover"]


async def test_the_built_in_features_are_dormant_in_an_empty_workspace(kairox_harness: KairoxHarness) -> None:
    async with kairox_harness.open(load_entrypoints=True) as rt:
        built_in = {"mcp", "lsp", "dap", "plugins"}
        assert {name: state for name, state in states(rt).items() if name in built_in} == dict.fromkeys(
            built_in, "idle"
        )
        # a call of a missing tool asks them anyway: the answer says what to configure
        with pytest.raises(ToolNotFound, match=r"no language server is configured \(\[lsp_servers.NAME\]"):
            await rt.call_tool("lsp.definition", {"path": "x.py", "line": 1, "character": 1})


@pytest.mark.parametrize("cls", ["Starter", "ThreadStarter"])
async def test_woken_by_the_start_stage_it_is_ready_when_open_returns(
    kairox_harness: KairoxHarness, target: Any, cls: str
) -> None:
    starter = make_plugin("starter", kairox_register_tool_providers=adds(f"{MODULE}:{cls}", runtime=True))
    __import__(MODULE).START_DELAY[0] = 0.2
    async with kairox_harness.open(plugins=[pigeon(), starter]) as rt:
        assert states(rt) == {"pigeon": "ready", "starter": "ready"}
        assert target.log[-2:] == ["start", "started"]


async def test_woken_just_before_close_its_start_ends_before_its_stop(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    __import__(MODULE).START_DELAY[0] = 5.0
    with anyio.fail_after(4):  # the start is cancelled, not waited for
        async with kairox_harness.open(plugins=[pigeon()]) as rt:
            rt.providers.get("pigeon").fly()
            await anyio.sleep(0.05)
            assert target.log[-1] == "start"
    assert target.log[-2:] == ["start", "stop"]  # cancelled, then stopped: never beside each other


@pytest.mark.parametrize("where", ["thread", "callback"])
async def test_woken_outside_the_runtime_s_tasks_it_starts(
    kairox_harness: KairoxHarness, target: Any, where: str
) -> None:
    import asyncio
    import threading

    async with kairox_harness.open(plugins=[pigeon()]) as rt:
        ready = ready_event(rt, "pigeon")
        if where == "thread":  # a thread anyio did not start
            thread = threading.Thread(target=lambda: rt.providers.get("pigeon").fly())
            thread.start()
            await anyio.to_thread.run_sync(thread.join)
        else:  # a callback of the event loop, in no task
            asyncio.get_running_loop().call_soon(lambda: rt.providers.get("pigeon").fly())
        await settle(ready)
        assert target.log.count("start") == 1


async def test_two_threads_using_it_at_once_build_one_provider(kairox_harness: KairoxHarness, target: Any) -> None:
    async with kairox_harness.open(plugins=[pigeon("SlowPigeon")]) as rt:
        stand_in = rt.providers.get("pigeon")
        bound: list[Any] = []

        async with anyio.create_task_group() as tg:
            for _ in range(2):
                tg.start_soon(anyio.to_thread.run_sync, lambda: bound.append(stand_in.fly.__self__))
        assert target.log.count("built") == 1 and bound[0] is bound[1] is stand_in.resolve()


async def test_a_dormant_provider_that_cannot_be_built_is_taken_out_when_used(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    async with kairox_harness.open(plugins=[pigeon("BrokenPigeon")]) as rt:
        assert states(rt) == {"pigeon": "idle"} and not rt.status().failures
        # a call of one of its tools asks it (its name starts the tool's): it says nothing, and goes
        with pytest.raises(ToolNotFound, match=r"pigeon\.fly"):
            await rt.call_tool("pigeon.fly", {})
        assert "pigeon" not in rt.providers and states(rt) == {}
        [failure] = rt.status().failures
        assert failure.plugin == "pigeons" and "cannot build a pigeon" in failure.error
        with pytest.raises(ToolNotFound):  # and from now on a plain miss
            await rt.call_tool("pigeon.fly", {})


async def test_a_call_of_another_tool_asks_no_dormant_provider(kairox_harness: KairoxHarness, target: Any) -> None:
    async with kairox_harness.open(plugins=[pigeon()]) as rt:
        with pytest.raises(ToolNotFound):
            await rt.call_tool("crow.fly", {})
        assert states(rt) == {"pigeon": "idle"} and not target.log[1:]  # only the needed check ran


async def test_woken_as_the_body_ends_it_never_starts_and_is_not_stopped(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    async with kairox_harness.open(plugins=[pigeon()]) as rt:
        rt.providers.get("pigeon").fly()  # no await after it: the runtime closes before its start runs
    assert target.log == [("needed?", True), "built"]


async def test_a_wake_from_a_thread_and_a_start_stage_at_once_start_it_once(
    kairox_harness: KairoxHarness, target: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    async with kairox_harness.open(plugins=[pigeon()]) as rt:
        owner_of = rt.providers.owner_of

        def slow_owner_of(name: str) -> str | None:  # widens the waking thread's window
            if threading.current_thread() is not threading.main_thread():
                time.sleep(0.3)
            return owner_of(name)

        monkeypatch.setattr(rt.providers, "owner_of", slow_owner_of)
        ready = ready_event(rt, "pigeon")
        thread = threading.Thread(target=lambda: rt.providers.get("pigeon").fly())
        thread.start()
        await anyio.sleep(0.1)
        await rt.start_providers()  # while the thread is waking it
        await anyio.to_thread.run_sync(thread.join)
        await settle(ready)
        assert target.log.count("start") == 1


async def test_a_lazy_runtime_asks_a_dormant_provider_for_its_own_tools_after_discovering_it(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    async with kairox_harness.open(plugins=[pigeon("LazyPigeon")], start="lazy") as rt:  # type: ignore[arg-type]
        with pytest.raises(ToolNotFound):
            await rt.call_tool("pigeon.fly", {})
        # at the first call (not a second one), its discover first
        assert target.log[1:] == ["built", "discover", ("start_for", "pigeon.fly")]


async def test_strict_mode_reports_a_woken_provider_that_cannot_be_built(
    kairox_harness: KairoxHarness, target: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from kairox import PluginLoadFailed, RegistrationError

    kairox_harness.env["KAIROX_STRICT_PLUGINS"] = "1"
    async with kairox_harness.open(plugins=[pigeon("BrokenPigeon")]) as rt:
        failed = EventLog(rt.events)
        with pytest.raises(RegistrationError, match="cannot build a pigeon"):  # the use that woke it
            rt.providers.get("pigeon").fly()
        assert [e.plugin for e in failed.of(PluginLoadFailed)] == ["pigeons"]
        assert "pigeon" not in rt.providers and "watcher" not in caplog.text


class _Slow:
    """A provider that takes ``delay`` seconds to start and counts its starts."""

    def __init__(self, name: str, delay: float) -> None:
        self.name, self.delay, self.starts = name, delay, 0

    async def start(self, runtime: Runtime) -> None:
        self.starts += 1
        await anyio.sleep(self.delay)

    async def stop(self) -> None:
        pass


def _slow(provider: _Slow) -> object:
    return make_plugin(
        f"p-{provider.name}", kairox_register_tool_providers=lambda registrar, runtime: registrar.add(provider)
    )


async def test_start_stages_side_by_side_start_each_provider_once_and_leave_none_behind(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    quick, slow = _Slow("quick", 0.05), _Slow("slow", 0.3)
    async with kairox_harness.open(plugins=[pigeon(), _slow(quick), _slow(slow)], start=False) as rt:
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.start_providers)
            tg.start_soon(rt.start_providers)  # in the same tick
            await anyio.sleep(0.01)
            tg.start_soon(rt.start_providers, ["slow"])  # outlives the first two
        assert (quick.starts, slow.starts) == (1, 1)
        ready = ready_event(rt, "pigeon")
        rt.providers.get("pigeon").fly()  # no start stage runs now: the runtime's own task starts it
        await settle(ready)
        assert target.log.count("start") == 1


@pytest.mark.parametrize("pause", [0.0, 0.05])
async def test_a_thread_s_wake_and_the_first_start_stage_start_it_once(
    kairox_harness: KairoxHarness, target: Any, pause: float
) -> None:
    import threading
    import time

    class SlowOffTheLoop(dict):  # type: ignore[type-arg]
        """Leaving the dormant set takes a while when a worker thread does it (the window
        in which the first start stage used to skip it and the thread not start it)."""

        def pop(self, *args: Any) -> Any:
            if threading.current_thread() is not threading.main_thread():
                time.sleep(0.3)
            return super().pop(*args)

    async with kairox_harness.open(plugins=[pigeon()], start=False) as rt:
        rt._dormant = SlowOffTheLoop(rt._dormant)
        ready = ready_event(rt, "pigeon")
        thread = threading.Thread(target=lambda: rt.providers.get("pigeon").fly())
        thread.start()  # woken while no start stage has run yet
        await anyio.sleep(pause)
        await rt.start_providers()
        await anyio.to_thread.run_sync(thread.join)
        await settle(ready)
        assert target.log.count("start") == 1


def test_used_after_its_event_loop_closed_an_unbuildable_provider_is_taken_out(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    from kairox import RegistrationError

    async def run() -> Runtime:
        async with kairox_harness.open(plugins=[pigeon("BrokenPigeon")]) as rt:
            return rt

    rt = anyio.run(run)  # its loop is closed now
    with pytest.raises(RegistrationError):
        rt.providers.get("pigeon").fly()  # type: ignore[union-attr]
    assert "pigeon" not in rt.providers and len(rt.status().failures) == 1


async def call_missing(rt: Runtime) -> None:
    """A lazy runtime's call of the pigeon's tool, which it never registers."""
    with pytest.raises(ToolNotFound):
        await rt.call_tool("pigeon.fly", {})


async def test_two_calls_at_once_wait_for_one_discovery_before_start_for(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    async with kairox_harness.open(plugins=[pigeon("SlowlyDiscoveredPigeon")], start="lazy") as rt:  # type: ignore[arg-type]
        async with anyio.create_task_group() as tg:
            tg.start_soon(call_missing, rt)
            tg.start_soon(call_missing, rt)
        assert target.log[1:] == [
            "built",
            "discover",
            "discovered",
            ("start_for", "pigeon.fly"),
            ("start_for", "pigeon.fly"),
        ]


async def test_a_start_stage_cancelled_during_a_discovery_leaves_the_provider_to_the_next(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    async with kairox_harness.open(plugins=[pigeon("SlowlyDiscoveredPigeon")], start=False) as rt:
        rt.providers.get("pigeon").fly()  # woken after the discover stage; nothing started it
        with anyio.move_on_after(0.05):  # cancelled while its discover runs
            await rt.start_providers()
        assert states(rt) == {"pigeon": "stopped"}
        await rt.start_providers()
        assert states(rt) == {"pigeon": "ready"}
        assert target.log[1:] == ["built", "discover", "discover", "discovered", "start"]
    assert target.log[-1] == "stop"


async def test_a_cancelled_discovery_is_made_again_by_the_caller_waiting_for_it(
    kairox_harness: KairoxHarness, target: Any
) -> None:
    async def first(rt: Runtime) -> None:
        with anyio.move_on_after(0.05):  # cancelled while its discover runs
            await call_missing(rt)

    async with kairox_harness.open(plugins=[pigeon("SlowlyDiscoveredPigeon")], start="lazy") as rt:  # type: ignore[arg-type]
        async with anyio.create_task_group() as tg:
            tg.start_soon(first, rt)
            await anyio.sleep(0.01)
            tg.start_soon(call_missing, rt)
            tg.start_soon(call_missing, rt)  # two wait: one discovers again, the other waits for that
        assert target.log[1:] == [
            "built",
            "discover",
            "discover",
            "discovered",
            ("start_for", "pigeon.fly"),
            ("start_for", "pigeon.fly"),
        ]


async def test_woken_in_a_thread_s_own_event_loop_it_starts_on_the_runtime_s(
    kairox_harness: KairoxHarness, target: Any, anyio_backend: str
) -> None:
    import asyncio
    import threading

    if anyio_backend != "asyncio":
        pytest.skip("the other loop is an asyncio one")
    __import__(MODULE).START_DELAY[0] = 0.1

    async def elsewhere(rt: Runtime) -> None:
        rt.providers.get("pigeon").fly()

    reached = False
    async with kairox_harness.open(plugins=[pigeon()]) as rt:
        ready = ready_event(rt, "pigeon")
        thread = threading.Thread(target=lambda: asyncio.run(elsewhere(rt)))
        thread.start()
        await anyio.to_thread.run_sync(thread.join)  # that loop is closed now
        await settle(ready)  # and the start, on the runtime's loop, was not cancelled with it
        assert target.log[-2:] == ["start", "started"]
        reached = True  # (a start task on the other loop, cancelled with it, cancelled this body)
    assert reached and target.log[-1] == "stop"


async def test_closing_ends_a_start_stage_still_running_before_the_stops(kairox_harness: KairoxHarness) -> None:
    log: list[str] = []

    class Logged:
        name = "logged"

        async def start(self, runtime: Runtime) -> None:
            log.append("start")
            try:
                await anyio.sleep(0.5)
            finally:
                log.append("start ended")

        async def stop(self) -> None:
            log.append("stop")

    plugin = make_plugin("logged", kairox_register_tool_providers=lambda registrar, runtime: registrar.add(Logged()))
    async with kairox_harness.open(plugins=[plugin], start=False) as rt:
        rt.spawn(rt.start_providers)  # a start stage of its own task, as the dashboard's
        await anyio.sleep(0.05)
    assert log == ["start", "start ended", "stop"]


@pytest.mark.parametrize("shielded", [False, True])
async def test_a_provider_s_start_that_closes_the_runtime_does_not_wait_for_itself(
    kairox_harness: KairoxHarness, shielded: bool
) -> None:
    log: list[str] = []

    class Closer:
        name = "closer"

        async def start(self, runtime: Runtime) -> None:
            log.append("start")
            with anyio.CancelScope(shield=shielded):
                await runtime.aclose()
            log.append("closed")

        async def stop(self) -> None:
            log.append("stop")

    plugin = make_plugin("closer", kairox_register_tool_providers=lambda registrar, runtime: registrar.add(Closer()))
    with anyio.fail_after(5):  # waiting for its own stage would never end
        async with kairox_harness.open(plugins=[plugin], start=False) as rt:
            await rt.start_providers()
    assert log[:2] == ["start", "stop"]

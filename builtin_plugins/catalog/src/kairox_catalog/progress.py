"""Progress reporting for slow steps (fetching, pre-installing, verifying).

The installer and the catalog report through a :class:`Progress`; the CLI's
:class:`TerminalProgress` prints each step when it starts, a heartbeat while it
runs, and its outcome with the time it took.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import attrs

__all__ = ["NullProgress", "Progress", "RecordingProgress", "Step", "TerminalProgress"]

logger = logging.getLogger(__name__)


@attrs.define
class Step:
    """A running step; set ``detail`` to say how it ended."""

    title: str
    detail: str = ""
    ok: bool = True


class Progress:
    """Base class: override the ``on_*`` methods; ``step()`` drives them."""

    heartbeat: float = 10.0

    def info(self, message: str) -> None:
        logger.info("%s", message)

    def warn(self, message: str) -> None:
        logger.warning("%s", message)

    def on_start(self, step: Step) -> None:
        pass

    def on_tick(self, step: Step, elapsed: float) -> None:
        pass

    def on_end(self, step: Step, elapsed: float, error: BaseException | None) -> None:
        pass

    @asynccontextmanager
    async def step(self, title: str) -> AsyncIterator[Step]:
        step = Step(title)
        started = time.monotonic()
        self.on_start(step)
        error: BaseException | None = None
        try:
            # the body's exception is carried out of the task group so that it is
            # re-raised as itself, not wrapped in an exception group
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._ticker, step, started)
                try:
                    yield step
                except BaseException as exc:
                    error = exc
                finally:
                    tg.cancel_scope.cancel()
            if error is not None:
                step.ok = False
                raise error
        finally:
            self.on_end(step, time.monotonic() - started, error)

    async def _ticker(self, step: Step, started: float) -> None:
        if self.heartbeat <= 0:
            return
        while True:
            await anyio.sleep(self.heartbeat)
            self.on_tick(step, time.monotonic() - started)


class NullProgress(Progress):
    heartbeat = 0.0


@attrs.define
class RecordingProgress(Progress):
    """Keeps what was reported (tests, embedding)."""

    events: list[tuple[str, str]] = attrs.field(factory=list)
    heartbeat: float = 0.0

    def info(self, message: str) -> None:
        self.events.append(("info", message))

    def warn(self, message: str) -> None:
        self.events.append(("warn", message))

    def on_start(self, step: Step) -> None:
        self.events.append(("start", step.title))

    def on_tick(self, step: Step, elapsed: float) -> None:
        self.events.append(("tick", step.title))

    def on_end(self, step: Step, elapsed: float, error: BaseException | None) -> None:
        ok = step.ok and error is None
        self.events.append(("done" if ok else "failed", f"{step.title}: {step.detail}" if step.detail else step.title))

    def steps(self) -> list[str]:
        return [text for kind, text in self.events if kind == "start"]


class TerminalProgress(Progress):
    """``==> step ...`` lines on stderr (stdout stays clean for ``--json``)."""

    def __init__(self, echo: Callable[[str], None], *, heartbeat: float = 5.0) -> None:
        self.echo = echo
        self.heartbeat = heartbeat

    def info(self, message: str) -> None:
        self.echo(f"    {message}")

    def warn(self, message: str) -> None:
        self.echo(f"  ! {message}")

    def on_start(self, step: Step) -> None:
        self.echo(f"==> {step.title} ...")

    def on_tick(self, step: Step, elapsed: float) -> None:
        self.echo(f"    ... still working ({elapsed:.0f} s)")

    def on_end(self, step: Step, elapsed: float, error: BaseException | None) -> None:
        if error is not None and not isinstance(error, Exception):
            self.echo(f"    interrupted after {elapsed:.1f} s")
            return
        ok = step.ok and error is None
        detail = step.detail or (f"{type(error).__name__}: {error}" if error else "")
        word = "done" if ok else "failed"
        self.echo(f"    {word} in {elapsed:.1f} s" + (f": {detail}" if detail else ""))

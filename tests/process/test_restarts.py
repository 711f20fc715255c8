"""kairox_process.Restarts: when a supervised child that crashed starts again."""

from __future__ import annotations

import anyio
import pytest

from kairox_process import MAX_BACKOFF, RESET_AFTER, OutputTail, Restarts


class Supervised:
    """A child under a :class:`Restarts` policy, on a clock moved by hand."""

    def __init__(self, max_restarts: int) -> None:
        self.now = 1000.0
        self.restarts = Restarts(max_restarts, 1.0, clock=lambda: self.now)

    async def crash(self, ready_for: float | None) -> float | None:
        """An attempt, ready for ``ready_for`` seconds (``None``: never ready), crashed:
        the delay before the next, as reported, counted (the wait itself is not under test)."""
        ready_at = None if ready_for is None else self.now
        self.now += ready_for or 0.0
        stop = anyio.Event()
        stop.set()
        reported: list[float | None] = []
        again = await self.restarts.restart(ready_at, reported.append, stop)
        [delay] = reported
        assert again is (delay is not None)
        return delay


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("max_restarts", "ready_for", "delays"),
    [
        pytest.param(3, [None], [None], id="a failed first start is not retried"),
        pytest.param(
            8, [1.0] * 9, [1, 2, 4, 8, 16, MAX_BACKOFF, MAX_BACKOFF, MAX_BACKOFF, None], id="doubling up to the maximum"
        ),
        pytest.param(2, [1.0, None, None], [1, 2, None], id="a restart never ready counts in the row"),
        pytest.param(2, [1.0, 1.0, RESET_AFTER, 1.0], [1, 2, 1, 2], id="staying ready a while starts a new row"),
    ],
)
async def test_the_delay_after_each_crash(
    max_restarts: int, ready_for: list[float | None], delays: list[float | None]
) -> None:
    child = Supervised(max_restarts)
    assert [await child.crash(t) for t in ready_for] == delays
    assert child.restarts.count == len([d for d in delays if d is not None])


@pytest.mark.anyio
async def test_reset_starts_a_new_row() -> None:
    child = Supervised(1)
    assert await child.crash(1.0) == 1.0
    child.restarts.reset()  # the attempt ended for a login the server asked for, not a crash
    assert await child.crash(1.0) == 1.0
    assert await child.crash(1.0) is None


@pytest.mark.anyio
async def test_the_failure_event_says_whether_and_when_it_restarts() -> None:
    child = Supervised(1)
    stderr = OutputTail(1000)
    stderr.feed(b"".join(b"line %d\n" % i for i in range(30)))
    assert await child.crash(1.0) == 1.0
    assert child.restarts.failure("boom", 2.0, exit_code=3, stderr=stderr) == {
        "error": "boom",
        "exit_code": 3,
        "stderr_tail": tuple(f"line {i}" for i in range(10, 30)),
        "will_restart": True,
        "retry_in_s": 2.0,
        "restarts": 1,
    }
    given_up = child.restarts.failure("boom", None, exit_code=None, stderr=OutputTail(1000))
    assert given_up["will_restart"] is False and given_up["retry_in_s"] == 0.0 and given_up["stderr_tail"] == ()

"""The agent's tick runs from the loop's timer (base/loops.py `Loops.timer`): on its schedule,
through a failing call, skipping (not drifting) after a late one, and never again once
its task is replaced or stopped, even with a call already due. Real event loop; the
clock is the loop's own. What is checked is the schedule the timer books (each call's
due time, from its handle), not the gaps between calls: on a loaded machine a call can
run late, and the schedule is the timer's arithmetic."""

from __future__ import annotations

import asyncio
import logging
import time

from exotray.agent.base.loops import Loops

PERIOD = 0.05


def _due_times(loops: Loops, calls: list[float]) -> None:
    """Called from inside a timer's call: the time it was due (the first call, booked
    with call_soon, has none)."""
    handle = loops._timers["tick"].handle  # (the handle that is running now)
    if isinstance(handle, asyncio.TimerHandle):
        calls.append(handle.when())


def _on_the_grid(due: list[float]) -> list[int]:
    """Each due time as a whole number of periods after the first; asserts they are
    (within a fifth of a period: `when` is the booked time plus the moment between two
    reads of the clock, which a loaded machine can stretch; a drift would be more)."""
    steps = [(t - due[0]) / PERIOD for t in due]
    assert all(abs(k - round(k)) < 0.2 for k in steps), steps
    return [round(k) for k in steps]


def test_a_timer_calls_on_schedule_and_survives_a_failing_call(caplog):
    due: list[float] = []
    ended: list[float] = []
    count = 0

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def fn() -> None:
            nonlocal count
            count += 1
            _due_times(loops, due)
            try:
                if count == 2:
                    raise RuntimeError("a bug in one tick")
            finally:
                if count > 1:
                    ended.append(loop.time())

        loops = Loops(loop.time)
        task = loops.timer("tick", PERIOD, fn)
        await asyncio.sleep(0.32)
        assert task.get_name() == "tick" and not task.done()
        await loops.stop()
        assert task.cancelled()

    caplog.set_level(logging.ERROR)
    asyncio.run(main())
    assert 3 <= count <= 8  # at 0, 0.05, ... 0.30; on time, all 7
    assert "a bug in one tick" in caplog.text
    steps = _on_the_grid(due)  # booked at whole periods, the failing call's next too
    # each call books the next period, unless it ended after that was due (a loaded
    # machine): then the first one after its end, none skipped otherwise
    for k, k_next, end in zip(steps, steps[1:], ended, strict=False):
        late_by = (end - due[0]) / PERIOD - (k + 1)
        if late_by < -0.1:
            assert k_next == k + 1, steps
        elif late_by > 0.1:
            assert k_next == k + 1 + int(late_by) + 1, steps
        else:
            assert k_next in (k + 1, k + 2), steps


def test_a_late_call_skips_ticks_instead_of_catching_up():
    due: list[float] = []
    stalled_until: list[float] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def fn() -> None:
            _due_times(loops, due)
            if len(due) == 1:  # (the second call: the first has no due time)
                time.sleep(0.23)  # a stalled tick: four periods and more
                stalled_until.append(loop.time())

        loops = Loops(loop.time)
        loops.timer("tick", PERIOD, fn)
        await asyncio.sleep(0.45)
        await loops.stop()

    asyncio.run(main())
    steps = _on_the_grid(due)
    assert steps == sorted(set(steps)) and len(steps) >= 2
    # after the stall the next call is booked at the first grid time after its end: none
    # due in the past, so no burst of the ticks it missed
    assert steps[1] >= 5
    assert stalled_until[0] < due[1] + 0.01 and due[1] <= stalled_until[0] + PERIOD + 0.01
    assert len(due) <= 1 + (0.45 - 0.05 - 0.23) / PERIOD + 2


def test_a_replaced_timer_makes_no_call_even_one_already_due():
    calls: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loops = Loops(loop.time)
        loops.timer("tick", PERIOD, lambda: calls.append("old"))
        while not calls:  # (its first call ran: its next one is booked)
            await asyncio.sleep(0)
        old_next = loops._timers["tick"].handle
        assert isinstance(old_next, asyncio.TimerHandle)
        # the replacement is due just before the old timer's next call ...
        loop.call_at(old_next.when() - 0.001,
                     lambda: loops.timer("tick", 10.0, lambda: calls.append("new")))
        time.sleep(0.08)  # ... and both are due in one pass of the loop
        await asyncio.sleep(0.1)
        await loops.stop()

    asyncio.run(main())
    assert calls == ["old", "new"]

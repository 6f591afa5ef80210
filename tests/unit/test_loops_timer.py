"""The agent's tick runs from the loop's timer (loops.py `Loops.timer`): on its schedule,
through a failing call, skipping (not drifting) after a late one, and never again once
its task is replaced or stopped, even with a call already due. Real event loop; the
clock is the loop's own (the schedule is its arithmetic, checked by counting calls)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time

from exotray.agent.loops import Loops


def test_a_timer_calls_on_schedule_and_survives_a_failing_call(caplog):
    calls: list[float] = []

    def fn() -> None:
        calls.append(time.monotonic())
        if len(calls) == 2:
            raise RuntimeError("a bug in one tick")

    async def main() -> None:
        loops = Loops(time.monotonic)
        task = loops.timer("tick", 0.05, fn)
        await asyncio.sleep(0.32)
        assert task.get_name() == "tick" and not task.done()
        await loops.stop()
        assert task.cancelled()

    caplog.set_level(logging.ERROR)
    asyncio.run(main())
    assert 6 <= len(calls) <= 8  # at 0, 0.05, ... 0.30
    assert "a bug in one tick" in caplog.text
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    assert all(0.03 < g < 0.09 for g in gaps), gaps


def test_a_late_call_skips_ticks_instead_of_catching_up():
    calls: list[float] = []

    def fn() -> None:
        calls.append(time.monotonic())
        if len(calls) == 2:
            time.sleep(0.23)  # a stalled tick: four periods

    async def main() -> None:
        loops = Loops(time.monotonic)
        loops.timer("tick", 0.05, fn)
        await asyncio.sleep(0.45)
        await loops.stop()

    asyncio.run(main())
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    assert gaps[1] > 0.23 and all(g > 0.03 for g in gaps[2:]), gaps  # no burst after it
    assert len(calls) <= 2 + (0.45 - 0.05 - 0.23) / 0.05 + 2


def test_a_replaced_timer_makes_no_call_even_one_already_due():
    calls: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loops = Loops(time.monotonic)
        loops.timer("tick", 0.05, lambda: calls.append("old"))
        await asyncio.sleep(0.01)  # (its first call ran)
        loop.call_later(0.02, lambda: loops.timer("tick", 10.0, lambda: calls.append("new")))
        time.sleep(0.08)  # the replacement and the old timer's next call: due in one pass
        await asyncio.sleep(0.1)
        await loops.stop()

    asyncio.run(main())
    assert calls == ["old", "new"]

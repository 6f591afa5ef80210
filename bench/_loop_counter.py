"""Run `exotray ARGS` (e.g. `agent …`) counting its event loop's wake-ups, and optionally
under cProfile with a CPU-time clock; used by idle_agent.py.

From XT_COUNT_AFTER seconds after the loop starts until the agent stops it counts
`_run_once` (one per wake-up of the loop: what select() returned plus the timers due) and
the callbacks run, by kind (a task's name and coroutine, else the callback's name). On
stop it writes XT_COUNT_OUT.json (and XT_COUNT_OUT.prof with XT_COUNT_PROFILE=1).
"""

from __future__ import annotations

import asyncio
import collections
import cProfile
import json
import os
import sys
import time

OUT = os.environ["XT_COUNT_OUT"]
AFTER = float(os.environ.get("XT_COUNT_AFTER", "10"))
PROFILE = os.environ.get("XT_COUNT_PROFILE") == "1"

state = {"on": False, "wakeups": 0, "empty": 0, "runs": 0, "t0": 0.0, "c0": 0.0}
kinds: collections.Counter[str] = collections.Counter()
#: timers cancelled before they were due, by callback kind: the loop still wakes for each
#: at its time (a cancelled handle stays in the heap until popped), running nothing
cancelled: collections.Counter[str] = collections.Counter()
#: what each pass ran (the kinds, sorted), counted: which callbacks wake the loop alone
passes: collections.Counter[tuple[str, ...]] = collections.Counter()
this_pass: list[str] = []
profiler = cProfile.Profile(time.process_time)

_run_once = asyncio.base_events.BaseEventLoop._run_once  # type: ignore[attr-defined]
_handle_run = asyncio.events.Handle._run
_timer_cancel = asyncio.events.TimerHandle.cancel


def _kind(cb) -> str:
    owner = getattr(cb, "__self__", None)
    if isinstance(owner, asyncio.Task):
        name = owner.get_name().split("-")[0]
        return f"task {name}: {getattr(owner.get_coro(), '__qualname__', '?')}"
    if isinstance(owner, asyncio.Future):  # e.g. wait_for's or timeout()'s deadline
        return f"{getattr(cb, '__qualname__', '?')} of a {type(owner).__name__}"
    return getattr(cb, "__qualname__", None) or type(cb).__name__


def run_once(self):
    if not state["on"]:
        return _run_once(self)
    state["wakeups"] += 1
    before = state["runs"]
    this_pass.clear()
    try:
        return _run_once(self)
    finally:
        if state["runs"] == before:
            state["empty"] += 1
        passes[tuple(sorted(this_pass))] += 1


def handle_run(self):
    if state["on"]:
        state["runs"] += 1
        kind = _kind(self._callback)
        kinds[kind] += 1
        this_pass.append(kind)
    return _handle_run(self)


def timer_cancel(self):
    if state["on"] and not self._cancelled and self._scheduled:
        cancelled[_kind(self._callback)] += 1
    return _timer_cancel(self)


asyncio.base_events.BaseEventLoop._run_once = run_once  # type: ignore[attr-defined]
asyncio.events.Handle._run = handle_run  # type: ignore[method-assign]
asyncio.events.TimerHandle.cancel = timer_cancel  # type: ignore[method-assign]


def start() -> None:
    state.update(on=True, t0=time.monotonic(), c0=time.process_time())
    if PROFILE:
        profiler.enable()


async def counted(coro):
    asyncio.get_running_loop().call_later(AFTER, start)
    try:
        return await coro
    finally:
        if state["on"]:
            if PROFILE:
                profiler.disable()
                profiler.dump_stats(OUT + ".prof")
            wall = time.monotonic() - state["t0"]
            with open(OUT + ".json", "w") as f:
                json.dump({"seconds": wall, "cpu_s": time.process_time() - state["c0"],
                           "wakeups": state["wakeups"], "empty_passes": state["empty"],
                           "passes_per_s": [[" + ".join(k), round(v / wall, 2)]
                                            for k, v in passes.most_common(25)],
                           "cancelled_timers_per_s": {k: round(v / wall, 2)
                                                      for k, v in cancelled.most_common(15)},
                           "callbacks_per_s": {k: round(v / wall, 2)
                                               for k, v in kinds.most_common(30)}}, f)


_asyncio_run = asyncio.run
asyncio.run = lambda coro, **kw: _asyncio_run(counted(coro), **kw)  # type: ignore[assignment]

from exotray.cli.main import main  # noqa: E402

sys.exit(main(sys.argv[1:]))

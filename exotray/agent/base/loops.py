"""The agent's tasks, held by name ("api", "tick", "exo", "resolve"; ticking.py):
periodic ones on a fixed schedule (no drift, no overlap), restarted or stopped by name."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger("exotray.agent.runtime")


class Loops:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.tasks: dict[str, asyncio.Task] = {}
        #: the timers, by name (stopped with their task, at once)
        self._timers: dict[str, _Timer] = {}

    def __bool__(self) -> bool:
        return bool(self.tasks)

    def run(self, name: str, coro: Coroutine[Any, Any, Any]) -> asyncio.Task:
        """Run `coro` as the task `name` (replacing, cancelled, one of that name)."""
        old = self.pop(name)
        if old is not None:
            old.cancel()
        task = self.tasks[name] = asyncio.create_task(coro, name=name)
        return task

    def every(self, name: str, period: float, fn: Callable[[], Any]) -> asyncio.Task:
        return self.run(name, self._every(period, fn))

    def timer(self, name: str, period: float, fn: Callable[[], None]) -> asyncio.Task:
        """`every` for a plain function, called from the loop's timer: one pass of the
        loop a call, where a task that sleeps takes two (the timer resumes the task at
        the next pass). The task `name` only holds the timer, and ends it when
        cancelled."""
        timer = _Timer()
        task = self.run(name, self._timer(period, fn, timer))
        self._timers[name] = timer
        return task

    def pop(self, name: str) -> asyncio.Task | None:
        """Take the task `name` out (a timer's next call is cancelled now: a due call
        could otherwise still run before the task sees its cancellation)."""
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.stop()
        return self.tasks.pop(name, None)

    async def stop(self) -> None:
        """Cancel every task and wait for them to end."""
        tasks = [t for t in (self.pop(name) for name in list(self.tasks)) if t is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _timer(self, period: float, fn: Callable[[], None], timer: _Timer) -> None:
        loop = asyncio.get_running_loop()

        def fire(at: float) -> None:
            try:
                fn()
            except Exception:  # a bug in one tick must not stop the agent
                log.exception("error in %s", getattr(fn, "__name__", fn))
            finally:  # (whatever fn raised, the next call is booked, unless stopped)
                next_at, now = at + period, self.clock()
                if next_at < now:  # late: skip ticks, do not drift
                    next_at = now + period - ((now - next_at) % period)
                if not timer.stopped:
                    timer.handle = loop.call_later(next_at - now, fire, next_at)

        timer.handle = loop.call_soon(fire, self.clock())
        try:
            await loop.create_future()  # until cancelled
        finally:
            timer.stop()

    async def _every(self, period: float, fn: Callable[[], Any]) -> None:
        """Call fn (sync or async) on a fixed schedule; a slow call skips ticks, not drifts."""
        next_at = self.clock()
        while True:
            try:
                r = fn()
                if asyncio.iscoroutine(r):
                    await r
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug in one tick must not stop the agent
                log.exception("error in %s", getattr(fn, "__name__", fn))
            next_at += period
            now = self.clock()
            if next_at < now:
                next_at = now + period - ((now - next_at) % period)
            await asyncio.sleep(next_at - now)


class _Timer:
    """A timer's next call; once stopped, no call books another."""

    __slots__ = ("handle", "stopped")

    def __init__(self) -> None:
        self.handle: asyncio.Handle | None = None
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True
        if self.handle is not None:
            self.handle.cancel()

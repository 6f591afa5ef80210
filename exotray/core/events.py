"""The agent's event log: numbered events kept in memory for /v1/events."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger(__name__)

EVENT_TYPES = ("peer_up", "peer_down", "link_saturated", "link_cleared", "link_degraded",
               "link_restored", "exo_slow_path", "exo_slow_path_cleared", "capacity_test",
               "link_down", "link_up", "link_slower", "link_slower_cleared",
               "link_flapping", "link_flapping_cleared", "mtu_mismatch",
               "mtu_mismatch_cleared")


def unix(at: Any) -> float | None:
    """An event's time as unix seconds: its ISO 8601 text (as `iso` writes it), or a
    number; None for anything else."""
    if isinstance(at, int | float) and not isinstance(at, bool):
        return float(at)
    if not isinstance(at, str):
        return None
    try:
        return datetime.fromisoformat(at).timestamp()
    except ValueError:
        return None


def event_time(event: dict[str, Any]) -> float | None:
    """The event's time (unix seconds) from its ISO ``at``, None when it has none."""
    return unix(event.get("at"))


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )


class EventLog:
    def __init__(self, keep: int = 1000, sinks: list[Callable[[dict], None]] | None = None):
        self._events: deque[dict[str, Any]] = deque(maxlen=keep)
        self._seq = 0
        #: events raised per type since start (for /metrics)
        self.counts: dict[str, int] = {}
        self.sinks = sinks if sinks is not None else []

    @property
    def last_seq(self) -> int:
        return self._seq

    def resume(self, seq: int) -> None:
        """Number on from `seq` (the last one a previous run stored), so a seq names one
        event across restarts."""
        self._seq = max(self._seq, seq)

    def emit(self, type_: str, at: float, **fields: Any) -> dict[str, Any]:
        if type_ not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type_!r}")
        self._seq += 1
        self.counts[type_] = self.counts.get(type_, 0) + 1
        event: dict[str, Any] = {"seq": self._seq, "at": iso(at), "type": type_}
        event.update((k, v) for k, v in fields.items() if k not in event)
        self._events.append(event)
        for sink in self.sinks:
            try:
                sink(event)
            except Exception:  # a full disk must not stop detection
                log.exception("event sink %r failed", sink)
        return event

    def after(self, seq: int) -> list[dict[str, Any]]:
        return [e for e in self._events if e["seq"] > seq]

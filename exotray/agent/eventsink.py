"""Where events go besides /v1/events: the log, and the --events file (JSON lines)."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, TextIO

from exotray.agent.throttle import Throttled

log = logging.getLogger("exotray.agent.runtime")


class EventSink:
    def __init__(self, throttled: Throttled) -> None:
        self._throttled = throttled
        self._file: TextIO | None = None

    def open(self, where: str | None) -> None:
        """`-` is stdout, a path is appended to, None or "" is the log only; OSError
        when the file cannot be opened."""
        if where == "-":
            self._file = sys.stdout
        elif where:
            self._file = open(where, "a", encoding="utf-8")  # noqa: SIM115

    def close(self) -> None:
        if self._file is not None and self._file is not sys.stdout:
            self._file.close()
        self._file = None

    def __call__(self, event: dict[str, Any]) -> None:
        who = event.get("peer_name") or event.get("peer_id")
        if event["type"] in ("link_saturated", "link_cleared"):
            util = event.get("utilization")
            log.warning(
                "%s: link to %s via %s, utilization %s",
                event["type"], who, event.get("local_interface"),
                "unknown" if util is None else f"{util:.0%}",
            )
        elif event["type"] in ("link_degraded", "link_restored"):
            log.warning("%s: %s at %s Mbit/s (was %s, maximum %s)", event["type"],
                        event.get("interface"), event.get("to_mbit"), event.get("from_mbit"),
                        event.get("max_mbit") or "unknown")
        else:
            log.info("%s: %s", event["type"], who)
        if self._file is not None:
            try:
                self._file.write(json.dumps(event, separators=(",", ":")) + "\n")
                self._file.flush()
            except (OSError, ValueError) as e:
                self._throttled("events", logging.ERROR, "cannot write events: %s", e)

"""Where events go besides /v1/events: the log, and the --events file (JSON lines).

The file is bounded: past EVENTS_FILE_MAX_BYTES it is renamed to FILE.1 (replacing an
older one) and a new FILE is started, so at most twice that is kept (issue 18)."""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any, TextIO

from exotray.agent.base.limits import EVENTS_FILE_MAX_BYTES
from exotray.agent.base.throttle import Throttled

log = logging.getLogger("exotray.agent.runtime")


class EventSink:
    def __init__(self, throttled: Throttled, max_bytes: int = EVENTS_FILE_MAX_BYTES) -> None:
        self._throttled = throttled
        self._file: TextIO | None = None
        self._path: str | None = None
        self.max_bytes = max_bytes

    def open(self, where: str | None) -> None:
        """`-` is stdout, a path is appended to, None or "" is the log only; OSError
        when the file cannot be opened."""
        if where == "-":
            self._file = sys.stdout
        elif where:
            self._file = open(where, "a", encoding="utf-8")  # noqa: SIM115
            self._path = where

    def _rotate(self) -> None:
        assert self._file is not None and self._path is not None
        self._file.close()
        self._file = None
        try:
            os.replace(self._path, self._path + ".1")
        finally:  # if the rename fails, keep appending (the error is logged by the caller)
            self._file = open(self._path, "a", encoding="utf-8")  # noqa: SIM115
        log.info("events file %s over %d bytes: the older part is now %s.1", self._path,
                 self.max_bytes, self._path)

    def close(self) -> None:
        if self._file is not None and self._file is not sys.stdout:
            self._file.close()
        self._file = None

    def __call__(self, event: dict[str, Any]) -> None:
        who = event.get("peer_name") or event.get("peer_id")
        if event["type"] in ("link_saturated", "link_cleared"):
            util = event.get("utilization")
            log.warning(
                "%s: link to %s via %s, utilization %s%s%s",
                event["type"], who, event.get("local_interface"),
                "unknown" if util is None else f"{util:.0%}",
                f" (it goes through {event.get('now_interface')} now)"
                if event.get("reason") == "path_changed" else "",
                " (within the cooldown: not notified)" if event.get("notify") is False else "",
            )
        elif event["type"] in ("link_degraded", "link_restored"):
            log.warning("%s: %s at %s Mbit/s (was %s, maximum %s)", event["type"],
                        event.get("interface"), event.get("to_mbit"), event.get("from_mbit"),
                        event.get("max_mbit") or "unknown")
        elif event["type"] in ("exo_slow_path", "exo_slow_path_cleared"):
            inst = event.get("instance") or {}
            log.log(logging.WARNING if event["type"] == "exo_slow_path" else logging.INFO,
                    "%s: exo's %s to %s over %s%s", event["type"], inst.get("model"), who,
                    event.get("local_interface"),
                    f" while {event.get('better_interface')} is up"
                    if event["type"] == "exo_slow_path" else "")
        elif event["type"] == "mtu_mismatch":
            log.warning("mtu_mismatch: %s sends %s-byte frames; %s reach %s", event.get(
                "local_interface"), event.get("mtu"), event.get("path_mtu") or "none", who)
        elif event["type"] in ("link_down", "link_slower", "link_flapping"):
            log.warning("%s: link to %s via %s%s", event["type"], who,
                        event.get("local_interface"),
                        f" (now over {event.get('fallback_interface')})"
                        if event.get("fallback_interface") else
                        f" ({event.get('rtt_before_ms')} -> {event.get('rtt_now_ms')} ms)"
                        if event["type"] == "link_slower" else "")
        else:
            log.info("%s: %s", event["type"], who)
        if self._file is not None:
            try:
                self._file.write(json.dumps(event, separators=(",", ":")) + "\n")
                self._file.flush()
                if self._path is not None and self._file.tell() > self.max_bytes:
                    self._rotate()
            except (OSError, ValueError) as e:
                self._throttled("events", logging.ERROR, "cannot write events: %s", e)

"""`exotray doctor`: why is the cluster slow? The checks of core/doctor.py over the local
agent's cluster view and its events of the last 24 h, one line each, problems first;
`--json` for scripts; `--active` first runs, with consent, the short tests that learn what
the checks found unknown (cli/doctor_active.py), then the checks again. Exit status: 0
nothing fails, 1 a check fails, 2 a wrong option, 3 no agent answers (130: a test
interrupted)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from exotray.cli.reads import AgentUnavailable, fetch
from exotray.core import doctor
from exotray.core.doctor_view import LOSS_HISTORY

EXIT_NO_AGENT = 3
#: events of the last day read at most (the API's bound for one answer)
EVENTS_LIMIT = 10_000
_COLOURS = {"fail": "\033[31m", "warn": "\033[33m", "pass": "\033[32m"}
_WORDS = {"fail": "FAIL", "warn": "warn", "pass": "ok"}


def read(args: argparse.Namespace, now: float, loss_history: dict[str, Any] | None = None,
         ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The cluster view and this node's events of the last day (from its database; where
    that read fails, the last ones it keeps in memory), with its links' day of loss (read,
    or `loss_history` when given). A busy agent's history is not waited for: a link it
    does not answer at once is said unread (the reads' budget is a second)."""
    cluster = fetch(args, "/v1/cluster")
    try:
        events = fetch(args, "/v1/events", since=f"{now - doctor.PAST_S:.3f}",
                      until=f"{now + 60:.3f}", limit=EVENTS_LIMIT)["events"]
    except AgentUnavailable:
        events = fetch(args, "/v1/events", after=0)["events"]
    from exotray.cli.doctor_history import attach  # (the loss check's last 24 h)
    attach(cluster, now, lambda **p: fetch(args, "/v1/history", tries=1, **p), loss_history)
    return cluster, events


def lines(checks: list[doctor.Check], colour: bool = False) -> list[str]:
    """One line per check ("FAIL  mtu  what it found. What to do."), then the count."""
    width = max(len(c.id) for c in checks)
    out = []
    for c in checks:
        word = f"{_WORDS[c.status]:<4}"
        if colour:
            word = f"{_COLOURS[c.status]}{word}\033[0m"
        fix = f" {c.fix}" if c.fix and c.status != "pass" else ""
        out.append(f"{word}  {c.id:<{width}}  {c.summary}{fix}")
    fails = sum(c.status == "fail" for c in checks)
    warns = sum(c.status == "warn" for c in checks)
    out.append(f"{fails} failing, {warns} warning, {len(checks) - fails - warns} passing "
               f"of {len(checks)} checks.")
    return out


def _active(args: argparse.Namespace, cluster: dict[str, Any],
            checks: list[doctor.Check]) -> list[doctor.Check] | int:
    """--active: the tests the checks call for (cli/doctor_active.py), then the checks
    again over the view that has learned from them; an exit status when interrupted."""
    from exotray.cli import doctor_active

    kept = doctor_active.run(args, cluster, checks)
    if isinstance(kept, int):
        return kept
    if not kept:
        return checks
    # the measured capacity is in the agent's view from its next snapshot on
    deadline = time.monotonic() + doctor_active.SETTLE_S
    while (not doctor_active.settled(fetch(args, "/v1/cluster"), kept)
           and time.monotonic() < deadline):
        time.sleep(0.25)
    now = time.time()
    cluster, events = read(args, now, cluster.get(LOSS_HISTORY))  # (the day read before)
    return doctor.run(cluster, events, now, sys.platform)


def cmd_doctor(args: argparse.Namespace) -> int:
    from exotray.cli.reads import _use_units

    _use_units(args)
    now = time.time()
    try:
        cluster, events = read(args, now)
        checks = doctor.run(cluster, events, now, sys.platform)
        if args.active:
            got = _active(args, cluster, checks)
            if isinstance(got, int):
                return got
            checks = got
    except AgentUnavailable as e:
        print(str(e), file=sys.stderr)
        return EXIT_NO_AGENT
    try:
        if args.json:
            json.dump({"checks": [c.as_dict() for c in checks]}, sys.stdout, indent=2)
            print()
        else:
            colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
            print("\n".join(lines(checks, colour)))
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return doctor.exit_status(checks)

"""`exotray doctor --active`: the short tests that can learn what the checks found unknown,
run with the user's consent; cli/doctor.py then reads the cluster again and runs the
checks again, so that what it prints is what was learned.

Capacity: this node's links that `capacity_unknown` names for traffic over an unknown
capacity get `exotray measure`'s test (the agent's `/v1/control/measure`, so its rules:
the control token, the peer's consent, one test at a time, bounded in time and bytes,
stopped when we go away), one per interface that carries them (a capacity is an
interface's), at most MAX_TESTS, each of measure's default length. Doctor picks these
links itself, so it asks first: on a terminal, yes or no; with --yes it does not ask;
without a terminal it says what it would run and runs nothing. Other nodes' links are
measured from those nodes.

MTU: no probe. The agent checks each link's path MTU by itself, first within 20 s of a
link or its MTU appearing, then every minute while not known (core/pathmtu.py); what
stays unknown longer (a peer agent without MTU probes, no don't-fragment here, an
interface without an MTU) no probe of ours would learn either.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from exotray.core import doctor

#: capacity tests one doctor runs at most (about 2 x SECONDS each)
MAX_TESTS = 3
#: per direction, and streams: `exotray measure`'s defaults
SECONDS = 5.0
STREAMS = 4
#: how long the agent's view may take to show a measured capacity (its next snapshot)
SETTLE_S = 5.0
#: exit status when interrupted during a test (as `exotray measure`)
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class Target:
    link_id: str
    #: "address:port": names the link's peer to the measure endpoint, never ambiguously
    peer: str
    interface: str | None
    #: "a → b via lo"
    words: str


def _unknown(cluster: dict[str, Any], checks: list[doctor.Check]) -> set[str]:
    """The links `capacity_unknown` names for traffic over an unknown capacity."""
    named = {i for c in checks if c.id == "capacity_unknown" and c.status != "pass"
             for i in c.links}
    return {lk["id"] for n in cluster.get("nodes") or [] for lk in n.get("links") or []
            if lk.get("id") in named and not lk.get("capacity_bytes_per_s")}


def targets(cluster: dict[str, Any], checks: list[doctor.Check],
            ) -> tuple[list[Target], list[Target], list[str]]:
    """This node's links to measure (one per carrying interface, at most MAX_TESTS), those
    left for another run, and the other nodes with such links (measured from there)."""
    unknown = _unknown(cluster, checks)
    nodes = cluster.get("nodes") or []
    own = nodes[0] if nodes else {}
    me = (own.get("node") or {}).get("name") or "this node"
    picked: list[Target] = []
    carriers: set[str | None] = set()
    for lk in own.get("links") or []:
        carrier = lk.get("member_interface") or lk.get("local_interface")
        if lk["id"] not in unknown or carrier in carriers:
            continue
        carriers.add(carrier)
        who = lk.get("peer_name") or lk.get("peer_address")
        picked.append(Target(lk["id"], f"{lk.get('peer_address')}:{lk.get('peer_port')}",
                             lk.get("local_interface"),
                             f"{me} → {who} via {lk.get('local_interface')}"))
    others = [(n.get("node") or {}).get("name") or "?" for n in nodes[1:]
              if any(lk.get("id") in unknown for lk in n.get("links") or [])]
    return picked[:MAX_TESTS], picked[MAX_TESTS:], others


def consent(args: argparse.Namespace, plan: str, say: Callable[[str], None]) -> bool:
    """Whether the user lets `plan` run: --yes, else asked on a terminal; without one,
    said and not run."""
    if args.yes:
        return True
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        say(f"would run {plan}; not run: there is no terminal to ask on (give --yes to "
            "run it)")
        return False
    sys.stderr.write(f"exotray doctor --active: run {plan}? [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except KeyboardInterrupt:
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    say("not run")
    return False


def run(args: argparse.Namespace, cluster: dict[str, Any], checks: list[doctor.Check],
        ) -> list[str] | int:
    """The capacity tests the checks call for, with consent: the ids of the links whose
    capacity the agent now has, or EXIT_INTERRUPTED when the user stopped a test (the
    agent sees the connection close and stops it on both ends)."""
    import httpx

    from exotray.cli.reads import NoToken, control_token, measured_line, post_measure

    def say(text: str) -> None:
        print(f"exotray doctor --active: {text}", file=sys.stderr)

    picked, later, others = targets(cluster, checks)
    if others:
        say(f"links of {', '.join(others)} carry traffic of an unknown capacity: run "
            "`exotray doctor --active` there to measure them")
    if not picked:
        say("no link of this node carries traffic of an unknown capacity: no capacity "
            "test to run. (The agent checks path MTUs by itself: no probe is needed.)")
        return []
    if later:
        say(f"{len(later)} more link(s) to measure after these: run it again")
    plan = (f"{len(picked)} capacity test{'s' if len(picked) > 1 else ''} (a bulk TCP "
            f"transfer, {SECONDS:g} s each way, about {2 * SECONDS * len(picked):g} s in "
            f"all) of {'; '.join(t.words for t in picked)}")
    if not consent(args, plan, say):
        return []
    try:
        token = control_token(args)
    except NoToken as e:
        say(f"no capacity test run: {e}")
        return []
    kept: list[str] = []
    for t in picked:
        say(f"measuring {t.words} for about {2 * SECONDS:g} s…")
        body = {"peer": t.peer, "seconds": SECONDS, "streams": STREAMS}
        if t.interface:
            body["interface"] = t.interface
        try:
            r = post_measure(args, token, body, SECONDS)
            data = r.json()
        except KeyboardInterrupt:
            say("interrupted; the test is cancelled")
            return EXIT_INTERRUPTED
        except (httpx.HTTPError, ValueError) as e:
            say(f"the test of {t.words} failed: {e or type(e).__name__}")
            continue
        if r.status_code != 200:
            say(f"the test of {t.words} did not run: {data.get('error', r.text)}")
            continue
        say(measured_line(data))
        if data.get("capacity_of"):
            kept.append(t.link_id)
    return kept


def settled(cluster: dict[str, Any], link_ids: list[str]) -> bool:
    """Whether the view shows a capacity for each of these links of this node."""
    links = {lk["id"]: lk for lk in ((cluster.get("nodes") or [{}])[0].get("links") or [])}
    return all(links.get(i, {}).get("capacity_bytes_per_s") for i in link_ids)

"""`exotray doctor`'s checks of the links as they are now: `reachable`, `udp_probes`,
`fastest_link`, `link_speed`, `mtu`, `capacity_unknown` (core/doctor.py runs them)."""

from __future__ import annotations

from typing import Any

from exotray.core import fmt
from exotray.core.doctor_view import (
    BUSY_BYTES_PER_S,
    FASTER_BY,
    KIND_RANK,
    Check,
    Problem,
    View,
    found,
    passed,
    rate_of,
)

#: traffic at this multiple of a link's capacity means the capacity is wrong
OVER_CAPACITY = 1.2


def _port(peer: dict[str, Any]) -> str:
    addrs = peer.get("addresses") or []
    return addrs[0].rsplit(":", 1)[-1] if addrs else "52480"


def udp_blocked(v: View) -> dict[str, dict[str, Any]]:
    """The peers (by id) whose agent answers over HTTP while none of its addresses
    answers our probes: something drops UDP on the agent's port. Known for a peer given
    with --peer (its snapshot is asked for whether or not it answers probes: its
    `reachable` is now), or one whose snapshot still arrives (fresh)."""
    out = {}
    for p in v.peers:
        if p.get("up") or not p.get("id"):
            continue
        node = v.by_id.get(p["id"])
        manual = "manual" in (p.get("sources") or [])
        if (manual and p.get("reachable") and not p.get("last_error")) or (
                node is not None and v.fresh(node)):
            out[p["id"]] = p
    return out


def udp_probes(v: View) -> Check:
    blocked = udp_blocked(v)
    if not blocked:
        return passed("udp_probes", "every peer whose agent answers also answers probes")
    names = [p.get("name") or p["id"] for p in blocked.values()]
    if len(blocked) >= 2 and len(blocked) == len(v.peers):
        port = _port(next(iter(blocked.values())))
        return Check("udp_probes", "fail",
                     f"no peer answers probes on UDP {port}, while their agents answer "
                     f"over HTTP: UDP is dropped on this node ({v.own_name}) or its network.",
                     f"Open UDP port {port} (in and out) in {v.own_name}'s firewall.",
                     (v.own_name,))
    links = tuple(lk["id"] for lk in v.own.get("links") or [] if lk.get("peer_id") in blocked)
    port = _port(next(iter(blocked.values())))
    return Check("udp_probes", "fail",
                 f"{', '.join(names)} answer{'s' if len(names) == 1 else ''} over HTTP but "
                 f"not to probes on UDP {port}: a firewall drops UDP there.",
                 " ".join(f"Open UDP {_port(p)} on {p.get('name') or p['id']}."
                          for p in blocked.values()),
                 tuple(names), links)


def reachable(v: View) -> Check:
    blocked = udp_blocked(v)
    problems: list[Problem] = []
    gone: set[str] = set(blocked)
    for p in v.peers:
        if p.get("id") in blocked:
            continue
        who = p.get("name") or p.get("id") or p.get("key") or "?"
        addrs = ", ".join(p.get("addresses") or []) or "no address yet"
        mine = [lk for lk in v.own.get("links") or [] if lk.get("peer_id") == p.get("id")
                and p.get("id")]
        if not p.get("up"):
            if p.get("id"):
                gone.add(p["id"])
            problems.append(Problem(
                "fail", f"{who} answers nothing ({addrs})", (who,),
                tuple(lk["id"] for lk in mine),
                f"Check that {who} is on and its exotray agent runs; open UDP and TCP "
                f"{_port(p)} there."))
            continue
        down = [lk for lk in mine if lk.get("state") == "down"]
        if down:
            problems.append(Problem(
                "warn", f"{who} does not answer on "
                f"{', '.join(lk['peer_address'] for lk in down)} (it does on another address)",
                (who,), tuple(lk["id"] for lk in down),
                f"Check the cable or network of that address of {who}, or why it announces "
                "an address it cannot be reached on."))
    for node in v.live()[1:]:
        if node["node"]["id"] in gone:
            continue
        for lk in node.get("links") or []:
            peer = v.peer_node(lk)
            if (lk.get("state") != "down" or lk.get("peer_id") in gone or peer is None
                    or not v.fresh(peer)):
                continue
            problems.append(Problem(
                "warn", f"{v.where(node, lk)} is down ({lk['peer_address']})",
                (v.name(node), v.peer_name(lk)), (lk["id"],),
                "Check the cable or network between them."))
    n = len(v.peers)
    return found("reachable", problems,
                 f"{n} peer{'s' if n != 1 else ''}, every one answering on every address"
                 if n else "no peer known yet (unknown)",
                 "Check the peers' agents, cables and firewalls.")


def _faster(a: tuple[float | None, int], b: tuple[float | None, int]) -> bool:
    """Whether a link of (capacity, kind rank) `a` is clearly faster than `b`."""
    if a[0] and b[0]:
        return a[0] >= FASTER_BY * b[0]
    return a[1] > b[1]


def fastest_link(v: View) -> Check:
    problems: list[Problem] = []
    pairs = 0
    for node in v.live():
        groups: dict[str, list[dict[str, Any]]] = {}
        for lk in node.get("links") or []:
            if lk.get("state") != "down":
                groups.setdefault(lk.get("peer_id") or lk.get("peer_address"), []).append(lk)
        for links in groups.values():
            if len(links) < 2:
                continue
            pairs += 1
            speed = {lk["id"]: (lk.get("capacity_bytes_per_s"),
                                KIND_RANK.get(v.kind(node, lk) or "", 1)) for lk in links}
            best = max(links, key=lambda lk: (speed[lk["id"]][0] or 0, speed[lk["id"]][1]))
            for lk in links:
                if lk is best or not _faster(speed[best["id"]], speed[lk["id"]]):
                    continue
                if lk.get("exo_instances"):
                    models = ", ".join(sorted({str(i.get("model")).rsplit("/", 1)[-1]
                                               for i in lk["exo_instances"]}))
                    problems.append(Problem(
                        "fail", f"exo ({models}) on {v.name(node)} reaches "
                        f"{v.peer_name(lk)} via {v.via(lk)} while {v.via(best)} is up and "
                        "faster", (v.name(node), v.peer_name(lk)), (lk["id"], best["id"]),
                        f"Give exo {best['peer_address']} for {v.peer_name(lk)} (or take the "
                        f"slower network out of its placement) so it uses {v.via(best)}."))
                elif rate_of(lk) >= BUSY_BYTES_PER_S and rate_of(best) < BUSY_BYTES_PER_S:
                    problems.append(Problem(
                        "warn", f"{v.name(node)}'s traffic seems to take {v.via(lk)} at "
                        f"{fmt.rate(rate_of(lk))} while {v.via(best)} to "
                        f"{v.peer_name(lk)} is up and idle", (v.name(node), v.peer_name(lk)),
                        (lk["id"], best["id"]),
                        f"Point the application at {best['peer_address']} for "
                        f"{v.peer_name(lk)}."))
    for ev in v.active("exo_slow_path", "exo_slow_path_cleared"):
        if any(ev.get("link_id") in p.links for p in problems):
            continue
        problems.append(Problem(
            "fail", f"exo on {v.own_name} reaches {ev.get('peer_name') or '?'} via "
            f"{ev.get('local_label') or ev.get('local_interface')} while "
            f"{ev.get('better_label') or ev.get('better_interface')} is better",
            (v.own_name,), tuple(x for x in (ev.get("link_id"), ev.get("better_link_id")) if x),
            "Make exo use the faster link (its placement, or the peer's address it is given)."))
    return found("fastest_link", problems,
                 f"{pairs} pair{'s' if pairs != 1 else ''} with parallel links, each on its "
                 "fastest" if pairs else "no pair of nodes has two links up",
                 "Use the fastest link.")


def link_speed(v: View) -> Check:
    problems: list[Problem] = []
    known = 0
    for node in v.live():
        carriers: dict[str, list[str]] = {}
        for lk in node.get("links") or []:
            for name in {lk.get("local_interface"), lk.get("member_interface")} - {None}:
                carriers.setdefault(name, []).append(lk["id"])
        for name, link_ids in carriers.items():
            it = v.iface(node, name)
            if it is None or it.get("kind") not in ("ethernet", "thunderbolt"):
                continue
            speed, top = it.get("speed_mbit"), it.get("max_speed_mbit")
            if not speed or not top:
                continue
            known += 1
            if speed < top:
                problems.append(Problem(
                    "fail", f"{v.name(node)}'s {it.get('label') or name} ({name}) runs at "
                    f"{fmt.mbit(speed)} of {fmt.mbit(top)}", (v.name(node),), tuple(link_ids),
                    f"Reseat or replace the cable of {name} on {v.name(node)} (a "
                    f"{fmt.mbit(top)} port needs a cable and a far end that do "
                    f"{fmt.mbit(top)})."))
    if not known and not problems:
        return passed("link_speed", "no port that carries a link says its maximum (unknown)")
    return found("link_speed", problems,
                 f"{known} port{'s' if known != 1 else ''} at {'its' if known == 1 else 'their'}"
                 " maximum", "Replace the cable.")


def mtu(v: View) -> Check:
    problems: list[Problem] = []
    ok = unknown = 0
    for node in v.live():
        for lk in node.get("links") or []:
            if lk.get("state") == "down":
                continue
            if lk.get("mtu_ok") is None:
                unknown += 1
            elif lk["mtu_ok"]:
                ok += 1
            else:
                got = lk.get("path_mtu")
                problems.append(Problem(
                    "fail", f"{v.where(node, lk)}: frames of its MTU do not reach the peer "
                    + (f"(only {got} bytes do)" if got else "(not even 1500 bytes do)"),
                    (v.name(node), v.peer_name(lk)), (lk["id"],),
                    f"Set the same MTU on {v.name(node)}'s {lk.get('local_interface')}, on "
                    f"{v.peer_name(lk)} and on every switch between them."))
    more = f"; {unknown} not known yet" if unknown else ""
    return found("mtu", problems,
                 f"{ok} link{'s' if ok != 1 else ''} pass{'' if ok != 1 else 'es'}{more}"
                 if ok else "not known yet on any link (unknown)",
                 "Set the same MTU on both ends.")


def capacity_unknown(v: View) -> Check:
    problems: list[Problem] = []
    for node in v.live():
        for lk in node.get("links") or []:
            rate, cap = rate_of(lk), lk.get("capacity_bytes_per_s")
            if (lk.get("state") == "down" or rate < BUSY_BYTES_PER_S
                    or v.kind(node, lk) == "loopback"):  # (all of the host's own traffic)
                continue
            where = v.where(node, lk)
            measure = f"On {v.name(node)}: exotray measure {v.peer_name(lk)}"
            if not cap:
                problems.append(Problem(
                    "warn", f"{where} carries {fmt.rate(rate)} of an unknown capacity",
                    (v.name(node),), (lk["id"],), measure + "."))
            elif rate >= OVER_CAPACITY * cap:
                src = lk.get("capacity_source") or "unknown"
                problems.append(Problem(
                    "fail", f"{where} carries {fmt.rate(rate)}, over its capacity of "
                    f"{fmt.capacity_rate(cap)} ({src}): the capacity is wrong",
                    (v.name(node),), (lk["id"],),
                    f"{measure}, or correct the capacity set for "
                    f"{lk.get('member_interface') or lk.get('local_interface')} "
                    "(--capacity, the config's [capacity], Preferences)."))
    return found("capacity_unknown", problems,
                 "every link with traffic has a capacity it stays within",
                 "Measure the link's capacity.")

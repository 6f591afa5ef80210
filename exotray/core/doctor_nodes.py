"""`exotray doctor`'s checks of the nodes and their hardware: `versions`, `rdma`,
`tb_bridge`, `local_network`, `wifi_awdl`, `history` (core/doctor.py runs them)."""

from __future__ import annotations

from typing import Any

from exotray.core import fmt
from exotray.core.doctor_view import BUSY_BYTES_PER_S, Check, Problem, View, found, passed
from exotray.core.health import LOCAL_NETWORK_DENIED

#: a Thunderbolt link at least this fast (Mbit/s) is Thunderbolt 5 (TB4 is 40 Gb/s)
TB5_MBIT = 80_000
#: free space under the history database that warns (bytes)
LOW_DISK_BYTES = 1 << 30


def versions(v: View) -> Check:
    problems: list[Problem] = []
    by_version: dict[str, list[str]] = {}
    for node in v.nodes:
        by_version.setdefault(node["node"].get("version") or "?", []).append(v.name(node))
    if len(by_version) > 1:
        ours = v.own["node"].get("version") if v.own else "?"
        others = {ver: names for ver, names in by_version.items() if ver != ours}
        problems.append(Problem(
            "warn", f"{v.own_name} runs exotray {ours}; "
            + "; ".join(f"{', '.join(names)} run{'s' if len(names) == 1 else ''} {ver}"
                        for ver, names in sorted(others.items())),
            tuple(n for names in others.values() for n in names),
            fix="Install the same exotray version on every node."))
    ours = v.cluster.get("sharing")
    old = [p.get("name") or p.get("key") for p in v.peers
           if ours == "stream" and p.get("sharing") == "poll"]
    if old:
        problems.append(Problem(
            "warn", f"{', '.join(old)} speak{'s' if len(old) == 1 else ''} the previous "
            "sharing protocol (polled every interval)", tuple(old),
            fix="Upgrade exotray there."))
    other = [i for i in (v.cluster.get("discovery") or {}).get("ignored") or []
             if i.get("reason") == "version_mismatch"]
    if other:
        problems.append(Problem(
            "fail", f"{', '.join(str(i.get('service')) for i in other)} run"
            f"{'s' if len(other) == 1 else ''} an exotray of another protocol: not monitored",
            fix="Install the same exotray version on every node."))
    return found("versions", problems,
                 f"every node runs exotray {next(iter(by_version), '?')}",
                 "Install the same exotray version on every node.")


def _tb5(v: View, node: dict[str, Any], link: dict[str, Any]) -> bool:
    it = v.carrier(node, link)
    if it is None or it.get("kind") != "thunderbolt":
        return False
    return max(it.get("speed_mbit") or 0, it.get("max_speed_mbit") or 0) >= TB5_MBIT


def rdma(v: View) -> Check:
    """TB5 links where exo runs without RDMA, RDMA off or on at one end only. From the
    links' `rdma_enabled` (set where exo's JACCL traffic is not counted: macOS) and exo's
    instances over the link; exo's own nodeRdmaCtl would plug in here, per node."""
    problems: list[Problem] = []
    pairs: dict[frozenset[str], dict[str, tuple[bool, str]]] = {}
    rings: set[frozenset[str]] = set()
    tb5 = 0
    for node in v.live():
        for lk in node.get("links") or []:
            if lk.get("state") == "down":
                continue
            fast = _tb5(v, node, lk)
            tb5 += fast
            if lk.get("rdma_enabled") is not None and lk.get("peer_id"):
                key = frozenset((node["node"]["id"], lk["peer_id"]))
                pairs.setdefault(key, {})[v.name(node)] = (lk["rdma_enabled"], lk["id"])
            ring = [i for i in lk.get("exo_instances") or [] if i.get("backend") == "ring"]
            pair = frozenset((node["node"]["id"], lk.get("peer_id") or lk["peer_address"]))
            if fast and ring and pair not in rings:
                rings.add(pair)
                model = str(ring[0].get("model")).rsplit("/", 1)[-1]
                problems.append(Problem(
                    "warn", f"exo runs {model} as a TCP ring over Thunderbolt 5 between "
                    f"{v.name(node)} and {v.peer_name(lk)}, not over RDMA",
                    (v.name(node), v.peer_name(lk)), (lk["id"],),
                    "Enable RDMA on both Macs (in Recovery: rdma_ctl enable) and place the "
                    "model with exo's MLX RDMA (JACCL) backend."))
            down = [p["device"] for p in lk.get("rdma_ports") or []
                    if p.get("state") not in (None, "PORT_ACTIVE")]
            if down and lk.get("rdma_enabled"):
                problems.append(Problem(
                    "warn", f"{v.name(node)}'s RDMA device{'s' if len(down) > 1 else ''} "
                    f"{', '.join(down)} for exo's traffic to {v.peer_name(lk)} "
                    f"{'are' if len(down) > 1 else 'is'} not active", (v.name(node),),
                    (lk["id"],), f"Check the Thunderbolt cable of {lk.get('local_interface')}"
                    f" on {v.name(node)} (ibv_devinfo shows the port's state)."))
    for ends in pairs.values():
        on = [n for n, (e, _) in ends.items() if e]
        off = [n for n, (e, _) in ends.items() if not e]
        if off:
            problems.append(Problem(
                "fail", f"RDMA is off on {', '.join(off)}"
                + (f" (on at {', '.join(on)})" if on else "") + " where exo uses it",
                tuple(off), tuple(i for _, i in ends.values()),
                f"On {', '.join(off)}: boot into Recovery and run `rdma_ctl enable`."))
    exo = (v.own.get("exo") or {}) if v.own else {}
    local = exo.get("rdma_enabled")
    local = exo.get("rdma_ctl") if local is None else local  # exo's nodeRdmaCtl
    if local is False and any(_tb5(v, v.own, lk) for lk in v.own.get("links") or []
                              if lk.get("state") != "down"):
        problems.append(Problem(
            "warn", f"RDMA is off on {v.own_name}, which has Thunderbolt 5 links",
            (v.own_name,), fix="Boot into Recovery and run `rdma_ctl enable`."))
    if not problems and not tb5 and not pairs:
        return passed("rdma", "no Thunderbolt 5 link and no RDMA in use (unknown elsewhere)")
    return found("rdma", problems,
                 "RDMA is on at both ends wherever exo uses it" if pairs
                 else f"{tb5} Thunderbolt 5 link{'s' if tb5 != 1 else ''}, no exo ring "
                 "over them", "Enable RDMA.")


def _bridges(v: View, node: dict[str, Any]) -> set[str]:
    return {i["name"] for i in node.get("interfaces") or [] if i.get("members")}


def tb_bridge(v: View) -> Check:
    """Thunderbolt Bridges that join in a loop, or reach one peer through two cables,
    from our bridge members (the cable each link's peer is reached through). exo's
    `thunderboltBridgeCycles` would plug in here where exo runs."""
    edges: set[frozenset[str]] = set()
    problems: list[Problem] = []
    seen = False
    for node in v.live():
        bridges = _bridges(v, node)
        members: dict[str, set[str]] = {}
        for lk in node.get("links") or []:
            m = lk.get("member_interface")
            if lk.get("local_interface") not in bridges or not m or not lk.get("peer_id"):
                continue
            if (v.iface(node, m) or {}).get("kind") != "thunderbolt":
                continue
            seen = True
            members.setdefault(lk["peer_id"], set()).add(m)
            edges.add(frozenset((node["node"]["id"], lk["peer_id"])))
        for peer, cables in members.items():
            if len(cables) > 1:
                problems.append(Problem(
                    "fail", f"{v.name(node)}'s bridge reaches {v.names.get(peer, peer)} "
                    f"through {len(cables)} cables ({', '.join(sorted(cables))})",
                    (v.name(node), v.names.get(peer, peer)),
                    fix=f"Take all but one of {', '.join(sorted(cables))} out of the "
                    "Thunderbolt Bridge (or unplug one cable)."))
    exo = (v.own.get("exo") or {}) if v.own else {}
    if exo.get("tb_bridge_cycles"):  # exo's thunderboltBridgeCycles (its node ids)
        seen = True
        n, ring = exo["tb_bridge_cycles"], exo.get("tb_bridge_cycle") or []
        problems.append(Problem(
            "fail", f"exo finds {n} Thunderbolt Bridge loop{'s' if n != 1 else ''}"
            + (f", {v.own_name} in one of {len(ring)} nodes" if ring else ""), (v.own_name,),
            fix="Turn off the Thunderbolt Bridge on all but one Mac of the loop (System "
            "Settings › Network), or remove a cable: a bridge loop floods the network."))
    loop = _cycle(edges)
    if loop:
        names = [v.names.get(n, n) for n in loop]
        problems.append(Problem(
            "fail", f"the Thunderbolt Bridges of {', '.join(names)} form a loop",
            tuple(names), fix="Turn off the Thunderbolt Bridge on all but one of these Macs "
            "(System Settings › Network), or remove a cable: a bridge loop floods the "
            "network."))
    if not seen:
        return passed("tb_bridge", "no link goes through a Thunderbolt Bridge (unknown "
                      "where a bridge's cables are not known)")
    return found("tb_bridge", problems, "no bridge loop, one cable to each peer",
                 "Remove the loop.")


def _cycle(edges: set[frozenset[str]]) -> list[str]:
    """The nodes of a component of the undirected graph that has a cycle (at least as
    many edges as nodes), sorted; [] when it is a forest."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    looped: set[str] = set()
    for e in edges:
        a, b = sorted(e) if len(e) == 2 else (next(iter(e)),) * 2
        ra, rb = root(a), root(b)
        if ra == rb:
            looped.add(ra)
        else:
            parent[ra] = rb
    if not looped:
        return []
    comp = {root(x) for x in looped}
    return sorted(x for x in parent if root(x) in comp)


def local_network(v: View) -> Check:
    if LOCAL_NETWORK_DENIED in (v.own.get("warnings") or []):
        return Check("local_network", "fail",
                     f"macOS refuses every probe {v.own_name} sends to the local network "
                     "(Local Network access is not granted).",
                     "System Settings › Privacy & Security › Local Network: turn exotray on, "
                     "then quit and reopen it.", (v.own_name,))
    if v.platform is not None and v.platform != "darwin":
        return passed("local_network", "not macOS: no Local Network permission to grant")
    return passed("local_network", f"{v.own_name}'s probes are not refused (other nodes: "
                  "unknown)")


def wifi_awdl(v: View) -> Check:
    problems: list[Problem] = []
    seen = False
    for node in v.live():
        awdl = [i["name"] for i in node.get("interfaces") or []
                if i.get("name", "").startswith("awdl")]
        seen |= bool(awdl)
        up = [i["name"] for i in node.get("interfaces") or []
              if i.get("name", "").startswith("awdl") and i.get("up")]
        busy = [lk for lk in node.get("links") or [] if v.kind(node, lk) == "wifi"
                and lk.get("state") != "down"
                and max(lk.get("rx_bytes_per_s") or 0, lk.get("tx_bytes_per_s") or 0)
                >= BUSY_BYTES_PER_S]
        if up and busy:
            rate = max(max(lk.get("rx_bytes_per_s") or 0, lk.get("tx_bytes_per_s") or 0)
                       for lk in busy)
            problems.append(Problem(
                "warn", f"AWDL ({', '.join(up)}) is up on {v.name(node)} while its Wi-Fi "
                f"carries {fmt.rate(rate)}: it hops channels and adds latency spikes",
                (v.name(node),), tuple(lk["id"] for lk in busy),
                f"On {v.name(node)} turn off AirDrop and Handoff (or Universal Control and "
                "Sidecar) while the cluster runs over Wi-Fi; better, cable it."))
    if not problems and not seen:
        return passed("wifi_awdl", "no AWDL interface on any node (not macOS, or not shown)")
    return found("wifi_awdl", problems, "no Wi-Fi link carries traffic while AWDL is up",
                 "Turn off AirDrop.")


def history(v: View) -> Check:
    """This node's history database, as its snapshot's local `history` says (an agent
    from before it said: unknown)."""
    h = v.own.get("history") if v.own else None
    if not isinstance(h, dict):
        return passed("history", "not reported by this agent (unknown)")
    days, db = h.get("days"), h.get("database")
    who = (v.own_name,)
    if db == "off" or not days:
        return Check("history", "warn", "history is off (history_days = 0): only the last "
                     "hour is kept, in memory.", "Set history_days (e.g. 30) in the config.",
                     who)
    free = h.get("free_bytes")
    if db != "ok":
        return Check("history", "fail", f"the history database {h.get('path') or ''} cannot "
                     f"be used ({h.get('error') or db}): the last hour is kept in memory.",
                     "Check the state dir's disk, space and permissions (`exotray agent "
                     "--state-dir`).", who)
    if h.get("behind_since"):
        return Check("history", "fail", f"the history database has not taken samples since "
                     f"{h['behind_since']} (a full or stuck disk); they wait in memory.",
                     "Free space on the state dir's disk.", who)
    if free is not None and free < LOW_DISK_BYTES:
        return Check("history", "warn", f"{free / (1 << 20):.0f} MiB free under the "
                     "history database.", "Free space on the state dir's disk.", who)
    return passed("history", f"written, {days:g} days kept"
                  + (f", {free / (1 << 30):.0f} GiB free" if free is not None else ""))

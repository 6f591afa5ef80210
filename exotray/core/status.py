"""What `exotray status` prints: the cluster as a table, then why a peer the user expects
may be missing, in plain words. Pure functions over the /v1/cluster dict."""

from __future__ import annotations

from exotray.core import fmt, queueing
from exotray.core.topology import node_condition


def status_lines(cluster: dict) -> list[str]:
    names = {n["node"]["id"]: n["node"]["name"] for n in cluster.get("nodes", [])}
    rows = [("FROM", "TO", "VIA", "RTT", "RX", "TX", "UTIL", "STATE")]
    for node in cluster.get("nodes", []):
        condition = node_condition(node)
        for lk in node.get("links", []):
            peer = lk.get("peer_name") or names.get(lk.get("peer_id")) or lk["peer_address"]
            iface = lk.get("local_label") or lk.get("local_interface") or "?"
            if lk.get("local_interface") and lk.get("local_label") != lk.get("local_interface"):
                iface = f"{lk['local_label']} ({lk['local_interface']})"
            if lk.get("member_interface"):  # a bridge's cable: the numbers are its
                iface += f" via {lk['member_interface']}"
            rows.append((
                node["node"]["name"],
                f"{peer} {lk['peer_address']}",
                iface,
                # a down link's last RTT, or a stale node's, is not its RTT now
                fmt.ms(lk.get("rtt_ms") if lk["state"] != "down" and condition is None
                       else None),
                _rate(lk, "rx"),
                _rate(lk, "tx"),
                fmt.percent(lk.get("utilization")),
                # "saturated (+170 ms queueing)" when the queueing delay matters
                " ".join([lk["state"], *[f"({n})" for n in [queueing.note(lk)] if n]])
                if condition is None else "paused" if condition[0] == "paused"
                else f"{lk['state']} {condition[1]} s ago (no answer since)",
            ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    if len(rows) == 1:
        lines = ["no links yet."]
    return lines + exo_lines(cluster) + diagnostics(cluster)


def _rate(lk: dict, way: str) -> str:
    """The carrier's rate; where the link's own bytes are read, "its own of that"."""
    total = fmt.rate(lk.get(f"{way}_bytes_per_s"))
    if not lk.get("flow_source"):
        return total
    return f"{fmt.rate(lk.get(f'flow_{way}_bytes_per_s'))} of {total}"


def _short(model: str) -> str:
    return model.rsplit("/", 1)[-1] or model


def exo_lines(cluster: dict) -> list[str]:
    """One line on the local exo node (none when `--exo-url ""` turned it off): what it
    runs and over which links, or why it cannot be read."""
    nodes = cluster.get("nodes") or [{}]
    ex = nodes[0].get("exo")
    if not isinstance(ex, dict):
        return []
    url, status, detail = ex.get("url"), ex.get("status"), ex.get("detail")
    if status == "absent":
        return [f"exo: not running at {url} ({detail or 'no answer'})."]
    if status == "unreadable":
        return [f"exo: unreadable ({detail or 'unexpected answer'}) at {url}."]
    if status != "ok":
        return [f"exo: not read yet ({url})."]
    insts = ex.get("instances") or []
    who = _whoami(ex)
    why = "; ".join(str(r) for r in ex.get("skip_reasons") or [])
    more = (f"; {ex['skipped']} instance(s) not understood" + (f" ({why})" if why else "")
            if ex.get("skipped") else "")
    if not insts:
        return [f"exo: running at {url}, no instance{' it can read' if more else ''}{more}"
                f"{who}."]
    parts = []
    for inst in insts:
        over = []
        for lk in nodes[0].get("links", []):
            if any(i.get("id") == inst.get("id") for i in lk.get("exo_instances") or []):
                peer = lk.get("peer_name") or lk.get("peer_address")
                over.append(f"{lk.get('local_label') or lk.get('local_interface')} to {peer}")
        lost = ex.get("identified_by") is None and ex.get("unidentified")
        where = (f" over {', '.join(over)}" if over else
                 "" if inst.get("mine", True) or lost else " (not on this node)")
        parts.append(f"{_short(str(inst.get('model')))} ({inst.get('backend')}){where}")
    rdma = ""
    if ex.get("rdma_enabled") is not None:
        ports = ", ".join(f"{k} {v}" for k, v in (ex.get("rdma_ports") or {}).items())
        rdma = f"; RDMA {'enabled' if ex['rdma_enabled'] else 'disabled'}" + (
            f" ({ports})" if ports else "")
    return ["exo: " + "; ".join(parts) + more + rdma + who + "."]


#: how this node was told apart in exo's state without /node_id (agent/exo/state.py)
_FOUND_BY = {"network": "by its address in exo's nodeNetwork",
             "ring": "by its address at its own ring slot"}


def _whoami(ex: dict) -> str:
    """"" when exo's /node_id said which node we are; else how we know, or that nothing
    is marked and why."""
    how = ex.get("identified_by")
    if how == "node_id" or (how is None and not ex.get("unidentified")):
        return ""
    why = ex.get("node_id_error") or "no id"
    if how in _FOUND_BY:
        return f"; /node_id failed ({why}): this node found {_FOUND_BY[how]}"
    return (f"; /node_id failed ({why}) and this node cannot be told apart "
            f"({ex.get('unidentified') or 'unknown'}): no link is marked")


#: the places of a snapshot's lists (its `omitted`), in words
_OMITTED = {"links.exo_instances": "exo instances of links",
            "links.rdma_ports": "RDMA ports of links",
            "interfaces.addresses": "addresses of interfaces",
            "interfaces.members": "members of bridges"}


_IGNORED = {
    "version_mismatch": "runs an exotray that speaks another protocol",
    "no_address": "announces no address on any of our subnets",
    "spoofed_id": "claims to be this node",
    "duplicate_id": "claims the id of another peer",
    "bad_port": "announces an invalid port",
    "no_txt": "has no exotray TXT record",
    "txt_too_large": "has an oversized TXT record",
    "bad_txt": "has a malformed TXT record",
    "bad_id": "has a malformed id",
    "unresolvable": "could not be resolved",
}


def diagnostics(cluster: dict) -> list[str]:
    """Why a peer the user expects may be missing, in plain words."""
    notes: list[str] = []
    nodes = cluster.get("nodes") or [{}]
    notes += [w.rstrip(".") + "." for w in nodes[0].get("warnings") or []]
    if omitted := nodes[0].get("omitted"):  # (what peers would refuse: views.py)
        notes.append("this node's snapshot leaves out what its peers would refuse: " + ", ".join(
            f"{n} {_OMITTED.get(k, k)}" for k, n in sorted(omitted.items())) + ".")
    disc = cluster.get("discovery") or {}
    if disc.get("mdns") is False:
        notes.append("mDNS is off (--no-mdns): only peers given with --peer are monitored.")
    elif disc.get("problem"):
        notes.append(f"mDNS: {disc['problem']}.")
    elif disc.get("mdns"):
        notes.append(f"mDNS: announcing and browsing on {', '.join(disc.get('addresses', []))}.")
    for ig in disc.get("ignored", []):
        what = _IGNORED.get(ig.get("reason"), ig.get("reason"))
        detail = f": {ig['detail']}" if ig.get("detail") else ""
        notes.append(f"ignored mDNS service {ig.get('service')} — it {what}{detail}.")
    for peer in cluster.get("peers", []):
        who = peer.get("name") or peer.get("key")
        where = ", ".join(peer.get("addresses", [])) or "(address not resolved yet)"
        if (peer.get("last_error") or "").startswith("unauthenticated"):
            notes.append(f"peer {who} at {where} does not have this cluster's key (or has "
                         "another): its probes and snapshot are refused.")
        elif not peer.get("up"):
            port = where.rsplit(":", 1)[-1] if peer.get("addresses") else "?"
            notes.append(
                f"peer {who} at {where} does not answer probes: is its agent running, and "
                f"is UDP and TCP port {port} open in its firewall?"
            )
        elif peer.get("last_error"):
            notes.append(f"peer {who} answers probes, but its snapshot failed: "
                         f"{peer['last_error']}")
        if cluster.get("sharing") == "stream" and peer.get("sharing") == "poll":
            notes.append(f"peer {who} speaks the previous sharing protocol (no /v1/stream): "
                         "its full snapshot is polled every interval.")
    for node in cluster.get("nodes", [])[1:]:
        if not node.get("reachable", True):
            notes.append(f"{node['node']['name']}'s data is {node.get('age_s', 0):.0f} s old.")
    return [f"note: {n}" for n in notes]


def _mbit(value: float | None) -> str:
    """A speed in Mbit/s in the rates' unit (the table has one unit system, fmt's)."""
    return fmt.speed(value) if value else "?"


def interface_lines(report: dict) -> list[str]:
    """`exotray interfaces`: one row per interface, then what the row rests on (members,
    where a speed came from, which links take their numbers from it). Speeds,
    capacities and rates all in fmt's units."""
    rows = [("NAME", "KIND", "LABEL", "UP", "SPEED", "CAPACITY", "RX", "TX")]
    notes: list[str] = []
    for it in report.get("interfaces", []):
        speed = _mbit(it.get("speed_mbit"))
        if it.get("max_speed_mbit"):
            speed += f" of {_mbit(it['max_speed_mbit'])}"
        if it.get("phy_rate"):
            speed += " (PHY)"
        cap = fmt.capacity_rate(it.get("capacity_bytes_per_s"))
        if it.get("capacity_source") not in (None, "unknown"):
            cap += f" ({it['capacity_source']})"
        rows.append((it["name"], it["kind"], it["label"], "up" if it["up"] else "down", speed,
                     cap, fmt.rate(it.get("rx_bytes_per_s")), fmt.rate(it.get("tx_bytes_per_s"))))
        name = it["name"]
        if it.get("members"):
            what = "bridge" if it.get("bridge") else "bond"
            notes.append(f"{name}: {what} of {', '.join(it['members'])}")
        if it.get("speed_source") and it["speed_source"] != "psutil":
            notes.append(f"{name}: speed from {it['speed_source']}")
        if it.get("degraded_at_mbit"):
            notes.append(f"{name}: degraded, at {_mbit(it['degraded_at_mbit'])}"
                         + (f" of {_mbit(it['max_speed_mbit'])}" if it.get("max_speed_mbit")
                            else ""))
        if it.get("capacity_measured_at"):
            notes.append(f"{name}: capacity measured at {it['capacity_measured_at']}")
        if it.get("carrier_changes_1h"):
            n = it["carrier_changes_1h"]
            notes.append(f"{name}: went down or up {n} time{'s' if n != 1 else ''} in the "
                         "last hour")
        for lk in it.get("links", []):
            how = (f"its member of {lk['local_interface']}" if lk.get("member_interface")
                   else "it")
            notes.append(f"{name}: the link to {lk['peer']} ({lk['peer_address']}) counts "
                         f"traffic on {how}")
        if it.get("bridge") and not any(lk.get("member_interface")
                                        for lk in it.get("links", [])) and it.get("links"):
            notes.append(f"{name}: which member reaches these peers is not known (yet): "
                         "their traffic is the bridge's total")
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return lines + (["", *notes] if notes else [])

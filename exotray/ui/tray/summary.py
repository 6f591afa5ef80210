"""What the tray says, from a cluster view: health, menu lines, notification text.

No Qt here: plain functions over the /v1/cluster dict, tested with tables of cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exotray.core import fmt, queueing, shares

HEALTH = ("ok", "alone", "warning", "alert", "offline")


def own_links(cluster: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not cluster or not cluster.get("nodes"):
        return []
    return list(cluster["nodes"][0].get("links", []))


def health(cluster: dict[str, Any] | None, threshold: float = 0.9) -> str:
    """offline: no agent answers; alone: the agent runs but knows no peer (nothing is
    monitored, which is not "all fine"); alert: a link saturated or down (a peer down);
    warning: a link at or above the threshold (not yet saturated long enough), or loss;
    ok otherwise."""
    if cluster is None:
        return "offline"
    links = own_links(cluster)
    if not links:
        return "alone"
    if any(lk["state"] in ("saturated", "down") for lk in links):
        return "alert"
    for lk in links:
        util = lk.get("utilization")
        if (util is not None and util >= threshold) or (lk.get("loss") or 0) > 0:
            return "warning"
    return "ok"


def _peer_key(link: dict[str, Any]) -> str:
    return link.get("peer_id") or link["peer_address"]


def _busiest(links: list[dict[str, Any]]) -> dict[str, Any]:
    def load(lk: dict[str, Any]) -> tuple:
        up = lk["state"] != "down"
        util = lk.get("utilization")
        rate = max(lk.get("rx_bytes_per_s") or 0, lk.get("tx_bytes_per_s") or 0)
        # a saturated link first: with its capacity unknown (saturated by queueing) it
        # has no utilization to rank by, and it is the line the user must see
        return (up, lk["state"] == "saturated", util if util is not None else -1, rate)

    return max(links, key=load)


@dataclass(frozen=True)
class PeerLine:
    peer_key: str
    link_id: str
    text: str
    state: str


def peer_lines(cluster: dict[str, Any] | None) -> list[PeerLine]:
    """One line per peer with its busiest link:
    'studio-2 · Thunderbolt Bridge · 0.4 ms · 1.2 GB/s · 31 %'."""
    by_peer: dict[str, list[dict[str, Any]]] = {}
    for lk in own_links(cluster):
        by_peer.setdefault(_peer_key(lk), []).append(lk)
    lines = []
    for key, links in by_peer.items():
        lk = _busiest(links)
        name = lk.get("peer_name") or lk["peer_address"]
        if all(x["state"] == "down" for x in links):
            text = f"{name} · down"
        else:
            rate = max(lk.get("rx_bytes_per_s") or 0, lk.get("tx_bytes_per_s") or 0)
            parts = [name, lk.get("local_label") or lk.get("local_interface") or "?",
                     fmt.ms(lk.get("rtt_ms")), fmt.rate(rate if lk.get("rx_bytes_per_s")
                                                          is not None else None)]
            if lk.get("utilization") is not None:
                parts.append(fmt.percent(lk["utilization"]))
            if (q := queueing.note(lk)) is not None:
                parts.append(q)
            if lk["state"] == "saturated":
                parts.append("saturated")
            text = " · ".join(parts)
        exo = exo_text(links)
        if exo:
            text = f"{text} · {exo}"
        lines.append(PeerLine(key, lk["id"], text, lk["state"]))
    lines.sort(key=lambda p: p.text.lower())
    return lines


def exo_text(links: list[dict[str, Any]]) -> str | None:
    """'exo: Llama-3.3-70B-Instruct-4bit over Thunderbolt Bridge' for the exo instances
    whose traffic to this peer goes over one of `links` (None when there is none)."""
    seen: list[str] = []
    for lk in links:
        label = lk.get("local_label") or lk.get("local_interface") or "?"
        for inst in lk.get("exo_instances") or []:
            model = str(inst.get("model") or "?")
            text = f"{model.rsplit('/', 1)[-1] or model} over {label}"
            if text not in seen:
                seen.append(text)
    return "exo: " + ", ".join(seen) if seen else None


def summary_line(cluster: dict[str, Any] | None, agent_state: str = "running") -> str:
    """'3 peers · all links ok', '2 peers · 1 link saturated · 1 peer down', …"""
    if cluster is None:
        return {
            "starting": "Starting the exotray agent…",
            "restarting": "The exotray agent stopped; restarting it…",
            "failed": "The exotray agent cannot start",
            "config_error": "The exotray agent cannot start: fix its settings",
        }.get(agent_state, "No exotray agent is running")
    links = own_links(cluster)
    peers: dict[str, list[dict[str, Any]]] = {}
    for lk in links:
        peers.setdefault(_peer_key(lk), []).append(lk)
    n = len(peers)
    if n == 0:
        return "No peers yet"
    head = f"{n} peer{'s' if n != 1 else ''}"
    down = sum(1 for ls in peers.values() if all(lk["state"] == "down" for lk in ls))
    saturated = sum(1 for lk in links if lk["state"] == "saturated")
    problems = []
    if saturated:
        problems.append(f"{saturated} link{'s' if saturated != 1 else ''} saturated")
    if down:
        problems.append(f"{down} peer{'s' if down != 1 else ''} down")
    if not problems:
        problems.append("all links ok")
    paused = " · paused" if cluster.get("nodes", [{}])[0].get("paused") else ""
    return " · ".join([head, *problems]) + paused


def node_warnings(cluster: dict[str, Any] | None) -> list[str]:
    """Conditions of this node the user must fix (e.g. macOS Local Network access)."""
    if not cluster or not cluster.get("nodes"):
        return []
    return [str(w) for w in cluster["nodes"][0].get("warnings") or []]


def empty_hints(cluster: dict[str, Any] | None) -> list[str]:
    """How to get peers, when there are none: what the menu and the window say."""
    if cluster is None or own_links(cluster):
        return []
    disc = cluster.get("discovery") or {}
    manual = "add --peer HOST:PORT (or peers = [\"HOST:PORT\"] in the config file)"
    if disc.get("mdns") is False:
        return ["mDNS is off: " + manual]
    hints = ["Peers appear when exotray runs on another machine of this network (mDNS)"]
    if disc.get("problem"):
        hints = [f"mDNS: {disc['problem']}"]
    return [*hints, "Where multicast is blocked: " + manual]


def notification(event: dict[str, Any], self_name: str) -> tuple[str, str] | None:
    """(title, body) for an agent event, or None if it is not worth a notification."""
    peer = event.get("peer_name") or event.get("peer_id") or "a peer"
    node = event.get("node") or self_name
    label = event.get("local_label") or event.get("local_interface") or "its link"
    if event.get("member_interface"):  # a bridge's cable: the numbers are its
        label += f" via {event['member_interface']}"
    kind = event.get("type")
    if kind == "link_cleared" and event.get("reason") == "path_changed":
        now_on = event.get("now_label") or event.get("now_interface")
        if now_on and event.get("now_member"):
            now_on += f" via {event['now_member']}"
        where = (f"it goes through {now_on} now" if now_on
                 else "no interface of this node reaches the peer now")
        return (f"Link moved: {node} ⇄ {peer}",
                f"{label} no longer carries it (saturated there); {where}")
    if kind in ("link_saturated", "link_cleared"):
        rate = max(event.get("rx_bytes_per_s") or 0, event.get("tx_bytes_per_s") or 0)
        util = fmt.percent(event.get("utilization"))
        cap = event.get("capacity_bytes_per_s")
        of = f" of {fmt.capacity_rate(cap)}" if cap else ""  # one unit system per sentence
        title = (f"Link saturated: {node} ⇄ {peer}" if kind == "link_saturated"
                 else f"Link back to normal: {node} ⇄ {peer}")
        qd = event.get("queue_delay_ms")
        if event.get("cause") == "queueing":
            # "+170 ms queueing delay at 6.2 MB/s (capacity unknown)"
            delay = (f"+{fmt.ms(qd)} queueing delay" if qd is not None
                     else "queueing delay unknown")
            known = (f"{fmt.utilization(event.get('utilization'), cap)}{of}" if cap
                     else "capacity unknown")
            return title, f"{delay} at {fmt.rate(rate)} ({known}) on {label}"
        if kind == "link_saturated" and (words := shares.full_words(event)):
            return title, words  # a shared carrier: who fills it (core/shares.py)
        incl = ", RDMA included" if event.get("rdma") == "counted" else ""
        body = f"{label} at {util} ({fmt.rate(rate)}{incl}{of})"
        if qd is not None and queueing.notable(qd, event.get("rtt_baseline_ms")):
            body += f", +{fmt.ms(qd)} queueing delay"
        return title, body
    if kind in ("link_degraded", "link_restored"):
        port = event.get("local_label") or "?"
        if event.get("interface") and event.get("interface") != port:
            port = f"{port} ({event['interface']})"
        top = event.get("max_mbit")
        of = f" of {fmt.mbit(top)}" if top else f", was {fmt.mbit(event.get('from_mbit'))}"
        if kind == "link_degraded":
            return (f"Link slower than it can be: {node}",
                    f"{node}: {port} at {fmt.mbit(event.get('to_mbit'))}{of}")
        return (f"Link back to full speed: {node}",
                f"{node}: {port} at {fmt.mbit(event.get('to_mbit'))}")
    if kind in ("exo_slow_path", "exo_slow_path_cleared"):
        inst = event.get("instance") or {}
        model = str(inst.get("model") or "a model")
        model = model.rsplit("/", 1)[-1] or model
        better = event.get("better_label") or event.get("better_interface") or "a faster link"
        if kind == "exo_slow_path":
            state = "up and idle" if event.get("better_idle") else "up"
            return (f"exo is on a slow link to {peer}",
                    f"exo is using {label} to {peer} while {better} is {state} ({model})")
        return (f"exo's path to {peer} changed",
                f"exo ({model}) no longer uses {label} to {peer} while {better} is better")
    if kind in _LINK_CHANGES:
        return _link_change(kind, event, node, peer, label)
    if kind == "peer_down":
        return (f"Peer down: {peer}", f"{node} gets no answer from {peer}")
    if kind == "peer_up" and event.get("first"):
        return (f"Peer found: {peer}", f"{node} reaches {peer}")
    if kind == "peer_up":
        return (f"Peer up: {peer}", f"{node} reaches {peer} again")
    return None


_LINK_CHANGES = ("link_down", "link_up", "link_slower", "link_slower_cleared",
                 "link_flapping", "link_flapping_cleared", "mtu_mismatch",
                 "mtu_mismatch_cleared")


def _rtt(ms: float | None) -> str:
    """'0.4 ms' without the unit's repeat in '0.4 → 6.1 ms'."""
    return fmt.ms(ms).removesuffix(" ms")


def _link_change(kind: str, event: dict[str, Any], node: str, peer: str,
                 label: str) -> tuple[str, str]:
    """The words of a link that went down, came back, got slower or flaps (issue 31)."""
    before, now = event.get("rtt_before_ms"), event.get("rtt_now_ms")
    if kind == "link_down":
        other = event.get("fallback_label") or event.get("fallback_interface")
        if event.get("fallback_link_id") is None:
            return f"Link down: {node} ⇄ {peer}", f"{label} to {peer} is down"
        return (f"Link down: {node} ⇄ {peer}",
                f"{label} to {peer} is down; {peer} is now reached over {other or 'another link'}"
                f" ({_rtt(before)} → {fmt.ms(now)})")
    if kind == "link_up":
        return (f"Link back: {node} ⇄ {peer}",
                f"{label} to {peer} answers again ({fmt.ms(event.get('rtt_ms'))})")
    if kind == "link_slower":
        return (f"Link slower: {node} ⇄ {peer}",
                f"{label} to {peer}: round trip {_rtt(before)} → {fmt.ms(now)} and staying "
                "there (a longer route, a relay, or a cable at a lower rate?)")
    if kind == "link_slower_cleared":
        return (f"Link back to its round trip: {node} ⇄ {peer}",
                f"{label} to {peer}: {fmt.ms(now)} again (it was {fmt.ms(before)})")
    if kind == "link_flapping" and not event.get("link_id"):  # an interface's carrier
        minutes = round((event.get("window_s") or 600) / 60)
        iface = event.get("interface") or "?"
        return (f"Cable flapping: {node}",
                f"{label} ({iface}) lost its carrier and got it back "
                f"{event.get('changes', 3)} times in {minutes} minutes: check the cable "
                "and its ports")
    if kind == "link_flapping":
        minutes = round((event.get("window_s") or 600) / 60)
        return (f"Link flapping: {node} ⇄ {peer}",
                f"{label} to {peer} went down and came back {event.get('changes', 3)} times in "
                f"{minutes} minutes: check the cable and its ports")
    if kind == "mtu_mismatch":
        iface = event.get("local_interface") or label
        mtu, reach = event.get("mtu"), event.get("path_mtu")
        if reach:
            return (f"Jumbo frames do not pass: {node} ⇄ {peer}",
                    f"{iface} sends {mtu}-byte frames, but only {reach} reach {peer}: set "
                    f"jumbo frames end to end, or {reach} on both")
        return (f"Large frames do not pass: {node} ⇄ {peer}",
                f"{iface} sends {mtu}-byte frames, but they do not reach {peer} (small ones "
                "do): set the same MTU on both ends and everything between")
    if kind == "mtu_mismatch_cleared":
        return (f"Frames pass again: {node} ⇄ {peer}",
                f"{event.get('mtu')}-byte frames of {label} reach {peer} again")
    minutes = round((event.get("quiet_s") or 600) / 60)
    what = (f"{label} ({event.get('interface')})" if not event.get("link_id")
            else f"{label} to {peer}")
    title = (f"Cable steady again: {node}" if not event.get("link_id")
             else f"Link steady again: {node} ⇄ {peer}")
    if event.get("state") == "down":
        return title, f"{what}: no change for {minutes} minutes; it is down"
    return title, f"{what}: no drop for {minutes} minutes"


def problems_line(checks: list[Any]) -> str | None:
    """The menu's count of `exotray doctor`'s failing checks ("2 problems: …"), None when
    none fails. `checks`: core.doctor.run's."""
    n = sum(c.status == "fail" for c in checks)
    if not n:
        return None
    return f"{n} problem{'s' if n != 1 else ''}: see Health in the dashboard"

"""What a link's numbers rest on, in words, for the window, the table and the tooltips:
which interface (and which bridge member) carries it, whose traffic is shown, and where
its capacity came from. Pure functions of a link and its node's interfaces (the node's
snapshot's "interfaces", by name); no Qt."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from exotray.core import fmt

Ifaces = dict[str, dict[str, Any]]


def node_interfaces(node: dict[str, Any]) -> Ifaces:
    return {i.get("name"): i for i in node.get("interfaces") or [] if isinstance(i, dict)}


def _named(name: str | None, label: str | None) -> str:
    if not name:
        return label or "?"
    return f"{label} ({name})" if label and label != name else name


def via(link: dict[str, Any], ifaces: Ifaces) -> str:
    """"Thunderbolt Bridge (bridge0) via Thunderbolt 2 (en3)", or "Ethernet (eth0)"."""
    name = link.get("local_interface")
    text = _named(name, link.get("local_label"))
    member = link.get("member_interface")
    if member:
        text += f" via {_named(member, (ifaces.get(member) or {}).get('label'))}"
    return text


def speed(link: dict[str, Any], ifaces: Ifaces) -> str | None:
    """The carrying port's negotiated speed, "40 Gb/s of 80 Gb/s" (or "866 Mb/s PHY rate"
    for Wi-Fi), None when the node does not say."""
    carrier = ifaces.get(link.get("member_interface") or link.get("local_interface") or "")
    if not carrier or not carrier.get("speed_mbit"):
        return None
    text = fmt.mbit(carrier["speed_mbit"])
    top = carrier.get("max_speed_mbit")
    if top and top > carrier["speed_mbit"]:
        text += f" of {fmt.mbit(top)}"
    if carrier.get("kind") == "wifi":
        text += " PHY rate"
    return text


def traffic_note(link: dict[str, Any], ifaces: Ifaces) -> str:
    """Whose traffic a link's rates are: its interface's (or cable's), never only its own."""
    name = link.get("local_interface") or "?"
    member = link.get("member_interface")
    if member:
        return (f"Traffic shown is all traffic of {member}, the cable of the bridge {name} "
                "that reaches this peer, not only this link's.")
    if (ifaces.get(name) or {}).get("members"):
        if link.get("utilization") is not None:
            # a bond (its members' traffic together, against their speed together): the
            # agent gives a bridge's totals of an unknown cable no utilization
            return (f"Traffic shown is all traffic of {name} (its member ports together), "
                    "not only this link's.")
        return (f"Traffic shown is the total of {name} (all its member ports): which of "
                "them this peer is reached through is not known, so no utilization.")
    return f"Traffic shown is all traffic of the local interface {name}, not only this link's."


def rdma_state(link: dict[str, Any]) -> str:
    """Where RDMA is not counted (macOS): "RDMA enabled · rdma_en3 PORT_ACTIVE", from the
    node's `rdma_ctl status` and `ibv_devinfo`; "" when the link says nothing of it."""
    parts = []
    on = link.get("rdma_enabled")
    if on is not None:
        parts.append("RDMA enabled" if on else "RDMA disabled (rdma_ctl)")
    elif link.get("rdma") == "not_counted":
        parts.append("RDMA state unknown")
    for port in link.get("rdma_ports") or []:
        state = port.get("state")
        parts.append(f"{port.get('device')} {state}" if state
                     else f"{port.get('device')} not listed by ibv_devinfo")
    return " · ".join(parts)


def rdma_short(link: dict[str, Any]) -> str:
    """Under a link's rx / tx: "RDMA included", or "IP only: RDMA not counted" (then a
    busy RDMA link does not read as idle); "" without RDMA."""
    note = link.get("rdma")
    if note == "counted":
        return "RDMA included (port counters)"
    if note == "not_counted":
        return "IP only: RDMA not counted"
    return ""


def rdma_words(link: dict[str, Any]) -> str:
    """A sentence on the link's RDMA traffic, for notes and tooltips; "" without RDMA."""
    note = link.get("rdma")
    if note == "counted":
        return "RDMA traffic is included: the RDMA port counters on it are added to rx / tx."
    if note != "not_counted":
        return ""
    state = rdma_state(link)
    return ("RDMA traffic (exo's JACCL) is not counted: no RDMA counters can be read on "
            "this node (macOS has none), so rx / tx are IP traffic only and a busy RDMA "
            "link can look idle."
            + (f" {state}." if state else ""))


def traffic_of(link: dict[str, Any], ifaces: Ifaces) -> str:
    """Whose traffic a link's rates are, in a few words (the table's "Traffic of"):
    "en0 (interface)", "en3 (bridge cable)", "bridge0 (all ports)"; traffic_note says it
    in full."""
    name = link.get("local_interface") or "?"
    member = link.get("member_interface")
    if member:
        return f"{member} (bridge cable)"
    if (ifaces.get(name) or {}).get("members"):
        return f"{name} (all ports)"
    return f"{name} (interface)"


def ago(stamp: str | None, now: Callable[[], float] = time.time) -> str | None:
    """"2 d ago" for an ISO-8601 time, None when there is none or it is unreadable."""
    if not stamp:
        return None
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
    s = max(0.0, now() - then)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s // size:.0f} {unit} ago"
    return "just now"


def capacity_words(link: dict[str, Any], ifaces: Ifaces,
                   now: Callable[[], float] = time.time) -> str:
    """Where the capacity came from: "your setting", "measured 2 d ago", "Wi-Fi PHY rate
    (real throughput is well below it)", "negotiated Thunderbolt rate"…"""
    source = link.get("capacity_source") or "unknown"
    carrier = ifaces.get(link.get("member_interface") or link.get("local_interface") or "")
    carrier = carrier or {}
    if source == "override":
        return "your setting"
    if source == "measured":
        when = ago(carrier.get("capacity_measured_at"), now)
        return f"measured {when}" if when else "measured"
    if source == "nic":
        return "reported by the interface"
    if source == "kind":
        kind = carrier.get("kind")
        if kind == "wifi":
            return "Wi-Fi PHY rate (real throughput is well below it)"
        if kind == "thunderbolt":
            return "negotiated Thunderbolt rate"
        return "from the interface type"
    return "unknown"

"""Which link fills a shared carrier (issue 30): each link's own bytes against its carrier's.

A link's `rx_bytes_per_s`/`tx_bytes_per_s` are its carrier's; `flow_rx_bytes_per_s` /
`flow_tx_bytes_per_s` its own TCP bytes where the agent reads them (agent/hw/flows.py).
Here, from those numbers alone: the shares a saturation event carries, the words a
notification says, and the badge a link shows. No I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from exotray.core import fmt

#: a link whose own bytes are under this part of its carrier's is not drawn as full when
#: the carrier is (its neighbour fills it): the window's map and table (ui/topology,
#: ui/link) draw it by its own share
QUIET_SHARE = 0.5


def _larger(link: Mapping[str, Any], rx_key: str, tx_key: str) -> float | None:
    rx, tx = link.get(rx_key), link.get(tx_key)
    if rx is None and tx is None:
        return None
    return max(rx or 0.0, tx or 0.0)


def own_rate(link: Mapping[str, Any]) -> float | None:
    """A link's own bytes a second (the larger direction), None where not read."""
    return _larger(link, "flow_rx_bytes_per_s", "flow_tx_bytes_per_s")


def carrier_rate(link: Mapping[str, Any]) -> float | None:
    """Its carrier's bytes a second (the larger direction), None where unknown."""
    return _larger(link, "rx_bytes_per_s", "tx_bytes_per_s")


def ordered(shares: Iterable[tuple[str, str | None, float]]) -> list[dict[str, Any]]:
    """(link id, peer name, bytes/s) as an event's `shares`, largest first."""
    return [{"link_id": lid, "peer_name": name, "bytes_per_s": round(b, 1)}
            for lid, name, b in sorted(shares, key=lambda s: (-s[2], s[0]))]


def full_words(event: Mapping[str, Any]) -> str | None:
    """"en0 is full (92 %): studio-2 71 %, studio-3 21 %" for a saturation event with
    `shares` (percent of the capacity; where it is unknown, each link's rate)."""
    shares = event.get("shares")
    if not shares:
        return None
    where = event.get("local_interface") or event.get("local_label") or "the interface"
    if event.get("member_interface"):
        where = event["member_interface"]
    cap = event.get("capacity_bytes_per_s")
    util = event.get("utilization")
    if cap and util is not None:
        head = f"{where} is full ({fmt.percent(util)})"
        parts = [f"{s.get('peer_name') or 'a peer'} {fmt.percent(s['bytes_per_s'] / cap)}"
                 for s in shares]
    else:
        qd = event.get("queue_delay_ms")
        head = f"{where} is full" + (f" (+{fmt.ms(qd)} queueing delay)" if qd else "")
        parts = [f"{s.get('peer_name') or 'a peer'} {fmt.rate(s['bytes_per_s'])}"
                 for s in shares]
    return f"{head}: {', '.join(parts)}"


def badge(link: Mapping[str, Any]) -> str | None:
    """"1.1 GB/s of en0's 1.2 GB/s": a link's own rate with its carrier's total beside it;
    None where its own is not read."""
    own, total = own_rate(link), carrier_rate(link)
    if own is None:
        return None
    where = link.get("member_interface") or link.get("local_interface") or "its interface"
    if total is None:
        return fmt.rate(own)
    return f"{fmt.rate(own)} of {where}'s {fmt.rate(total)}"


def quiet(link: Mapping[str, Any]) -> bool:
    """A saturated link whose own bytes are a small part of its carrier's: the carrier is
    full, by a neighbour's traffic (draw the link by its own share, the carrier as full)."""
    own, total = own_rate(link), carrier_rate(link)
    return (link.get("state") == "saturated" and own is not None and bool(total)
            and own < QUIET_SHARE * total)  # type: ignore[operator]

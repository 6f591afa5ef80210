"""An active capacity test over one of our links (http/captest.py does the test itself):
which link, through which interface and source address, and what it found."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from typing import Any

from exotray.agent.http.captest import CapacityTester
from exotray.agent.hw import sampler
from exotray.agent.hw.monitor import InterfaceMonitor
from exotray.agent.peers.links import Link
from exotray.agent.share.clients import HttpClients

log = logging.getLogger("exotray.agent.runtime")


def pick_link(links: Iterable[Link], peer: str, interface: str | None) -> Link:
    """Our link to `peer` (its name, id, address or address:port, or the HOST:PORT it
    was given as with --peer), through `interface` when given, that is up; LookupError
    saying why there is none, or which peers `peer` could mean when the links up that
    it names lead to more than one (two agents on one address): a capacity measured on
    another peer's link would be a number blamed on the wrong link."""
    found = [lk for lk in links
             if peer in (lk.peer.name, lk.peer.id, lk.peer.key, lk.target[0],
                         f"{lk.target[0]}:{lk.target[1]}")
             and (interface is None or lk.local_interface == interface)]
    up = [lk for lk in found if lk.up]
    if not found:
        raise LookupError(f"no link to {peer!r}" + (f" via {interface}" if interface else ""))
    if len({lk.peer.key for lk in up}) > 1:
        which = sorted({f"{lk.peer.name or lk.peer.key} ({lk.target[0]}:{lk.target[1]})"
                        for lk in up})
        raise LookupError(f"{peer!r} could be any of {', '.join(which)}: name one by its "
                          "address:port or its id")
    if not up:
        raise LookupError(f"the link to {peer!r} is down")
    return up[0]


async def measure(link: Link, *, tester: CapacityTester, clients: HttpClients,
                  monitor: InterfaceMonitor,
                  who: str, seconds: float, streams: int) -> dict[str, Any]:
    src = sampler.source_address(link.target[0])
    options: list = []
    nics = monitor.nics
    bound = clients.binding(link)
    if bound is not None:
        # Measured through the interface the link is pinned to, as its probes are:
        # the routes would send it elsewhere (e.g. a Mac's 169.254/16 via Wi-Fi), and
        # the result would then be credited to an interface it did not cross.
        iface, _index, options = bound
        if not options or iface not in nics:
            raise LookupError(f"cannot send through {iface}, the interface the link to "
                              f"{link.target[0]} is pinned to, so it cannot be measured")
        peer = ipaddress.IPv4Address(link.target[0])
        src = next((a for a, p in nics[iface].networks
                    if peer in ipaddress.IPv4Network(f"{a}/{p}", strict=False)), src)
    result = await tester.run(clients.for_link(link), link.target[0], link.target[1],
                              seconds=seconds, streams=streams, bind_ip=src, who=who,
                              sock_options=options)
    rates = [r for r in (result["up_mbit_s"], result["down_mbit_s"]) if r]
    # through a bridge, the cable that reaches the peer is what was measured
    carrier = monitor.carrier(link.local_interface, link.target[0])
    kept = bool(carrier and rates and monitor.measured(carrier, max(rates),
                                                       result["measured_at"]))
    log.info("capacity of the link to %s via %s: %s Mbit/s up, %s Mbit/s down",
             link.peer.name or link.target[0], link.local_interface,
             result["up_mbit_s"], result["down_mbit_s"])
    # capacity_of: the interface that now has this capacity (the bridge's cable), None
    # when it was not kept
    # override_mbit: the user's capacity for that interface, which stays in force (a
    # measured capacity comes after a setting: core/capacity.py)
    return {**result, "link_id": link.id, "interface": link.local_interface,
            "capacity_of": carrier if kept else None, "peer_name": link.peer.name,
            "override_mbit": monitor.settings.capacity.get(carrier) if carrier else None}

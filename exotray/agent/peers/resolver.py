"""Host names of manual peers (--peer HOST:PORT) to addresses, retried every 10 s."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Callable

from exotray.agent.peers.table import PeerTable

log = logging.getLogger("exotray.agent.runtime")

RETRY_S = 10.0


async def resolve_manual_peers(table: PeerTable, clock: Callable[[], float]) -> None:
    loop = asyncio.get_running_loop()
    now = clock()
    for peer in list(table.peers.values()):
        if peer.host is None or peer.manual_targets or now < peer.resolve_after:
            continue
        try:
            ipaddress.IPv4Address(peer.host)
            addrs = [peer.host]
        except ValueError:
            try:
                infos = await loop.getaddrinfo(
                    peer.host, peer.port, family=socket.AF_INET, type=socket.SOCK_DGRAM
                )
                addrs = sorted({i[4][0] for i in infos})
            except OSError as e:
                peer.resolve_after = now + RETRY_S
                peer.last_error = f"cannot resolve {peer.host}: {e}"
                log.warning("peer %s: cannot resolve host name (%s); retrying in 10 s",
                            peer.key, e)
                continue
        peer.manual_targets = [(a, peer.port) for a in addrs]
        table.set_targets(peer)

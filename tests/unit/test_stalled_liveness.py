"""A stalled agent does not take a live link down (issue 18 finding 10; a CI run of
tests/lab/test_lan_attacks.py found this way of doing it): probes sent before the peer
listened are never answered, and expire after the reply to a later probe; when the loop
ran late, at the same tick as that reply and long after it. Only a probe sent after
the latest answered one counts towards "down" (probing.Prober.on_lost).

Real UDP sockets on loopback, the agent's own Prober and PeerTable; the stall is real
(0.6 s, past the 0.2 s probe timeout and the 0.5 s down_after of this table)."""

from __future__ import annotations

import asyncio
import socket
import time

from helpers import held_prober, reflected

from exotray.agent.probe import udp as P

TIMEOUT_S, DOWN_AFTER_S, STALL_S = 0.2, 0.5, 0.6


def test_probes_older_than_the_answered_one_do_not_take_the_link_down():
    events: list[tuple[str, bool]] = []

    async def main():
        silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # the peer, not yet up
        silent.bind(("127.0.0.1", 0))
        port = silent.getsockname()[1]
        _table, prober, link = held_prober(  # (replies wait for the tick, as in an agent)
            port, timeout_s=TIMEOUT_S, down_after_s=DOWN_AFTER_S,
            on_peer_event=lambda peer, up, _why: events.append((peer.key, up)))
        refl = None
        try:
            prober.send(link)  # two probes nobody answers ...
            prober.send(link)
            silent.close()
            refl = P.ProbeSocket(lambda *a: None, lambda *a: None)
            refl.open("127.0.0.1", port)  # ... then the peer listens, and answers the third
            prober.send(link)
            assert await reflected(refl) == 1
            time.sleep(STALL_S)  # our loop stalls: the reply waits, the first two expire
            prober.tick(False, full=False, send=False)  # the first tick after the stall
        finally:
            prober.close()
            if refl is not None:
                refl.close()
        return link

    link = asyncio.run(main())
    assert link.last_reply is not None and link.lost_since_reply == 0
    assert link.up, "a live link went down after the loop stalled"
    # no down (the up itself waits for the peer's name, which this bare peer never sends:
    # peers/table.py NAME_WAIT_S)
    assert all(up for _key, up in events)

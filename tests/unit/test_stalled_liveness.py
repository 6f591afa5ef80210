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

import pytest
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
    # nor are they loss: sent before the peer listened, the link not yet up (a link's first
    # seconds showed 2 of 3 lost, and `exotray doctor` warned of loss on a new cluster)
    s = link.rtt.summary(time.monotonic())
    assert (s.loss, s.sent, s.received) == (0.0, 1, 1)
    # no down (the up itself waits for the peer's name, which this bare peer never sends:
    # peers/table.py NAME_WAIT_S)
    assert all(up for _key, up in events)


def test_loss_after_a_link_comes_back_counts_only_what_it_lost_while_up():
    """Up (losing one probe in three), then down (its probes unanswered: loss, while it is
    down), then up again: from the first reply on, the probes lost in the outage are the
    outage its state said, not loss; those lost while it was up before, and a probe lost
    after it came back, are."""
    async def main():
        _table, prober, link = held_prober(9, timeout_s=TIMEOUT_S, down_after_s=DOWN_AFTER_S)
        try:
            t = time.monotonic()
            prober.on_reply(link.target, t - 9.5, 1.0)
            prober.on_lost(link.target, t - 9.2)
            prober.on_reply(link.target, t - 9.0, 1.0)
            assert link.up
            for k in range(4):  # ... then nothing answers: down
                prober.on_lost(link.target, t - 8.0 + k)
            prober.table.update_liveness(t + 1.0)
            assert not link.up and link.rtt.summary(t).loss == pytest.approx(5 / 7)
            prober.on_reply(link.target, t - 3.0, 1.0)  # back
            assert link.up and link.rtt.summary(t).loss == pytest.approx(1 / 4)
            prober.on_lost(link.target, t - 6.5)  # (one of the outage's, resolved late)
            prober.on_lost(link.target, t - 2.0)
            return link.rtt.summary(t)
        finally:
            prober.close()

    s = asyncio.run(main())
    assert (s.sent, s.received) == (5, 3) and s.loss == pytest.approx(2 / 5)

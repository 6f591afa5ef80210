"""What is told when a link changes for the worse while its peer stays up (issue 31):

* `link_down` / `link_up`: a link stopped answering (or went with its interface: a
  pulled cable takes its subnet, and the link, with it) while another link of its peer
  still answers, which its peer's traffic now takes (`fallback_link_id`); its `link_up`
  when it answers again. When a peer's last link goes it is `peer_down` (no link_down),
  and a link that comes up with its peer is `peer_up`'s.
* `link_flapping` / `link_flapping_cleared`: a link that went down and came back three
  times within ten minutes, whether or not its peer went with it; while it flaps its
  link_down and link_up are not told one by one. Not told of a link while its
  interface's carrier is flapping: that interface's own link_flapping (hw/monitor.py)
  names the cable, once, not once more per peer behind it (a link_down told before is
  followed by its link_up); told at the link's next change if it flaps on once the cable
  is steady.
* `link_slower` / `link_slower_cleared`: its idle RTT rose threefold (and by 1 ms) and
  stayed so for 30 s (core/linkchanges.py).
* `mtu_mismatch` / `mtu_mismatch_cleared`: frames of its interface's MTU stopped
  reaching the peer while small ones do (core/pathmtu.py), / they reach it again.

The peer table calls `changed` at each of a link's ups and downs; the agent's tick calls
`tick` once a full tick. What was told and the ups and downs are kept by link id, so a
link dropped with its interface and made again is the same link here. Each event names
the nodes and links in words (`node`, `peer_name`, `local_label`) as saturation's do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from exotray.agent.peers.links import Link
from exotray.core.linkchanges import FlapWatch
from exotray.core.pathmtu import MISMATCH
from exotray.core.schema import r

#: a link under this share of a known capacity is idle enough for its RTT to be the path's
IDLE_UTILIZATION = 0.25
#: a link told down and not made again within this long is forgotten (its link_up too)
SAID_DOWN_KEEP_S = 3600.0
#: links whose ups and downs are remembered (the table's 128 peers x 8 links, and as
#: many dropped ones); beyond it those quiet the longest are forgotten
MAX_WATCHED = 2048


class LinkEvents:
    def __init__(self, emit: Callable[..., Any], wall: Callable[[float], float],
                 label: Callable[[str | None], str | None], node: Callable[[], str],
                 carrier_flapping: Callable[[str | None, str | None], bool] = (
                     lambda _iface, _peer: False)) -> None:
        self.emit = emit
        self.wall = wall
        self.label = label
        self.node = node
        #: whether the carrier of a link (its interface, peer address) is flapping (its
        #: own link_flapping told: hw/monitor.py)
        self.carrier_flapping = carrier_flapping
        #: link ids a link_down was told of, and when (their link_up is told when they
        #: answer; one not made again within SAID_DOWN_KEEP_S is forgotten)
        self.said_down: dict[str, float] = {}
        self.flaps: dict[str, FlapWatch] = {}
        self._pruned = -1e18

    def _tell(self, kind: str, link: Link, now: float, **more: Any) -> None:
        self.emit(kind, self.wall(now), link_id=link.id, peer_id=link.peer.id,
                  peer_name=link.peer.name or link.peer.key, node=self.node(),
                  local_interface=link.local_interface,
                  local_label=self.label(link.local_interface), utilization=None, **more)

    def flaps_of(self, link_id: str) -> FlapWatch:
        f = self.flaps.get(link_id)
        if f is None:
            if len(self.flaps) >= MAX_WATCHED:
                del self.flaps[min(self.flaps, key=lambda k: self.flaps[k].last_change or 0)]
            f = self.flaps[link_id] = FlapWatch()
        return f

    def changed(self, link: Link, now: float, peer_up: bool,
                siblings: Iterable[Link] | None) -> None:
        """`link` went up or down (`link.up`) at `now`; `peer_up`: whether its peer is
        still (or now) up; `siblings`: the peer's other links (None: the link went with
        its peer, a goodbye: its peer_down tells it, and it is no flap)."""
        if siblings is None:
            self.said_down.pop(link.id, None)
            return
        siblings = [s for s in siblings if s is not link]
        flaps = self.flaps_of(link.id)
        flaps.change(now, link.up)
        if flaps.flapping and not flaps.told and not self.carrier_flapping(
                link.local_interface, link.target[0]):  # (its start, or its first change on
            # a steady cable)
            flaps.told = True
            self._tell("link_flapping", link, now, changes=flaps.cycles(now),
                       window_s=flaps.params.flap_window_s)
        if not peer_up:  # peer_down tells it, for each of its links
            for lk in (link, *siblings):
                self.said_down.pop(lk.id, None)
            return
        if flaps.flapping:
            if (link.up and not flaps.told
                    and self.said_down.pop(link.id, None) is not None):
                # (its cable's flapping told instead of its own: its down told before
                # that is not left without its return)
                self._tell("link_up", link, now, rtt_ms=r(_median(link, now)))
            return
        if not link.up:
            up = [s for s in siblings if s.up]
            fallback = min(up, key=lambda s: _median(s, now) or 1e9) if up else None
            self.said_down[link.id] = now
            self._tell("link_down", link, now, rtt_before_ms=r(_median(link, now)),
                       fallback_link_id=fallback.id if fallback else None,
                       fallback_interface=fallback.local_interface if fallback else None,
                       fallback_label=self.label(fallback.local_interface) if fallback
                       else None,
                       rtt_now_ms=r(_median(fallback, now)) if fallback else None)
        elif self.said_down.pop(link.id, None) is not None:
            self._tell("link_up", link, now, rtt_ms=r(_median(link, now)))

    def tick(self, link: Link, now: float, rate: float | None, util: float | None) -> None:
        """Once a full tick for each link: is it slower, has it stopped flapping."""
        flaps = self.flaps.get(link.id)
        if flaps is not None and flaps.quiet(now):
            if flaps.told:
                flaps.told = False
                self._tell("link_flapping_cleared", link, now,
                           state="up" if link.up else "down",
                           quiet_s=flaps.params.flap_quiet_s)
            self.said_down.pop(link.id, None)
            if not link.up and getattr(link.peer, "was_up", False):
                self.said_down[link.id] = now  # it stopped flapping down: its return is told
        if not link.up:
            link.slower.since = None
            return
        # (below the queue's "carrying" bound a link's RTT is the path's, not its traffic's)
        counts = (rate is not None and rate < link.queue.params.carrying_bytes_per_s) or (
            util is not None and util < IDLE_UTILIZATION)
        before = link.slower.usual_ms
        said = link.slower.reading(now, link.queue.baseline_ms(now),
                                   link.queue.recent_low_ms(), counts)
        if said == "slower":
            self._tell("link_slower", link, now, rtt_before_ms=r(before),
                       rtt_now_ms=r(link.slower.now_ms))
        elif said == "cleared":
            self._tell("link_slower_cleared", link, now, rtt_before_ms=r(before),
                       rtt_now_ms=r(link.slower.now_ms))

    def mtu(self, link: Link, said: str, now: float) -> None:
        """Its interface's MTU does not reach the peer (pathmtu.MISMATCH) or does again."""
        self._tell("mtu_mismatch" if said == MISMATCH else "mtu_mismatch_cleared", link, now,
                   mtu=link.mtu.mtu, path_mtu=link.mtu.path_mtu)

    def prune(self, now: float, links: Iterable[Link]) -> None:
        """Forget what was told of links gone from the table and not made again for
        SAID_DOWN_KEEP_S (a peer's old address): the set stays as small as the links that
        go and may come back. Looks once a minute."""
        if now - self._pruned < 60.0 or not self.said_down:
            return
        self._pruned = now
        live = {lk.id for lk in links}
        for k in [k for k, at in self.said_down.items()
                  if k not in live and now - at > SAID_DOWN_KEEP_S]:
            del self.said_down[k]

    def changes_within(self, link_id: str, now: float, span_s: float = 3600.0) -> int:
        """A link's downs and ups within the last `span_s` (the last hour's)."""
        f = self.flaps.get(link_id)
        return 0 if f is None else f.count(now, span_s)


def by_peer(moved: list[Link], links: Iterable[Link]) -> dict[int, list[Link]]:
    """The links of each peer of the `moved` links (one pass over the table's links,
    however many went down together)."""
    of: dict[int, list[Link]] = {id(lk.peer): [] for lk in moved}
    if of:
        for lk in links:
            if id(lk.peer) in of:
                of[id(lk.peer)].append(lk)
    return of


def _median(link: Link | None, now: float) -> float | None:
    return None if link is None else link.rtt.summary(now).median_ms

"""The tray app's reading of this node's links' loss of the last day (ui/client/
loss_history.py): asked as `exotray doctor` asks, again only every REFRESH_S, bounded in
links; attached to the cluster view once answers are in."""

from __future__ import annotations

from exotray.core import doctor_loss
from exotray.core.doctor_view import LOSS_HISTORY
from exotray.ui.client import loss_history as lh

NOW = 1_800_000_000.0


def cluster(n: int) -> dict:
    return {"nodes": [{"node": {"id": "id-a", "name": "a"},
                       "links": [{"id": f"L{i}"} for i in range(n)]}]}


def test_read_every_refresh_bounded_and_attached_once_answered():
    mono = [0.0]
    asked: list[tuple[str, dict, object]] = []
    reader = lh.LossHistory(lambda lid, q, done: asked.append((lid, q, done)),
                            clock=lambda: NOW, mono=lambda: mono[0])
    view = cluster(lh.MAX_LINKS + 2)
    reader.attach(view)
    assert [a[0] for a in asked] == [f"L{i}" for i in range(lh.MAX_LINKS)]
    assert asked[0][1] == doctor_loss.history_query(NOW)
    assert LOSS_HISTORY not in view  # nothing answered yet: not read
    asked[0][2]({"t": [NOW - 60], "loss": [0.0], "loss_max": [0.0], "rtt_ms": [1]}, None)
    asked[1][2](None, "HTTP 400")  # (an agent whose history keeps no loss)
    mono[0] = lh.REFRESH_S - 1
    view = cluster(lh.MAX_LINKS + 2)
    reader.attach(view)
    assert len(asked) == lh.MAX_LINKS  # not asked again yet
    got = view[LOSS_HISTORY]
    assert list(got["links"]) == ["L0"] and got["links"]["L0"]["loss"] == [0.0]
    assert "rtt_ms" not in got["links"]["L0"]
    # not read: L1 (no loss kept), the links past MAX_LINKS, and those not answered yet
    # (a link the check would otherwise say nothing of)
    assert got["unread"] == [f"L{i}" for i in range(1, lh.MAX_LINKS + 2)]
    mono[0] = lh.REFRESH_S
    reader.attach(cluster(2))
    assert len(asked) == lh.MAX_LINKS + 2

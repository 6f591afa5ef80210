"""What `exotray doctor` reads for its `loss` check (cli/doctor_history.py): one
/v1/history of the last 24 h per link of this node, bounded in links and time; a link not
answered, or an agent whose history keeps no loss, is said unread."""

from __future__ import annotations

import pytest

from exotray.cli import doctor_history as dh
from exotray.core.doctor_view import LOSS_HISTORY, PAST_S

NOW = 1_800_000_000.0


def cluster(n: int) -> dict:
    return {"nodes": [{"node": {"id": "id-a", "name": "a"},
                       "links": [{"id": f"L{i}"} for i in range(n)]},
                      {"node": {"id": "id-b", "name": "b"}, "links": [{"id": "B0"}]}]}


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_one_read_per_own_link_of_the_last_day_in_minutes():
    asked = []

    def get(**params):
        asked.append(params)
        if params["link"] == "L1":
            raise RuntimeError("HTTP 503")
        if params["link"] == "L2":
            return {"t": [NOW - 60], "rtt_ms": [0.2]}  # an agent of before the column
        return {"tier": "10s", "step_s": 60.0, "t": [NOW - 60], "loss": [0.0],
                "loss_max": [0.0], "rtt_ms": [0.2], "state": ["up"]}

    view = cluster(3)
    dh.attach(view, NOW, get)
    got = view[LOSS_HISTORY]
    assert [p["link"] for p in asked] == ["L0", "L1", "L2"]  # not the peer's link B0
    assert asked[0] == {"link": "L0", "since": f"{NOW - PAST_S:.3f}", "until": f"{NOW:.3f}",
                        "points": 1641, "columns": "loss,state"}
    assert list(got["links"]) == ["L0"] and got["unread"] == ["L1", "L2"]
    assert "rtt_ms" not in got["links"]["L0"] and got["links"]["L0"]["loss"] == [0.0]


def test_bounded_in_links_and_in_time():
    clock = Clock()
    asked = []

    def get(**params):
        asked.append(params["link"])
        clock.t += 0.3  # each read takes 0.3 s
        return {"t": [], "loss": []}

    got = dh.read(get, cluster(40), NOW, clock)
    # reads begin until 1 s has gone: 4 of them (0, 0.3, 0.6, 0.9 s)
    assert asked == ["L0", "L1", "L2", "L3"]
    assert got["unread"] == [f"L{i}" for i in range(4, 40)]
    clock.t = 10.0  # no time: the link count bounds it
    asked.clear()
    got = dh.read(lambda **p: asked.append(p["link"]) or {"t": [], "loss": []},
                  cluster(40), NOW, clock)
    assert len(asked) == dh.MAX_LINKS and len(got["unread"]) == 40 - dh.MAX_LINKS
    # a reading already made (doctor --active's second look) is put in, not read again
    view = cluster(40)
    dh.attach(view, NOW, lambda **p: pytest.fail("read again"), got)
    assert view[LOSS_HISTORY] is got

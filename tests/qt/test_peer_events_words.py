"""Peer events as a new user meets them (issue 34 point 11): the app that starts with its
agent hears of every peer the agent finds in its first seconds, each named, not by
address, and said to be found, not to be reached "again"."""

from __future__ import annotations

from helpers import AgentProc, free_port

from exotray.ui.client.poll import AgentClient
from exotray.ui.tray.summary import notification


def test_an_app_started_with_its_agent_hears_every_peer_found_by_name(qtbot, tmp_path):
    pa, pb, pc = free_port(), free_port(), free_port()
    got: list[dict] = []
    # started before its agent, as the tray app starts its own; polling slowly, so that
    # it attaches after the agent found its peers (as a busy desktop at login may)
    client = AgentClient(pa, tmp_path / "state-a", interval=4.0)
    client.eventsArrived.connect(got.extend)
    client.start()
    agents = [AgentProc(tmp_path, "a", pa, [pb, pc]), AgentProc(tmp_path, "b", pb, [pa]),
              AgentProc(tmp_path, "c", pc, [pa])]
    try:
        qtbot.waitUntil(lambda: len([e for e in got if e["type"] == "peer_up"]) == 2,
                        timeout=20_000)
        ups = [e for e in got if e["type"] == "peer_up"]
        assert sorted(e["peer_name"] for e in ups) == ["b", "c"]  # names, not 127.0.0.1:port
        assert all(e["first"] for e in ups)
        title, body = notification(ups[0], "a")
        assert title == f"Peer found: {ups[0]['peer_name']}" and "again" not in body
        # a second app attached later hears nothing old
        late: list[dict] = []
        other = AgentClient(pa, tmp_path / "state-a", interval=0.2)
        other.eventsArrived.connect(late.extend)
        polled: list[object] = []
        other.clusterChanged.connect(polled.append)
        other.start()
        qtbot.waitUntil(lambda: len(polled) >= 3, timeout=10_000)
        other.stop()
        assert late == []
    finally:
        client.stop()
        for x in agents:
            x.close()


def test_a_peer_back_again_is_up_again():
    ev = {"type": "peer_up", "peer_name": "b", "first": False}
    assert notification(ev, "a") == ("Peer up: b", "a reaches b again")
    assert notification({**ev, "first": True}, "a") == ("Peer found: b", "a reaches b")



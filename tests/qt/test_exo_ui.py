"""exo in the tray app, on real widgets fed by a real agent that reads a stand-in exo
(tests/exo_standin.py) on loopback: the topology draws the link in use with its model,
the menu's peer line and the table's exo column say it — and none of it without exo."""

from __future__ import annotations

import json

import exo_state as ex
import pytest
from exo_standin import StandIn
from helpers import AgentProc, free_port

from exotray.ui.app import App
from exotray.ui.link.model import EXO, exo_cell
from exotray.ui.tray import summary

NODE = "6a1f0c2e93b44d7ab0f11c2d3e4f5a60"
PEER = "b2c4e6f80a1b4c3d8e5f6a7b8c9d0e1"
SHORT = "Llama-3.3-70B-Instruct-4bit"


@pytest.fixture
def exo(tmp_path):
    s = StandIn(tmp_path).start()
    nodes = {NODE: {"name": "studio-1", "interfaces": [("lo", "127.0.0.1", "unknown")]},
             PEER: {"name": "studio-2", "interfaces": [("lo", "127.0.0.1", "unknown")]}}
    inst = ex.ring_instance("ring-1", ex.MODEL_70B, [(NODE, "127.0.0.1"), (PEER, "127.0.0.1")])
    s.say(node_id=json.dumps(NODE).encode(), state=ex.dumps(ex.state({"ring-1": inst}, nodes)))
    yield s
    s.stop()


@pytest.fixture
def app(qtbot, tmp_path, exo):
    pa, pb = free_port(), free_port()
    a = AgentProc(tmp_path, "studio-1", pa, [pb], "--exo-url", exo.url)
    b = AgentProc(tmp_path, "studio-2", pb, [pa], "--exo-url", "")
    app = App(port=pa, state_dir=a.state, manage_agent=False, interval=0.2)
    sent: list = []
    app.notifier.notify = lambda title, body, key="", urgency="normal": sent.append(
        (title, body, key))
    app.sent = sent
    try:
        a.wait_ready()
        b.wait_ready()
        app.start()
        yield app
    finally:
        app.client.stop()
        app.tray.hide()
        if app.window is not None:
            app.window.close()
        a.close()
        b.close()


def _marked(app) -> bool:
    c = app.cluster
    return bool(c and len(c["nodes"]) == 2 and c["nodes"][0]["links"]
                and c["nodes"][0]["links"][0]["exo_instances"])


def test_link_in_use_is_drawn_named_and_listed_then_gone_with_exo(qtbot, app, exo):
    qtbot.waitUntil(lambda: _marked(app), timeout=15_000)
    app.open_window()
    w = app.window
    qtbot.waitUntil(lambda: w.topology.exo_link_ids() != [], timeout=5_000)
    link = app.cluster["nodes"][0]["links"][0]
    topo = w.topology
    assert topo.exo_link_ids() == [link["id"]]
    assert len(topo.exo_halo().getData()[0]) > 0  # the casing under the edge
    assert topo.badge_text(link["id"]).endswith(f"\nexo: {SHORT} (ring)")
    assert f"{SHORT} (ring)" in topo.edge_tooltip(link["id"])
    # the table's exo column, shown because our exo answers
    t = w.table
    assert not t.isColumnHidden(EXO)
    row = t.link_ids().index(link["id"])
    assert t.proxy.index(row, EXO).data() == f"{SHORT} (ring)"
    # the tray menu's peer line
    app.tray.menu.aboutToShow.emit()
    line = next(x for x in app.tray.menu_texts() if x.startswith("studio-2"))
    assert line.endswith(f" · exo: {SHORT} over Loopback")

    exo.stop()  # exo goes away: every mark goes
    qtbot.waitUntil(lambda: app.cluster["nodes"][0]["exo"]["status"] == "absent"
                    and not app.cluster["nodes"][0]["links"][0]["exo_instances"],
                    timeout=15_000)
    qtbot.waitUntil(lambda: t.isColumnHidden(EXO), timeout=5_000)
    xs = topo.exo_halo().getData()[0]
    assert topo.exo_link_ids() == [] and (xs is None or len(xs) == 0)
    assert "exo" not in topo.badge_text(link["id"])
    app.tray.menu.aboutToShow.emit()
    assert not any("exo:" in x for x in app.tray.menu_texts())
    exo.server = type("Stopped", (), {"shutdown": lambda s: None,
                                      "server_close": lambda s: None})()


def test_slow_path_event_becomes_one_notification_and_its_clear_replaces_it(qtbot, app):
    qtbot.waitUntil(lambda: _marked(app), timeout=15_000)
    link = app.cluster["nodes"][0]["links"][0]
    app.sent.clear()
    raised = {"seq": 20, "type": "exo_slow_path", "link_id": link["id"],
              "better_link_id": "tb-link", "peer_name": "studio-2", "local_label": "Wi-Fi",
              "better_label": "Thunderbolt Bridge", "better_idle": True,
              "instance": {"id": "ring-1", "model": ex.MODEL_70B, "backend": "ring"}}
    app._events([raised, {**raised, "seq": 21, "type": "exo_slow_path_cleared"}])
    assert app.sent == [
        ("exo is on a slow link to studio-2",
         f"exo is using Wi-Fi to studio-2 while Thunderbolt Bridge is up and idle ({SHORT})",
         link["id"]),
        ("exo's path to studio-2 changed",
         f"exo ({SHORT}) no longer uses Wi-Fi to studio-2 while Thunderbolt Bridge is better",
         link["id"]),
    ]


def test_no_exo_no_column_no_clutter(qtbot, tmp_path):
    """An agent whose exo URL answers nothing: the window has no exo column, the menu no
    exo words (the agent's status still has its one line)."""
    pa, pb = free_port(), free_port()
    a = AgentProc(tmp_path, "a", pa, [pb], "--exo-url", f"http://127.0.0.1:{free_port()}")
    b = AgentProc(tmp_path, "b", pb, [pa], "--exo-url", "")
    app = App(port=pa, state_dir=a.state, manage_agent=False, interval=0.2)
    try:
        a.wait_ready()
        b.wait_ready()
        app.start()
        qtbot.waitUntil(lambda: app.cluster is not None and len(app.cluster["nodes"]) == 2
                        and (app.cluster["nodes"][0]["exo"] or {}).get("status") == "absent",
                        timeout=15_000)
        app.open_window()
        assert app.window.table.isColumnHidden(EXO)
        assert app.window.topology.exo_link_ids() == []
        app.tray.menu.aboutToShow.emit()
        assert not any("exo:" in x for x in app.tray.menu_texts())
    finally:
        app.client.stop()
        app.tray.hide()
        if app.window is not None:
            app.window.close()
        a.close()
        b.close()


def test_rdma_words():
    jaccl = {"exo_instances": [{"id": "j", "model": "m/Big", "backend": "jaccl"}],
             "rdma": "not_counted"}
    assert exo_cell(jaccl) == "Big (jaccl) · RDMA not counted (RDMA state unknown)"
    assert exo_cell({**jaccl, "rdma_enabled": True, "rdma_ports": [
        {"device": "rdma_en3", "state": "PORT_DOWN"}]}) == (
        "Big (jaccl) · RDMA not counted (RDMA enabled · rdma_en3 PORT_DOWN)")
    assert exo_cell({"rdma": "counted"}) == "RDMA counted"
    assert exo_cell({}) == ""
    assert summary.exo_text([{"local_label": "Thunderbolt 2", **jaccl}]) == \
        "exo: Big over Thunderbolt 2"


def test_counted_rdma_says_it_is_included(qtbot):
    """Linux: the RDMA port counters are in rx / tx, and every view says so."""
    from exotray.core.topology import Edge
    from exotray.ui.link.view import LinkDetails
    from exotray.ui.topology import tips as topology_tips

    lk = {"id": "l1", "peer_name": "h2", "peer_address": "10.0.0.2", "state": "saturated",
          "local_interface": "ib0", "rx_bytes_per_s": 1e3, "tx_bytes_per_s": 2.4e9,
          "capacity_bytes_per_s": 2.5e9, "utilization": 0.96, "rdma": "counted",
          "exo_instances": [{"id": "j", "model": "m/Big", "backend": "jaccl"}]}
    view = LinkDetails()
    qtbot.addWidget(view)
    view.set_link(lk, "h1", {})
    assert view.panel._subs["tx_bytes_per_s"].text() == "RDMA included (port counters)"
    assert "RDMA port counters on it are added to rx / tx" in view.numbers()["note"]
    assert exo_cell(lk) == "Big (jaccl) · RDMA counted"
    tip = topology_tips.edge_tooltip(Edge("l1", "h1", "h2", lk, None), str, {})
    assert "counted in rx / tx" in tip and "(IP only)" not in tip

"""Tray icon state and menu, and the window's selection sync, on real widgets."""

from __future__ import annotations

import copy

import pytest
from PySide6.QtCore import Qt

from exotray.ui.link.model import RTT
from exotray.ui.tray.icon import Tray, tray_icon
from exotray.ui.window.dashboard import MainWindow


def _sat(cluster):
    return next(lk for lk in cluster["nodes"][0]["links"] if lk["state"] == "saturated")


@pytest.mark.parametrize("state", ["ok", "warning", "alert", "offline"])
@pytest.mark.parametrize("template", [False, True])
def test_icons_load_from_package_resources(qtbot, state, template):
    icon = tray_icon(state, template)
    assert not icon.isNull() and not icon.pixmap(22, 22).isNull()
    assert icon.isMask() == template


def test_tray_icon_follows_health(qtbot, cluster):
    tray = Tray()
    assert tray.state == "offline"
    tray.update(cluster, "running")
    assert tray.state == "alert"
    calm = copy.deepcopy(cluster)
    for lk in calm["nodes"][0]["links"]:
        lk.update(state="up", utilization=0.1, loss=0.0)
    tray.update(calm)
    assert tray.state == "ok"
    assert tray.icon.icon().cacheKey() == tray_icon("ok").cacheKey()
    tray.update(None, "restarting")
    assert tray.state == "offline"
    assert "restarting" in tray.icon.toolTip()


def test_menu_is_rebuilt_when_it_opens(qtbot, cluster):
    tray = Tray()
    tray.update(None, "starting")
    tray.menu.aboutToShow.emit()
    assert tray.menu_texts()[0] == "Starting the exotray agent…"
    tray.update(cluster, "running")
    tray.menu.aboutToShow.emit()
    assert tray.menu_texts() == [
        "2 peers · 1 link saturated · 1 peer down",
        "1 problem: see Health in the dashboard",  # exotray doctor's reachable: gpu-3
        "gpu-3 · down",
        "studio-2 · Virtual · 159 ms · 6.3 MB/s · 101 % · saturated",
        "Open Dashboard",
        "Pause Monitoring",
        "Preferences…",
        "Quit exotray",
    ]
    # A peer line opens the dashboard on that peer's busiest link.
    with qtbot.waitSignal(tray.openDashboard) as sig:
        next(a for a in tray.menu.actions() if a.text().startswith("studio-2")).trigger()
    assert sig.args == [_sat(cluster)["id"]]
    with qtbot.waitSignal(tray.pauseToggled) as sig:
        next(a for a in tray.menu.actions() if a.text() == "Pause Monitoring").trigger()
    assert sig.args == [True]


def test_window_edge_click_selects_row_and_fills_details(qtbot, cluster, history):
    w = MainWindow(None)
    qtbot.addWidget(w)
    w.resize(1280, 820)
    w.show()
    w.set_cluster(cluster)
    sat = _sat(cluster)
    view = w.topology
    pos = view.mapFromScene(view.edge_scene_pos(sat["id"]))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert w.link_id == sat["id"]
    assert w.table.selected_link() == sat["id"]
    assert w.details.isVisible()
    w.details.set_history(history)  # what the agent's /v1/history answer fills in
    assert w.details.point_count() == len(history["t"])


def test_window_row_selection_selects_edge(qtbot, cluster):
    w = MainWindow(None)
    qtbot.addWidget(w)
    w.set_cluster(cluster)
    own = [lk["id"] for lk in cluster["nodes"][0]["links"]]
    target = own[2]
    row = w.table.link_ids().index(target)
    w.table.selectRow(row)
    assert w.link_id == target
    assert w.topology.selected_link() in (target, *[
        i for e in w.edges if target in e.link_ids for i in e.link_ids])


def test_selecting_the_far_end_shows_our_end(qtbot, cluster):
    """A link measured by the peer maps to our own end of the same cable (its history
    is local)."""
    w = MainWindow(None)
    qtbot.addWidget(w)
    w.set_cluster(cluster)
    ours = _sat(cluster)
    theirs = next(lk for n in cluster["nodes"][1:] for lk in n["links"]
                  if lk["state"] == "saturated")
    w.select_link(theirs["id"])
    assert w.link_id == ours["id"]


def test_table_updates_in_place_and_sorts(qtbot, cluster):
    w = MainWindow(None)
    qtbot.addWidget(w)
    w.set_cluster(cluster)
    n = w.table.source.rowCount()
    assert n == sum(len(node["links"]) for node in cluster["nodes"])
    w.table.select_link(_sat(cluster)["id"])
    again = copy.deepcopy(cluster)
    _sat(again)["rtt_ms"] = 12.5
    w.set_cluster(again)
    assert w.table.source.rowCount() == n
    assert w.table.selected_link() == _sat(cluster)["id"]  # selection survives updates
    w.table.sortByColumn(RTT, Qt.SortOrder.DescendingOrder)  # numerically
    rtts = [w.table.proxy.index(r, RTT).data(Qt.ItemDataRole.UserRole + 2)
            for r in range(w.table.proxy.rowCount())]
    assert rtts == sorted(rtts, reverse=True)


def test_left_click_opens_the_dashboard_on_linux(qtbot):
    import sys

    from PySide6.QtWidgets import QSystemTrayIcon

    tray = Tray()
    if sys.platform == "darwin":
        pytest.skip("on macOS a click opens the menu")
    with qtbot.waitSignal(tray.openDashboard) as sig:
        tray.icon.activated.emit(QSystemTrayIcon.ActivationReason.Trigger)
    assert sig.args == [""]

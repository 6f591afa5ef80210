"""The window's Health view and the tray menu's count of problems: `exotray doctor`'s
checks over the recorded lab view (gpu-3 killed), on real widgets."""

from __future__ import annotations

import doctor_views as dv
from PySide6.QtCore import Qt

from exotray.core.events import unix
from exotray.ui.tray.icon import Tray
from exotray.ui.window.dashboard import MainWindow

GPU3_LINK = "8f432a8f84089cd4"  # studio-1's link to gpu-3, down in the recording


def _clock(events):
    now = max(unix(e["at"]) for e in events) + 10
    return lambda: now


def test_the_health_view_lists_the_checks_problems_first_and_a_click_selects_the_link(
        qtbot, cluster, events):
    w = MainWindow(None, clock=_clock(events))
    qtbot.addWidget(w)
    w.timeline.set_events(events, 0, 2e9)
    w.set_cluster(cluster)
    rows = w.health.rows()
    assert len(rows) == 15
    assert rows[0][:2] == ("fail", "reachable") and "gpu-3" in rows[0][2]
    assert [r[1] for r in rows if r[0] == "fail"] == ["reachable"]
    tabs = w.health.tabs
    assert tabs is not None and tabs.tabText(tabs.indexOf(w.health)) == "Health · 1 failing"
    assert "What to do:" in w.health.list.topLevelItem(0).toolTip(2)
    assert w.link_id is None
    item = w.health.list.topLevelItem(0)
    rect = w.health.list.visualItemRect(item)
    tabs.setCurrentWidget(w.health)
    w.show()
    qtbot.waitExposed(w)
    qtbot.mouseClick(w.health.list.viewport(), Qt.MouseButton.LeftButton,
                     pos=rect.center())
    assert w.link_id == GPU3_LINK
    assert w.table.selected_link() == GPU3_LINK
    # the same view again: the list is not rebuilt (its selection stays)
    before = w.health.list.topLevelItem(0)
    w.set_cluster(cluster)
    assert w.health.list.topLevelItem(0) is before
    # no agent: said, no checks
    w.set_cluster(None)
    assert w.health.rows() == [] and "does not answer" in w.health.heading.text()


def test_a_healthy_cluster_has_no_failing_tab_title(qtbot):
    w = MainWindow(None, clock=lambda: dv.NOW)
    qtbot.addWidget(w)
    w.set_cluster(dv.healthy())
    assert {r[0] for r in w.health.rows()} == {"ok"}
    assert w.health.tabs.tabText(w.health.tabs.indexOf(w.health)) == "Health"


def test_the_tray_menu_counts_the_failing_checks(qtbot, cluster):
    tray = Tray()
    tray.update(cluster, "running")
    tray.menu.aboutToShow.emit()
    texts = tray.menu_texts()
    assert texts[1] == "1 problem: see Health in the dashboard"
    with qtbot.waitSignal(tray.openDashboard) as sig:
        next(a for a in tray.menu.actions() if a.text() == texts[1]).trigger()
    assert sig.args == [""]
    # a link still flapping (an event of the last day): a second failing check
    import time

    from exotray.core.events import iso

    flapping = {"seq": 9, "at": iso(time.time() - 60), "type": "link_flapping",
                "link_id": GPU3_LINK, "node": "studio-1", "peer_name": "gpu-3"}
    cleared = {"seq": 10, "at": iso(time.time() - 30), "type": "link_flapping_cleared",
               "link_id": GPU3_LINK}
    tray.add_events([flapping])
    tray.menu.aboutToShow.emit()
    assert tray.menu_texts()[1] == "2 problems: see Health in the dashboard"
    tray.add_events([cleared])
    tray.update(dv.healthy(), "running")
    tray.menu.aboutToShow.emit()
    assert not any("problem" in t for t in tray.menu_texts())
    # the day's events read again (at the next attach) overlap those held: no duplicate
    # raise left open as "still flapping"
    tray.add_events([dict(flapping), dict(cleared)])
    tray.menu.aboutToShow.emit()
    assert not any("problem" in t for t in tray.menu_texts())
    # an agent restarted without a database counts its events from 1 again: a new event
    # with a seq held before is new, not a duplicate
    tray.add_events([{"seq": 9, "at": iso(time.time() - 5), "type": "link_flapping",
                      "link_id": GPU3_LINK, "node": "studio-1", "peer_name": "gpu-3"}])
    tray.menu.aboutToShow.emit()
    assert any("problem" in t for t in tray.menu_texts())

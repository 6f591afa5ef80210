"""The dashboard after issue 34 (the first hour, third pass): what matters fits the
default size, a link another node measures says so instead of failing, a paused node is
said to be paused, the title says the name once, a measured capacity behind the user's
own says so, and capacity tests are marked on the link's charts."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from test_window_first_hour import MEASURED, SAT, FakeClient

from exotray.core.events import iso
from exotray.ui.link.model import CAPACITY, STATE, UTIL
from exotray.ui.window.actions import PAUSED_TEXT, measured
from exotray.ui.window.dashboard import MainWindow


@pytest.fixture
def window(qtbot: Any, cluster: dict, history: dict) -> MainWindow:
    w = MainWindow(FakeClient(history, MEASURED))  # type: ignore[arg-type]
    qtbot.addWidget(w)
    w.resize(1280, 820)
    w.show()
    qtbot.waitExposed(w)
    w.set_cluster(cluster)
    return w


def test_the_columns_that_matter_fit_the_default_size(window: MainWindow) -> None:
    """Point 3: State, RTT, Utilization and Capacity come before Via and show at
    1280 x 820 without scrolling."""
    header = window.table.horizontalHeader()
    width = window.table.viewport().width()
    for column in (STATE, UTIL, CAPACITY):
        right = header.sectionViewportPosition(column) + header.sectionSize(column)
        assert right <= width, (column, right, width)


def test_a_link_another_node_measures_says_who_keeps_it(window: MainWindow,
                                                         cluster: dict) -> None:
    """Point 9: measure and export are off, the tooltip says why, and the details say
    where its history is instead of starting empty without a word."""
    # gpu-3 -> studio-2: an edge between two other nodes (no end of it is ours)
    window.select_link("127c32bff37c2e68")
    assert window.link_id == "127c32bff37c2e68"
    owner = next(n["node"]["name"] for n in cluster["nodes"]
                 if any(lk["id"] == window.link_id for lk in n["links"]))
    assert owner != cluster["nodes"][0]["node"]["name"]
    for action in (window.measure_action, window.export_action):
        assert not action.isEnabled() and f"measured by {owner}" in action.toolTip()
    assert f"Measured by {owner}" in window.details.numbers()["result"]
    window.select_link(SAT)  # one of ours again: both work
    assert window.measure_action.isEnabled() and window.export_action.isEnabled()
    assert "measured by" not in window.measure_action.toolTip()


def test_a_paused_node_says_so(window: MainWindow, cluster: dict) -> None:
    """Point 12."""
    assert window.paused_banner.isHidden()
    paused = copy.deepcopy(cluster)
    paused["nodes"][0]["paused"] = True
    window.set_cluster(paused)
    assert not window.paused_banner.isHidden()
    assert window.paused_banner.label.text() == PAUSED_TEXT
    window.set_cluster(cluster)
    assert window.paused_banner.isHidden()


def test_the_title_says_exotray_once(window: MainWindow) -> None:
    """Point 15: Qt adds the application's display name ("exotray") to the title."""
    assert window.windowTitle() == "cluster network"


def test_a_result_behind_the_users_capacity_says_the_setting_stays() -> None:
    """Point 7."""
    text = measured({**MEASURED, "capacity_of": "xt1a", "override_mbit": 40}, "17:10")
    assert "kept for xt1a, but your capacity setting for xt1a (5 MB/s) stays in force" in text
    assert "now its capacity" not in text
    assert "now its capacity" in measured({**MEASURED, "capacity_of": "xt1a"}, "17:10")


def test_the_selected_links_capacity_tests_are_marked(window: MainWindow,
                                                      history: dict) -> None:
    """Point 8: a capacity_test event of the link shades its interval on the charts."""
    t = history["t"]
    window.select_link(SAT)
    window.timeline.add_events([{
        "seq": 90, "at": iso(t[14]), "type": "capacity_test", "link_id": SAT,
        "started_at": iso(t[10]), "seconds": 4.0, "role": "initiator",
        "peer_name": "studio-2", "local_interface": "xt1a"}])
    window._new_events([])  # (what the client's signal does; the timeline has it)
    window._show_tests()
    (region,) = window.details.charts.test_regions()
    assert region.getRegion() == pytest.approx((t[10], t[14]), abs=0.01)

"""What the tray says when there is nothing to monitor yet, or the agent cannot run."""

from __future__ import annotations

import pytest

from exotray.ui.tray.icon import Tray, tray_icon

ALONE = {"self": "x", "nodes": [{"node": {"name": "studio-1"}, "links": []}],
         "discovery": {"mdns": True, "addresses": ["10.0.0.2"]}}


@pytest.mark.parametrize("template", [False, True])
def test_the_no_peers_icon_exists(qtbot, template):
    icon = tray_icon("alone", template)
    assert not icon.isNull() and not icon.pixmap(22, 22).isNull()
    assert icon.cacheKey() != tray_icon("ok", template).cacheKey()


def test_no_peers_is_its_own_state_and_says_how_to_get_peers(qtbot):
    tray = Tray()
    tray.update(ALONE, "running")
    assert tray.state == "alone"
    assert tray.icon.icon().cacheKey() == tray_icon("alone").cacheKey()
    tray.menu.aboutToShow.emit()
    texts = tray.menu_texts()
    assert texts[0] == "No peers yet"
    assert "another machine of this network (mDNS)" in texts[1]
    assert "--peer HOST:PORT" in texts[2]
    off = {**ALONE, "discovery": {"mdns": False}}
    tray.update(off)
    tray.menu.aboutToShow.emit()
    assert tray.menu_texts()[1].startswith("mDNS is off: add --peer HOST:PORT")


def test_the_agents_problem_is_in_the_menu_and_tooltip(qtbot):
    tray = Tray()
    problem = "config /home/u/.config/exotray/config.toml is not valid TOML: line 1 & more"
    tray.update(None, "config_error")
    tray.set_problem(problem)
    tray.menu.aboutToShow.emit()
    texts = tray.menu_texts()
    assert texts[0] == "The exotray agent cannot start: fix its settings"
    assert texts[1] == problem.replace("&", "&&")  # a literal '&', not a shortcut
    assert "starts it again when the file is saved" in texts[2]
    assert problem in tray.icon.toolTip()
    tray.set_problem('peer sent <img src="/dev/zero">')
    assert "<" not in tray.icon.toolTip() and '‹img src="/dev/zero"›' in tray.icon.toolTip()
    tray.set_problem(None)
    tray.menu.aboutToShow.emit()
    assert problem.replace("&", "&&") not in tray.menu_texts()


def test_node_warnings_are_in_the_menu(qtbot):
    from exotray.core.health import LOCAL_NETWORK_DENIED

    tray = Tray()
    tray.update({**ALONE, "nodes": [{**ALONE["nodes"][0], "warnings": [LOCAL_NETWORK_DENIED]}]},
                "running")
    tray.menu.aboutToShow.emit()
    assert tray.menu_texts()[1].startswith("Local Network access is not granted")

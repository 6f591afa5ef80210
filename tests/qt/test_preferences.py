"""Preferences round trip to a real agent: read, edit, save, applied live and saved."""

from __future__ import annotations

import tomllib

import pytest
from helpers import AgentProc, free_port, wait_for
from PySide6.QtCore import Qt

from exotray.ui.client.poll import AgentClient
from exotray.ui.window.preferences import Preferences


@pytest.fixture
def agent(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text("# written by Preferences\n")
    a = AgentProc(tmp_path, "prefs", free_port(), [], "--config", str(cfg))
    a.config = cfg
    try:
        a.wait_ready()
        yield a
    finally:
        a.close()


@pytest.fixture
def client(qtbot, agent):
    c = AgentClient(agent.port, agent.state, interval=0.2)
    c.start()
    yield c
    c.stop()


def test_round_trip(qtbot, agent, client, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    cluster = agent.get("/v1/cluster")
    dlg = Preferences(client, cluster)
    qtbot.addWidget(dlg)
    dlg.show()
    assert not dlg.fields.isVisible()  # until the agent's values are in
    qtbot.waitUntil(lambda: dlg.threshold.value() == 90.0 and "Saved in" in dlg.status.text(),
                    timeout=5000)
    assert dlg.fields.isVisible()
    assert dlg.interval.value() == 1.0 and dlg.notify_peers.isChecked()
    names = [dlg.capacity.item(r, 0).data(Qt.ItemDataRole.UserRole)
             for r in range(dlg.capacity.rowCount())]
    assert "lo" not in names  # loopback has no capacity worth setting
    dlg.threshold.setValue(80)
    dlg.sustain.setValue(2)
    dlg.notify_peers.setChecked(False)
    dlg.login.setChecked(True)
    if names:
        dlg.capacity.item(0, 2).setText("2500")
    with qtbot.waitSignal(dlg.saved, timeout=5000) as sig:
        dlg.save()
    assert sig.args[0]["threshold"] == 0.8 and sig.args[0]["notify_peers"] is False
    # Applied in the running agent and saved in its config file.
    r = agent.get("/v1/snapshot")
    assert r["paused"] is False
    saved = tomllib.loads(agent.config.read_text())
    assert saved["threshold"] == 0.8 and saved["sustain"] == 2.0
    if names:
        assert saved["capacity"] == {names[0]: 2500.0}
        assert wait_for(lambda: next(i for i in agent.get("/v1/snapshot")["interfaces"]
                                     if i["name"] == names[0])["capacity_source"] == "override",
                        3)
    assert (tmp_path / "xdg" / "autostart" / "exotray.desktop").exists()


def test_bad_capacity_is_refused_before_sending(qtbot, agent, client, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    dlg = Preferences(client, agent.get("/v1/cluster"))
    qtbot.addWidget(dlg)
    qtbot.waitUntil(lambda: "Saved in" in dlg.status.text(), timeout=5000)
    if dlg.capacity.rowCount() == 0:
        pytest.skip("no non-loopback interface here")
    dlg.capacity.item(0, 2).setText("fast")
    dlg.save()
    assert "not a number" in dlg.status.text()


def test_agent_without_token_says_so(qtbot, agent, tmp_path):
    c = AgentClient(agent.port, tmp_path / "elsewhere", interval=0.2)
    c.start()
    try:
        dlg = Preferences(c, None)
        qtbot.addWidget(dlg)
        dlg.show()
        qtbot.waitUntil(lambda: "Cannot read" in dlg.status.text(), timeout=5000)
        assert "no control token" in dlg.status.text()
        assert "another state dir" in dlg.status.text()
        # No numbers that did not come from the agent (spin boxes' minimums: 10 %, 0.0 s).
        assert not dlg.fields.isVisible()
        assert not dlg.buttons.button(dlg.buttons.StandardButton.Save).isEnabled()
    finally:
        c.stop()

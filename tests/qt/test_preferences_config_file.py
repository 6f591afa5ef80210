"""Preferences and the config file as its user wrote it (issue 34 points 4, 5 and 15):
the tray app whose agent refused its config opens Preferences on the file itself, says
which key is wrong and on which line, and Save fixes the file so that the agent starts;
a save through a running agent changes only what the user changed; the capacity table
lists the interface that carries the links, loopback too. Real agents on loopback (mDNS
off), real widgets; the one fake is the notification daemon."""

from __future__ import annotations

import tomllib

import httpx
import pytest
from helpers import AgentProc, free_port, wait_for
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QLabel

from exotray.ui.app import App
from exotray.ui.client.poll import AgentClient
from exotray.ui.client.supervisor import agent_answers
from exotray.ui.window.preferences import Preferences

#: a hand-written config with two keys the agent refuses and one value out of range
REFUSED = """\
# studio-1, by hand
sustain = 2          # quick to call a link saturated
no_mdns = true       # the lab's switch drops multicast
threshold = 2        # (meant: 2 % below line rate?)
colour = "blue"

[capacity]
lo = 10000           # Mbit/s
"""


def _labels(widget) -> list[str]:
    return [w.text() for w in widget.findChildren(QLabel) if w.isVisibleTo(widget)]


@pytest.fixture
def refused_app(qtbot, tmp_path, monkeypatch):
    """The tray app managing its agent, which refuses `config.toml` (exit status 78)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    cfg = tmp_path / "config.toml"
    cfg.write_text(REFUSED)
    state = tmp_path / "state"
    app = App(port=free_port(), state_dir=state, interval=0.2, agent_args=[
        "--no-mdns", "--bind", "127.0.0.1", "--state-dir", str(state), "--config", str(cfg)])
    app.notifier.notify = lambda *a, **k: None  # no notification daemon here
    app.config = cfg
    app.start()
    try:
        qtbot.waitUntil(lambda: app.supervisor.state == "config_error", timeout=15_000)
        yield app
    finally:
        app.client.stop()
        app.supervisor.stop()
        app.tray.hide()
        if app.prefs is not None:
            app.prefs.close()


def test_preferences_open_on_the_refused_file_and_save_lets_the_agent_start(
        qtbot, refused_app):
    app, cfg = refused_app, refused_app.config
    app.open_preferences()
    dlg = app.prefs
    qtbot.addWidget(dlg)
    # Not "Cannot read the agent's settings: Connection refused": the file, and what is
    # wrong in it, line by line.
    qtbot.waitUntil(lambda: "Loading" not in dlg.status.text(), timeout=5000)
    assert "Cannot read" not in dlg.status.text()
    assert "line 3: unknown setting no_mdns (did you mean `mdns = false`?)" in _labels(dlg)
    assert dlg.config_file == cfg
    assert dlg.problems.isVisible() and dlg.fields.isVisible()
    said = _labels(dlg.problems)
    assert said[0] == f"The agent is not running: it refused its config file {cfg}:"
    assert said[1:] == ["line 3: unknown setting no_mdns (did you mean `mdns = false`?)",
                        "line 4: threshold 2 is outside 0.1..1.0",
                        "line 5: unknown setting colour"]
    assert "Cannot read" not in dlg.status.text()
    # the field with a wrong value is marked; the other wrong keys each get a fix
    assert dlg.wrong_fields == {"threshold": "threshold 2 is outside 0.1..1.0"}
    assert "bold" in dlg._form.labelForField(dlg.threshold).styleSheet()
    assert [(box.text(), box.isChecked()) for box, _ in dlg.problems.fixes] == [
        ("Save writes `mdns = false` instead", True),
        ("Save removes `colour` (the agent then uses its default)", True)]
    # the file's good values are what the fields show
    assert dlg.sustain.value() == 2.0 and dlg.clear.value() == 5.0
    rows = {dlg.capacity.item(r, 0).data(Qt.ItemDataRole.UserRole): dlg.capacity.item(r, 2).text()
            for r in range(dlg.capacity.rowCount())}
    assert rows == {"lo": "10000"}
    assert dlg.buttons.button(QDialogButtonBox.StandardButton.Save).isEnabled()

    dlg.threshold.setValue(80)
    with qtbot.waitSignal(dlg.saved, timeout=5000) as sig:
        dlg.save()
    assert sig.args[0]["threshold"] == 0.8
    # Only the wrong keys changed; comments, order and the rest as written.
    assert cfg.read_text() == """\
# studio-1, by hand
sustain = 2          # quick to call a link saturated
threshold = 0.8        # (meant: 2 % below line rate?)
mdns = false

[capacity]
lo = 10000           # Mbit/s
"""
    # The supervisor sees the file change and starts the agent, which takes it.
    qtbot.waitUntil(lambda: agent_answers(app.port), timeout=15_000)
    token = (app.state_dir / "control_token").read_text().strip()
    got = httpx.get(f"http://127.0.0.1:{app.port}/v1/control/settings", trust_env=False,
                    headers={"authorization": f"Bearer {token}"}).json()["settings"]
    assert (got["threshold"], got["sustain"], got["capacity"]) == (0.8, 2.0, {"lo": 10000})
    assert app.supervisor.problem is None
    # Opened again, Preferences are the running agent's.
    app.open_preferences()
    qtbot.waitUntil(lambda: "Saved in" in dlg.status.text(), timeout=5000)
    assert dlg.config_file is None and not dlg.problems.isVisible()


def test_a_file_that_is_not_toml_is_named_and_not_overwritten(qtbot, refused_app):
    app, cfg = refused_app, refused_app.config
    cfg.write_text("threshold = 0.8\nname = \n")  # the supervisor restarts it: refused
    qtbot.waitUntil(lambda: app.supervisor.state == "config_error"
                    and "not valid TOML" in (app.supervisor.problem or ""), timeout=15_000)
    app.open_preferences()
    dlg = app.prefs
    qtbot.waitUntil(lambda: "Loading" not in dlg.status.text(), timeout=5000)
    assert "Cannot read" not in dlg.status.text()
    said = _labels(dlg.problems)
    assert said[0] == f"The agent is not running: it refused its config file {cfg}:"
    assert said[1].startswith(f"config {cfg} is not valid TOML") and "line 2" in said[1]
    assert not dlg.fields.isVisible()
    assert not dlg.buttons.button(QDialogButtonBox.StandardButton.Save).isEnabled()
    assert dlg.open_file.isVisible()
    assert cfg.read_text() == "threshold = 0.8\nname = \n"


# -- through a running agent -------------------------------------------------------------

@pytest.fixture
def two_agents(tmp_path):
    """Two agents on loopback, each the other's peer: their only links are over `lo`."""
    cfg = tmp_path / "mine.toml"
    cfg.write_text("# mine\ninterval = 0.125   # fast\nthreshold = 0.9\n")
    pa, pb = free_port(), free_port()
    a = AgentProc(tmp_path, "a", pa, [pb], "--config", str(cfg))
    b = AgentProc(tmp_path, "b", pb, [pa])
    a.config = cfg
    try:
        a.wait_ready()
        b.wait_ready()
        assert wait_for(lambda: a.get("/v1/cluster")["nodes"][0]["links"], 10)
        yield a
    finally:
        a.close()
        b.close()


def test_loopback_carrying_the_links_can_be_given_a_capacity(qtbot, two_agents, tmp_path,
                                                              monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    a = two_agents
    cluster = a.get("/v1/cluster")
    assert {link["local_interface"] for link in cluster["nodes"][0]["links"]} == {"lo"}
    client = AgentClient(a.port, a.state, interval=0.2)
    client.start()
    try:
        dlg = Preferences(client, cluster)
        qtbot.addWidget(dlg)
        qtbot.waitUntil(lambda: "Saved in" in dlg.status.text(), timeout=5000)
        names = [dlg.capacity.item(r, 0).data(Qt.ItemDataRole.UserRole)
                 for r in range(dlg.capacity.rowCount())]
        assert "lo" in names
        row = names.index("lo")
        dlg.capacity.item(row, 2).setText("1000")
        with qtbot.waitSignal(dlg.saved, timeout=5000):
            dlg.save()
        lo = wait_for(lambda: next((i for i in a.get("/v1/snapshot")["interfaces"]
                                    if i["name"] == "lo" and i["capacity_source"] == "override"),
                                   None), 5)
        assert lo and lo["capacity_bytes_per_s"] == 125e6
        # Only the capacity was changed: the interval the spin box shows as 0.13 s stays
        # 0.125 s, in the agent and in the file, which keeps its comments.
        assert cfg_text(a) == "# mine\ninterval = 0.125   # fast\nthreshold = 0.9\n\n" \
                              "[capacity]\nlo = 1000\n"
        assert a.get("/v1/snapshot")["interval_s"] == 0.125
    finally:
        client.stop()


def cfg_text(agent) -> str:
    text = agent.config.read_text()
    tomllib.loads(text)  # and still TOML
    return text

"""The tray app's checks (the menu's count, the Health view) read this node's links' loss
of the last 24 h as `exotray doctor` does: a real agent on loopback whose database holds a
stretch of loss three hours ago, and the tray app attached to it."""

from __future__ import annotations

import time

from helpers import AgentProc, free_port

from exotray.agent.history.db import HistoryDB
from exotray.agent.peers.links import link_id
from exotray.core.history import LINK_COLUMNS
from exotray.ui.app import App

NODE_ID = "e4b0a7ed0033"


def _row(t: float, loss: float) -> tuple:
    values = dict.fromkeys(LINK_COLUMNS, None)
    values.update(t=t, rtt_ms=0.2, state="up", loss=loss)
    return tuple(values[c] for c in LINK_COLUMNS)


def test_the_health_view_and_the_menu_see_a_past_stretch_of_loss(qtbot, tmp_path):
    pa, pb = free_port(), free_port()
    state = tmp_path / "state-a"
    state.mkdir(mode=0o700)
    (state / "node_id").write_text(f"{NODE_ID}\n")
    lid = link_id(NODE_ID, ("127.0.0.1", pb))
    start = (time.time() - 3 * 3600) // 60 * 60
    db = HistoryDB(state / "history.db", 30 * 86400.0)  # 10 min, 4 of them at 30 % lost
    db.write(start + 600, [("link", lid, LINK_COLUMNS, _row(start + i, 0.3 if i >= 360 else 0))
                           for i in range(600)], [])
    db.close()
    a = AgentProc(tmp_path, "a", pa, [pb])
    b = AgentProc(tmp_path, "b", pb, [pa], "--history-days", "0")
    app = None
    try:
        a.wait_ready()
        b.wait_ready()
        app = App(port=pa, state_dir=a.state, manage_agent=False, interval=0.2)
        app.notifier.notify = lambda *args, **kw: None  # (tests/desktop has the real one)
        app.start()

        def loss():
            return next((c for c in app.tray.checks() if c.id == "loss"), None)

        at = time.strftime("%H:%M", time.localtime(start + 360))
        said = f"a → b via Loopback (lo) lost 30 % of probes for 4 min at {at}."
        # (until b has said its name, the link is named by its address)
        qtbot.waitUntil(lambda: loss() is not None and loss().summary == said,
                        timeout=15_000)
        assert loss().status == "warn"
        assert loss().links == (lid,)
        app.open_window()
        app.window.set_cluster(app.cluster)
        assert ("warning", "loss", said) in app.window.health.rows()
    finally:
        if app is not None:
            app.client.stop()
            app.tray.hide()
            if app.window is not None:
                app.window.close()
        a.close()
        b.close()

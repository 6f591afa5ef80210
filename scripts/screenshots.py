"""Take the screenshots of the README and docs/tray.md from the app (offscreen, loopback):

    .venv/bin/python scripts/screenshots.py docs/screenshots

Starts the demo's three agents (mDNS off), drives demo-a's link into saturation with
the demo's paced stream, waits for link_saturated, selects that link and saves the
window and the link details with QWidget.grab(), in the light palette (window.png,
link-details.png) and in the dark one (window-dark.png, link-details-dark.png).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication

from exotray.ui.app import App
from exotray.ui.demo import SMALL_MBIT, PacedStream, start_agents


def pump(qapp: QApplication, seconds: float, until=None) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        qapp.processEvents()
        if until is not None and until():
            return True
        time.sleep(0.02)
    return until is None


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    qapp = QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory(prefix="exotray-shots-") as tmp:
        agents = start_agents(Path(tmp))
        stream = PacedStream(0.97 * SMALL_MBIT * 1e6 / 8, on_s=60, off_s=1)
        app = None
        try:
            _, port, state = agents[0]
            app = App(port=port, state_dir=state, manage_agent=False)
            app.start()
            assert pump(qapp, 15, lambda: app.cluster and len(app.cluster["nodes"]) == 3)
            pump(qapp, 20)  # some calm history first
            stream.start()

            def saturated():
                links = app.cluster["nodes"][0]["links"] if app.cluster else []
                return [lk for lk in links if lk["state"] == "saturated"]

            assert pump(qapp, 20, saturated), "no saturation"
            pump(qapp, 8)
            app.open_window()
            w = app.window
            w.resize(1280, 820)
            w.select_link(saturated()[0]["id"])
            w.details.set_range(60)
            pump(qapp, 6)
            for scheme, suffix in (("light", ""), ("dark", "-dark")):
                app.look.set_scheme(scheme)
                pump(qapp, 1.5)
                w.grab().save(str(out / f"window{suffix}.png"))
                w.details.grab().save(str(out / f"link-details{suffix}.png"))
                print(f"saved {out / f'window{suffix}.png'} and "
                      f"{out / f'link-details{suffix}.png'}")
            app.look.set_scheme(None)
        finally:
            stream.stop_event.set()
            if app is not None:
                app.client.stop()
            for proc, _, _ in agents:
                proc.terminate()
            for proc, _, _ in agents:
                proc.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")))

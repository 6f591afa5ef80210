"""The tray app: a client of the local agent that shows, notifies and edits settings.

    supervisor  starts (or attaches to) the local agent, restarts it if it dies
    client      polls the agent's HTTP API off the GUI thread
    tray        icon + menu;  notifier  desktop notifications;  window  the dashboard

Closing the window keeps the app in the tray; Quit stops the agent we started.
"""

from __future__ import annotations

import logging
import signal
import sys
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from exotray.appnap import keep_timers_on_time
from exotray.core import doctor, paths
from exotray.core.settings import DEFAULT_PORT, LOG_FORMAT
from exotray.ui.client.loss_history import LossHistory
from exotray.ui.client.poll import AgentClient
from exotray.ui.client.supervisor import AgentSupervisor
from exotray.ui.style import look
from exotray.ui.tray import summary
from exotray.ui.tray.icon import Tray, app_icon
from exotray.ui.tray.instance import SingleInstance, instance_name

log = logging.getLogger(__name__)

#: how often to look for a system tray that was not there at start
TRAY_WATCH_MS = 2000


class App(QObject):
    def __init__(self, port: int = DEFAULT_PORT, state_dir: Path | None = None,
                 agent_args: list[str] | None = None, manage_agent: bool = True,
                 interval: float = 1.0) -> None:
        super().__init__()
        from exotray.ui.tray.notify import Notifier

        self.port = port
        self.state_dir = state_dir or paths.state_dir()
        self.cluster: dict[str, Any] | None = None
        self.settings: dict[str, Any] = {"threshold": 0.9, "notify_peers": True}
        self.supervisor = AgentSupervisor(port, agent_args, self) if manage_agent else None
        self.client = AgentClient(port, self.state_dir, interval, parent=self)
        self.loss_history = LossHistory(self.client.history_query)  # (the loss check's day)
        self.tray = Tray(self)
        self.notifier = Notifier(self.tray.icon, parent=self)
        self.window = None
        self.prefs = None
        self.look = look.instance()  # the system's light or dark, before any window

        self.client.clusterChanged.connect(self._cluster)
        self.client.eventsArrived.connect(self._events)
        self.tray.openDashboard.connect(self.open_window)
        self.tray.pauseToggled.connect(self._pause)
        self.tray.preferencesRequested.connect(self.open_preferences)
        self.tray.quitRequested.connect(self.quit)
        self.notifier.activated.connect(self.open_window)
        if self.supervisor is not None:
            self.supervisor.stateChanged.connect(self._agent_state)
            self.supervisor.problemChanged.connect(self._agent_problem)
        self._notified_problem: str | None = None
        # Started at login before the panel: look for a tray (XEmbed or
        # StatusNotifierWatcher, whichever Qt's platform uses) until one appears.
        self._tray_watch = QTimer(self)
        self._tray_watch.setInterval(TRAY_WATCH_MS)
        self._tray_watch.timeout.connect(self._tray_appeared)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        if not QSystemTrayIcon.isSystemTrayAvailable():
            log.warning("no system tray is available (yet: at login the panel may start "
                        "after us; on GNOME install the AppIndicator extension); the "
                        "dashboard window opens instead, and the icon goes to the tray "
                        "when one appears")
            self._tray_watch.start()
        self.tray.show()
        if self.supervisor is not None:
            self.supervisor.start()
        self.client.start()

    def _tray_appeared(self) -> None:
        if not QSystemTrayIcon.isSystemTrayAvailable():
            return
        self._tray_watch.stop()
        log.info("a system tray appeared: the icon is in it now")
        self.notifier.set_tray(self.tray.recreate())

    def quit(self) -> None:
        self._tray_watch.stop()
        self.client.stop()
        if self.supervisor is not None:
            self.supervisor.stop()
        self.notifier.close()
        self.tray.hide()
        if self.window is not None:
            self.window.release()
        QApplication.quit()

    # -- agent -> views ------------------------------------------------------------------
    def _agent_state(self, state: str) -> None:
        self.tray.update(self.cluster, state)

    def _banner(self) -> str | None:
        """What the window's banner says: why the agent is not running, else what this
        node's agent says the user must fix."""
        problem = self.supervisor.problem if self.supervisor is not None else None
        if problem and self.cluster is None:
            return problem
        return "\n".join(summary.node_warnings(self.cluster)) or None

    def _agent_problem(self, problem: str | None) -> None:
        """The agent stopped (or cannot start), and why: in the menu, the window and,
        once per cause, a notification."""
        self.tray.set_problem(problem)
        if self.window is not None:
            self.window.set_agent_problem(self._banner())
        if problem and problem != self._notified_problem:
            self._notified_problem = problem
            title = ("exotray agent cannot start" if self.supervisor is not None
                     and self.supervisor.state == "config_error" else "exotray agent stopped")
            self.notifier.notify(title, problem, key="agent")
        if problem is None:
            self._notified_problem = None

    def _cluster(self, cluster: dict[str, Any] | None) -> None:
        first = self.cluster is None and cluster is not None
        if cluster is not None and self.supervisor is not None and self.supervisor.problem:
            self.supervisor.clear_problem()  # it answers again
        self.loss_history.attach(cluster)
        self.cluster = cluster
        state = None
        if cluster is not None and self.supervisor is not None:
            state = "attached" if self.supervisor.state == "attached" else "running"
        self.tray.update(cluster, state)
        if self.window is not None:
            self.window.set_cluster(cluster)
            self.window.set_agent_problem(self._banner())
        if first:
            self.client.get_settings(self._settings_loaded)
            now = time.time()  # the day's events, for the menu's count of problems
            self.client.request("GET", "/v1/events", done=self._past_events, params={
                "since": f"{now - doctor.PAST_S:.3f}", "until": f"{now + 60:.3f}",
                "limit": 10_000})

    def _past_events(self, result: Any, error: str | None) -> None:
        if isinstance(result, dict) and isinstance(result.get("events"), list):
            self.tray.add_events(result["events"])

    def _settings_loaded(self, result: Any, error: str | None) -> None:
        if result is not None:
            self.settings = result["settings"]
            self.tray.threshold = self.settings["threshold"]
            self.look.set_units(self.settings.get("units"))
        else:
            log.warning("cannot read the agent's settings (%s); notifications use the "
                        "default threshold", error)

    def _events(self, events: list[dict[str, Any]]) -> None:
        self.tray.add_events(events)
        self_name = self.cluster["nodes"][0]["node"]["name"] if self.cluster else "this node"
        for ev in events:
            if ev["type"] in ("peer_up", "peer_down") and not self.settings.get(
                "notify_peers", True
            ):
                continue
            if ev.get("notify") is False:  # recorded within the link's cooldown: quiet
                continue
            text = summary.notification(ev, self_name)
            if text is None:
                continue
            # Normal urgency: daemons keep "critical" bubbles on screen until dismissed,
            # so saturations and clears would pile up. The link's key makes a clear
            # replace its saturation bubble (one bubble per link on screen).
            # A port's speed events share one bubble per interface.
            key = ev.get("link_id") or (
                f"iface:{ev['interface']}" if ev.get("interface")
                else f"peer:{ev.get('peer_id') or ev.get('peer_name') or '?'}")
            self.notifier.notify(text[0], text[1], key=key, urgency="normal")

    def _pause(self, paused: bool) -> None:
        self.client.set_paused(paused, lambda r, e: e and log.warning("pause: %s", e))

    # -- windows ---------------------------------------------------------------------------
    def open_window(self, link_id: str = "") -> None:
        if self.window is None:
            from exotray.ui.window.dashboard import MainWindow

            self.window = MainWindow(self.client)
            self.window.setWindowIcon(app_icon())
            self.window.set_cluster(self.cluster)
            self.window.set_agent_problem(self._banner())
        self.window.show()
        self.window.raise_()
        self.window.activateWindow()
        from exotray.ui.tray.notify import EVENTS_KEY

        if link_id == EVENTS_KEY:  # a click on macOS that may be for any notification
            self.window.timeline.setFocus()
        elif link_id and link_id != "agent" and not link_id.startswith("peer:"):
            self.window.select_link(link_id)  # a link's key (peers' and the agent's are not)

    def open_preferences(self) -> None:
        from exotray.ui.window.preferences import Preferences

        if self.prefs is None:
            self.prefs = Preferences(self.client, self.cluster, supervisor=self.supervisor)
            self.prefs.saved.connect(self._settings_saved)
        self.prefs.load(self.cluster)
        self.prefs.show()
        self.prefs.raise_()

    def _settings_saved(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.tray.threshold = settings["threshold"]
        self.look.set_units(settings.get("units"))  # redraws the window at once


def setup_logging(verbose: bool = False) -> None:
    """exotray's own lines at INFO (DEBUG with --verbose); libraries' chatter (httpx logs
    every request at INFO) only with --verbose."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format=LOG_FORMAT)
    for noisy in ("httpx", "httpcore", "PIL", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if verbose else logging.WARNING)


def main(port: int = DEFAULT_PORT, agent_args: list[str] | None = None,
         state_dir: Path | None = None, dashboard: bool = False, verbose: bool = False) -> int:
    setup_logging(verbose)
    keep_timers_on_time("exotray: showing the cluster's links in the menu bar")
    qapp = QApplication.instance() or QApplication(sys.argv[:1])
    qapp.setApplicationName("exotray")
    qapp.setApplicationDisplayName("exotray")
    qapp.setQuitOnLastWindowClosed(False)  # closing the window keeps the tray
    qapp.setWindowIcon(app_icon())
    # one tray app per user and agent: a second one shows the first's window and exits
    instance = SingleInstance(instance_name(port, state_dir or paths.state_dir()))
    if not instance.claim():
        print("exotray is already running: its window is shown.", file=sys.stderr)
        return 0
    app = App(port=port, agent_args=agent_args, state_dir=state_dir)
    instance.showRequested.connect(lambda: app.open_window())
    app.start()
    # Ctrl-C / SIGTERM quit cleanly (and stop the agent); a timer lets Python see them.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: QTimer.singleShot(0, app.quit))
    wake = QTimer()
    wake.start(250)
    wake.timeout.connect(lambda: None)
    if dashboard or not QSystemTrayIcon.isSystemTrayAvailable():
        app.open_window()
    try:
        return qapp.exec()
    except KeyboardInterrupt:
        app.quit()
        return 0
    finally:
        instance.release()


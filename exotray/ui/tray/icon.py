"""The tray / menu-bar icon and its menu (rebuilt each time it opens)."""

from __future__ import annotations

import importlib.resources
import sys
import time
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from exotray.core import doctor
from exotray.core.events import event_time
from exotray.ui.tray import summary

_icons: dict[tuple[str, bool], QIcon] = {}
#: events the tray keeps for its count of problems (the timeline's bound)
MAX_EVENTS = 10_000


def icon_path(name: str) -> str:
    """A real file path for a packaged icon (works from a checkout, a wheel or a bundle)."""
    res = importlib.resources.files("exotray.resources.icons").joinpath(name)
    # Package data of a regular install is a file on disk; as_file covers zip imports too
    # but would delete its temporary copy, so prefer the direct path when there is one.
    return str(res)


def tray_icon(state: str, template: bool = sys.platform == "darwin") -> QIcon:
    """Icon for a health state; on macOS a template (mask) image that follows the menu bar."""
    if state not in summary.HEALTH:
        state = "offline"
    key = (state, template)
    if key not in _icons:
        icon = QIcon(icon_path(f"tray-{state}{'-template' if template else ''}.svg"))
        if template:
            icon.setIsMask(True)
        _icons[key] = icon
    return _icons[key]


def app_icon() -> QIcon:
    return QIcon(icon_path("exotray.svg"))


def _menu_text(text: str, limit: int = 110) -> str:
    """Menu item text: one line, not wider than a menu should be, and no '&' turned into
    a shortcut marker."""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("&", "&&")


class Tray(QObject):
    openDashboard = Signal(str)  # a link id to show, or "" for the window as it was
    pauseToggled = Signal(bool)
    preferencesRequested = Signal()
    quitRequested = Signal()

    def __init__(self, parent: QObject | None = None, threshold: float = 0.9) -> None:
        super().__init__(parent)
        self.threshold = threshold
        self.cluster: dict[str, Any] | None = None
        self.agent_state = "starting"
        #: why the agent is not running (its last error line), shown under the summary
        self.problem: str | None = None
        self.state = "offline"
        #: this node's events of the last day (the app's), for the count of problems
        self.events: list[dict[str, Any]] = []
        self.menu = QMenu()
        self.menu.aboutToShow.connect(self.rebuild_menu)
        self.icon = self._new_icon()
        self.rebuild_menu()
        self._update_icon()

    def _new_icon(self) -> QSystemTrayIcon:
        icon = QSystemTrayIcon(tray_icon(self.state), self)
        icon.setContextMenu(self.menu)
        icon.activated.connect(self._activated)
        return icon

    def recreate(self) -> QSystemTrayIcon:
        """A new icon object for a tray that appeared after us: Qt picks its way to the
        tray (StatusNotifierItem over D-Bus, or XEmbed) when the icon is created, so an
        icon made while there was none would stay with a way that shows nothing."""
        old = self.icon
        old.hide()
        old.setContextMenu(None)
        self.icon = self._new_icon()
        self._update_icon()
        self.icon.show()
        old.deleteLater()
        return self.icon

    def show(self) -> None:
        self.icon.show()

    def hide(self) -> None:
        self.icon.hide()

    def update(self, cluster: dict[str, Any] | None, agent_state: str | None = None) -> None:
        self.cluster = cluster
        if agent_state is not None:
            self.agent_state = agent_state
        self._update_icon()

    def add_events(self, events: list[dict[str, Any]]) -> None:
        """Keep this node's events of the last day (at most MAX_EVENTS, the newest) for
        the menu's count of failing checks."""
        horizon = time.time() - doctor.PAST_S
        # the day's read and the poll overlap (and the day is read again at each attach):
        # an event held twice would leave its first raise open, "still on", in the checks.
        # Known by (seq, at), as the timeline knows them: without a database an agent's
        # seq starts again at 1 when it restarts
        held = {(e.get("seq"), e.get("at")) for e in self.events}
        fresh = [e for e in events
                 if e.get("seq") is None or (e.get("seq"), e.get("at")) not in held]
        self.events = [e for e in [*self.events, *fresh]
                       if (event_time(e) or horizon) >= horizon][-MAX_EVENTS:]

    def checks(self) -> list[doctor.Check]:
        """`exotray doctor`'s checks over what the tray knows (none without an agent)."""
        if not self.cluster or not self.cluster.get("nodes"):
            return []
        return doctor.run(self.cluster, self.events, time.time(), sys.platform)

    def set_problem(self, problem: str | None) -> None:
        self.problem = problem
        self._update_icon()

    def _update_icon(self) -> None:
        state = summary.health(self.cluster, self.threshold)
        if state != self.state:
            self.state = state
            self.icon.setIcon(tray_icon(state))
        tip = f"exotray — {summary.summary_line(self.cluster, self.agent_state)}"
        if self.problem and self.cluster is None:
            tip += f"\n{self.problem}"
        # Never markup: the agent's error line can quote what peers sent, and some tray
        # hosts (and Qt's own tooltips) render tags, while others (macOS) show entities
        # literally. Without '<' and '>' nothing is a tag anywhere.
        self.icon.setToolTip(tip.replace("<", "‹").replace(">", "›"))

    def rebuild_menu(self) -> None:
        m = self.menu
        m.clear()
        head = m.addAction(_menu_text(summary.summary_line(self.cluster, self.agent_state)))
        head.setEnabled(False)
        notes = [*summary.node_warnings(self.cluster), *summary.empty_hints(self.cluster)]
        if self.problem and self.cluster is None:
            notes.insert(0, self.problem)
            if self.agent_state == "config_error":
                notes.append("exotray starts it again when the file is saved")
        for note in notes:
            m.addAction(_menu_text(note)).setEnabled(False)
        problems = summary.problems_line(self.checks())  # exotray doctor's, failing
        if problems:
            m.addAction(_menu_text(problems), lambda: self.openDashboard.emit(""))
        lines = summary.peer_lines(self.cluster)
        if lines:
            m.addSeparator()
        for line in lines:
            act = m.addAction(_menu_text(line.text))
            act.setData(line.link_id)
            act.triggered.connect(lambda _=False, lid=line.link_id: self.openDashboard.emit(lid))
        m.addSeparator()
        m.addAction("Open Dashboard", lambda: self.openDashboard.emit(""))
        pause = QAction("Pause Monitoring", m)
        pause.setCheckable(True)
        paused = bool(self.cluster and self.cluster["nodes"][0].get("paused"))
        pause.setChecked(paused)
        pause.setEnabled(self.cluster is not None)
        pause.toggled.connect(self.pauseToggled.emit)
        m.addAction(pause)
        m.addAction("Preferences…", self.preferencesRequested.emit)
        m.addSeparator()
        m.addAction("Quit exotray", self.quitRequested.emit)

    def menu_texts(self) -> list[str]:
        """The menu as the user reads it (for tests and the status line)."""
        return [a.text() for a in self.menu.actions() if not a.isSeparator()]

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        # A left click opens the window on Linux; on macOS a click opens the menu.
        if reason == QSystemTrayIcon.ActivationReason.Trigger and sys.platform != "darwin":
            self.openDashboard.emit("")

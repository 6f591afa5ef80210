"""The cluster's events as a timeline (newest first): saturations and clears, peers
down and up, ports slower than they can be, exo on a slow path, and any event type a
newer agent emits (shown by its name and plain fields).

Filled from the agent's ``GET /v1/events?since=&until=`` (its history database) for the
range the charts show, at least ``DEFAULT_SPAN_S``, then kept current from the events
the client polls. Clicking an event emits ``eventActivated`` with the event; the window
selects its link and shows the charts around its time.

Every text here comes from agents' events, which carry names peers chose (issue 18): it
is shown as plain text — item texts are plain, and tooltips (which Qt renders as rich
text when they look like HTML) are escaped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from exotray.ui import summary, theme
from exotray.ui.link_table import plain_tip

log = logging.getLogger(__name__)

#: the span the timeline covers when the charts show less
DEFAULT_SPAN_S: Final = 86400
#: events one fetch asks for at most (the API's cap)
FETCH_LIMIT: Final = 10_000
#: events kept in the list (the newest)
MAX_ROWS: Final = 10_000
EVENT = Qt.ItemDataRole.UserRole + 1
COLUMNS: Final = ("Time", "Event", "Details")

#: an event type -> the theme colour name of its mark (others: TEXT_MUTED)
KIND_COLORS: Final[dict[str, str]] = {
    "link_saturated": "LINK_HOT",
    "link_cleared": "LINK_CALM",
    "peer_down": "LINK_DOWN",
    "peer_up": "LINK_CALM",
    "link_degraded": "LINK_BUSY",
    "link_restored": "LINK_CALM",
    "exo_slow_path": "EXO",
    "exo_slow_path_cleared": "LINK_CALM",
}
#: fields not repeated in an unknown event's details
_HIDDEN: Final = frozenset({"seq", "at", "type"})


def event_time(event: dict[str, Any]) -> float | None:
    """The event's time (unix seconds) from its ISO ``at``, None when it has none."""
    at = event.get("at")
    if isinstance(at, int | float) and not isinstance(at, bool):
        return float(at)
    if not isinstance(at, str):
        return None
    try:
        return datetime.fromisoformat(at).timestamp()
    except ValueError:
        return None


def describe(event: dict[str, Any], self_name: str) -> tuple[str, str]:
    """(what, details) of an event, as plain text: a known type as its notification
    says it, an unknown one by its name and its plain fields."""
    known = summary.notification(event, self_name)
    if known is not None:
        return known
    kind = str(event.get("type") or "event")
    what = kind.replace("_", " ").strip().capitalize() or "Event"
    fields = []
    for key, value in event.items():
        if key in _HIDDEN or value is None or isinstance(value, dict | list):
            continue
        fields.append(f"{key}: {value}")
    return what[:80], ", ".join(fields)[:400]


def _dot(color: str) -> QIcon:
    pix = QPixmap(12, 12)
    pix.fill(Qt.GlobalColor.transparent)
    p = QPainter(pix)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QColor(color))
    p.drawEllipse(2, 2, 8, 8)
    p.end()
    return QIcon(pix)


class EventTimeline(QWidget):
    #: an event (its dict) was clicked or activated with the keyboard
    eventActivated = Signal(dict)

    def __init__(self, clock: Callable[[], float] = time.time,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.clock = clock
        self.self_name = "this node"
        self._seqs: set[tuple[int, str]] = set()
        self._span: tuple[float, float] | None = None
        self.heading = QLabel("Events")
        self.heading.setTextFormat(Qt.TextFormat.PlainText)
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.list = QTreeWidget()
        self.list.setColumnCount(len(COLUMNS))
        self.list.setHeaderLabels(list(COLUMNS))
        self.list.setRootIsDecorated(False)
        self.list.setUniformRowHeights(True)
        self.list.setAlternatingRowColors(True)
        self.list.setWordWrap(False)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.list.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.list.setColumnWidth(1, 230)
        self.list.itemClicked.connect(self._clicked)
        self.list.itemActivated.connect(self._clicked)
        top = QHBoxLayout()
        top.setContentsMargins(6, 4, 6, 0)
        top.addWidget(self.heading)
        top.addStretch(1)
        top.addWidget(self.status)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(top)
        lay.addWidget(self.list, 1)
        self.restyle()

    # -- data in --------------------------------------------------------------------------
    def set_loading(self, since: float, until: float) -> None:
        self._span = (since, until)
        self.heading.setText(f"Events · {_span_words(until - since)}")
        self.status.setText("Loading…")

    def set_error(self, error: str) -> None:
        self.status.setText(f"Cannot read the events: {error}"[:200])

    def set_events(self, events: list[dict[str, Any]], since: float, until: float,
                   truncated: bool = False) -> None:
        """Replace the list with the events of [since, until] (an /v1/events answer)."""
        self._span = (since, until)
        self.heading.setText(f"Events · {_span_words(until - since)}")
        self.list.clear()
        self._seqs.clear()
        self._add(events)
        self._say(truncated)

    def add_events(self, events: list[dict[str, Any]]) -> None:
        """Add live events (the client's poll); ones already shown are skipped."""
        self._add(events)
        self._say(False)

    def _say(self, truncated: bool) -> None:
        n = self.list.topLevelItemCount()
        if truncated:
            self.status.setText(f"the first {n} events of this range")
        elif n == 0:
            self.status.setText("none")
        else:
            self.status.setText(f"{n} event{'s' if n != 1 else ''}")

    def _add(self, events: list[dict[str, Any]]) -> None:
        dropped = 0
        for ev in events:
            t = event_time(ev) if isinstance(ev, dict) else None
            if t is None:
                dropped += 1
                continue
            key = (ev.get("seq") if isinstance(ev.get("seq"), int) else -1, str(ev.get("at")))
            if key[0] >= 0 and key in self._seqs:
                continue
            self._seqs.add(key)
            item = QTreeWidgetItem()
            item.setData(0, EVENT, ev)
            item.setData(0, Qt.ItemDataRole.UserRole, t)
            self._fill(item, ev, t)
            # newest first: the place after every newer row
            pos = 0
            while pos < self.list.topLevelItemCount() and (
                    self.list.topLevelItem(pos).data(0, Qt.ItemDataRole.UserRole) > t):
                pos += 1
            self.list.insertTopLevelItem(pos, item)
        while self.list.topLevelItemCount() > MAX_ROWS:
            self.list.takeTopLevelItem(self.list.topLevelItemCount() - 1)
        if dropped:
            log.warning("dropped %d event(s) without a readable time", dropped)

    def _fill(self, item: QTreeWidgetItem, ev: dict[str, Any], t: float) -> None:
        what, details = describe(ev, self.self_name)
        item.setText(0, time.strftime("%a %d %b %H:%M:%S", time.localtime(t)))
        item.setText(1, what)
        item.setText(2, details)
        item.setToolTip(1, plain_tip(f"{what}\n{details}"))
        item.setToolTip(2, plain_tip(details))
        color = getattr(theme, KIND_COLORS.get(str(ev.get("type")), "TEXT_MUTED"))
        item.setIcon(0, _dot(color))

    # -- look --------------------------------------------------------------------------------
    def restyle(self) -> None:
        """Re-render with theme.py's current colours and fmt's units (a rate is in the
        details of saturation events)."""
        self.heading.setStyleSheet(f"color: {theme.TEXT}; font-weight: 600;")
        self.status.setStyleSheet(f"color: {theme.TEXT_MUTED};")
        for i in range(self.list.topLevelItemCount()):
            item = self.list.topLevelItem(i)
            self._fill(item, item.data(0, EVENT), item.data(0, Qt.ItemDataRole.UserRole))

    # -- out ---------------------------------------------------------------------------------
    def _clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        ev = item.data(0, EVENT)
        if isinstance(ev, dict):
            self.eventActivated.emit(ev)

    # -- introspection (tests) ---------------------------------------------------------------
    def rows(self) -> list[tuple[str, str, str]]:
        """(time, what, details) per row, newest first."""
        out = []
        for i in range(self.list.topLevelItemCount()):
            it = self.list.topLevelItem(i)
            out.append((it.text(0), it.text(1), it.text(2)))
        return out

    def span(self) -> tuple[float, float] | None:
        """The [since, until] last asked for or shown."""
        return self._span


def _span_words(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"last {seconds / 86400:.0f} days"
    if seconds >= 3600:
        return f"last {seconds / 3600:.0f} h"
    return f"last {max(seconds / 60, 1):.0f} min"


__all__ = ["DEFAULT_SPAN_S", "EventTimeline", "describe", "event_time"]

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
from typing import Any, Final

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from exotray.core.events import event_time
from exotray.ui.link.model import plain_tip
from exotray.ui.style import theme
from exotray.ui.tray import summary

log = logging.getLogger(__name__)

#: the span the timeline covers when the charts show less
DEFAULT_SPAN_S: Final = 86400
#: events one fetch asks for at most (the API's cap)
FETCH_LIMIT: Final = 10_000
#: events kept in the list (the newest)
MAX_ROWS: Final = 10_000
EVENT = Qt.ItemDataRole.UserRole + 1
TIME = Qt.ItemDataRole.UserRole + 2
_ROOT = QModelIndex()
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
    "link_down": "LINK_DOWN",
    "link_up": "LINK_CALM",
    "link_slower": "LINK_BUSY",
    "link_slower_cleared": "LINK_CALM",
    "link_flapping": "LINK_HOT",
    "link_flapping_cleared": "LINK_CALM",
    "mtu_mismatch": "LINK_HOT",
    "mtu_mismatch_cleared": "LINK_CALM",
}
#: fields not repeated in an unknown event's details
_HIDDEN: Final = frozenset({"seq", "at", "type"})


def describe(event: dict[str, Any], self_name: str) -> tuple[str, str]:
    """(what, details) of an event, as plain text: a known type as its notification
    says it, an unknown one by its name and its plain fields."""
    if event.get("type") == "capacity_test":  # (no notification: the user asked for it)
        who = event.get("peer_name") or event.get("peer_id") or "a peer"
        asked = "asked by" if event.get("role") == "responder" else "to"
        return (f"Capacity test {asked} {who}"[:80],
                f"{event.get('seconds', '?')} s over {event.get('local_interface') or '?'}; "
                "its traffic is not counted as saturation"[:400])
    known = summary.notification(event, self_name)
    if known is not None:
        if event.get("notify") is False:  # recorded within the link's cooldown
            return known[0], f"{known[1]} (not notified: within the cooldown)"
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


class EventModel(QAbstractTableModel):
    """The events, newest first; a row's texts are made when the view asks for them
    (only the rows on screen), so a month of events costs no formatting up front."""

    def __init__(self, owner: EventTimeline) -> None:
        super().__init__(owner)
        self._owner = owner
        self.rows: list[tuple[float, dict[str, Any]]] = []
        self._texts: dict[int, tuple[str, str, str]] = {}

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def texts(self, row: int) -> tuple[str, str, str]:
        got = self._texts.get(row)
        if got is None:
            t, ev = self.rows[row]
            what, details = describe(ev, self._owner.self_name)
            got = (time.strftime("%d %b %H:%M:%S", time.localtime(t)), what, details)
            if len(self._texts) > 4096:
                self._texts.clear()
            self._texts[row] = got
        return got

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, col = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self.texts(row)[col]
        if role == Qt.ItemDataRole.ToolTipRole and col > 0:
            what, details = self.texts(row)[1:]
            return plain_tip(f"{what}\n{details}" if col == 1 else details)
        if role == Qt.ItemDataRole.DecorationRole and col == 0:
            kind = str(self.rows[row][1].get("type"))
            return self._owner.icon(getattr(theme, KIND_COLORS.get(kind, "TEXT_MUTED")))
        if role == EVENT:
            return self.rows[row][1]
        if role == TIME:
            return self.rows[row][0]
        return None

    def replace(self, rows: list[tuple[float, dict[str, Any]]]) -> None:
        self.beginResetModel()
        self.rows = rows
        self._texts.clear()
        self.endResetModel()

    def insert(self, t: float, ev: dict[str, Any]) -> None:
        """One live event in its place (newest first: usually the top)."""
        pos = 0
        while pos < len(self.rows) and self.rows[pos][0] > t:
            pos += 1
        self.beginInsertRows(QModelIndex(), pos, pos)
        self.rows.insert(pos, (t, ev))
        self._texts.clear()
        self.endInsertRows()

    def trim(self, keep: int) -> None:
        if len(self.rows) > keep:
            self.beginRemoveRows(QModelIndex(), keep, len(self.rows) - 1)
            del self.rows[keep:]
            self.endRemoveRows()

    def refresh(self) -> None:
        """Texts and marks again (the units or the palette changed)."""
        self._texts.clear()
        if self.rows:
            self.dataChanged.emit(self.index(0, 0),
                                  self.index(len(self.rows) - 1, len(COLUMNS) - 1))


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
        self._icons: dict[str, QIcon] = {}  # a dot per colour
        self.heading = QLabel("Events")
        self.heading.setTextFormat(Qt.TextFormat.PlainText)
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.model = EventModel(self)
        self.list = QTreeView()
        self.list.setModel(self.model)
        self.list.setRootIsDecorated(False)
        self.list.setUniformRowHeights(True)
        self.list.setAlternatingRowColors(True)
        self.list.setWordWrap(False)
        self.list.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.list.header()
        header.setStretchLastSection(True)
        # fixed widths, not ResizeToContents (which would format every row)
        fm = self.list.fontMetrics()
        self.list.setColumnWidth(0, fm.horizontalAdvance("30 Dec 23:59:59") + 36)
        self.list.setColumnWidth(1, 210)
        self.list.clicked.connect(self._clicked)
        self.list.activated.connect(self._clicked)
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
        self._seqs.clear()
        rows = self._new(events)
        rows.sort(key=lambda te: te[0], reverse=True)  # newest first (stable for ties)
        self.model.replace(rows[:MAX_ROWS])
        self._say(truncated)

    def add_events(self, events: list[dict[str, Any]]) -> None:
        """Add live events (the client's poll); ones already shown are skipped."""
        for t, ev in self._new(events):
            self.model.insert(t, ev)
        self.model.trim(MAX_ROWS)
        self._say(False)

    def _new(self, events: list[dict[str, Any]]) -> list[tuple[float, dict[str, Any]]]:
        """(time, event) of the events not seen yet; ones without a time are dropped."""
        dropped = 0
        new = []
        for ev in events:
            t = event_time(ev) if isinstance(ev, dict) else None
            if t is None:
                dropped += 1
                continue
            key = (ev.get("seq") if isinstance(ev.get("seq"), int) else -1, str(ev.get("at")))
            if key[0] >= 0 and key in self._seqs:
                continue
            self._seqs.add(key)
            new.append((t, ev))
        if dropped:
            log.warning("dropped %d event(s) without a readable time", dropped)
        return new

    def _say(self, truncated: bool) -> None:
        n = self.model.rowCount()
        if truncated:
            self.status.setText(f"the first {n} events of this range")
        elif n == 0:
            self.status.setText("none")
        else:
            self.status.setText(f"{n} event{'s' if n != 1 else ''}")

    # -- look --------------------------------------------------------------------------------
    def icon(self, color: str) -> QIcon:
        icon = self._icons.get(color)
        if icon is None:
            icon = self._icons[color] = _dot(color)
        return icon

    def restyle(self) -> None:
        """Re-render with style/theme.py's current colours and fmt's units (a rate is in the
        details of saturation events)."""
        self.heading.setStyleSheet(f"color: {theme.TEXT}; font-weight: 600;")
        self.status.setStyleSheet(f"color: {theme.TEXT_MUTED};")
        self._icons.clear()
        self.model.refresh()

    # -- out ---------------------------------------------------------------------------------
    def _clicked(self, index: QModelIndex) -> None:
        ev = index.data(EVENT)
        if isinstance(ev, dict):
            self.eventActivated.emit(ev)

    # -- introspection (tests) ---------------------------------------------------------------
    def events_of(self, type_: str, link_id: str) -> list[dict[str, Any]]:
        """The events of one type about one link that the timeline holds."""
        return [ev for _t, ev in self.model.rows
                if ev.get("type") == type_ and ev.get("link_id") == link_id]

    def rows(self) -> list[tuple[str, str, str]]:
        """(time, what, details) per row, newest first."""
        return [self.model.texts(r) for r in range(self.model.rowCount())]

    def index(self, row: int, column: int = 0) -> QModelIndex:
        return self.model.index(row, column)

    def span(self) -> tuple[float, float] | None:
        """The [since, until] last asked for or shown."""
        return self._span


def _span_words(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"last {seconds / 86400:.0f} days"
    if seconds >= 3600:
        return f"last {seconds / 3600:.0f} h"
    return f"last {max(seconds / 60, 1):.0f} min"


__all__ = ["DEFAULT_SPAN_S", "EventModel", "EventTimeline", "describe", "event_time"]

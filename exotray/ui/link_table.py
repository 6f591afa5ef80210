"""The window's link table: one sortable row per link of every node, updated in place
(selection and sort survive a new cluster view), with what each cell rests on in its
tooltip. MainWindow (window.py) owns one and keeps its selection in step with the rest."""

from __future__ import annotations

import functools
import html
from typing import Any

from PySide6.QtCore import QEvent, QSortFilterProxyModel, Qt
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyle, QTableView, QWidget

from exotray.core import fmt
from exotray.ui import linkwords

LINK_ID = Qt.ItemDataRole.UserRole + 1
SORT = Qt.ItemDataRole.UserRole + 2
COLUMNS = ("From", "To", "Via", "RTT", "Jitter", "Loss", "Iface RX", "Iface TX", "Utilization",
           "Capacity", "State", "exo")
VIA, RX, TX, CAPACITY, EXO = 2, 6, 7, 9, 11
#: header tooltips
HEADER_TIPS = {
    RX: "Received by the local interface that carries the link: all of its traffic, "
        "not only this link's",
    TX: "Sent by the local interface that carries the link: all of its traffic, "
        "not only this link's",
    8: "The busier direction of the interface's traffic, of the link's capacity "
       "(– while the capacity is unknown)",
    CAPACITY: "The link's capacity, in bytes/s like the rates (its link speed in the "
              "cell's tooltip)",
    EXO: "The exo models whose inference traffic this node sends over the link (shown "
         "while a local exo answers)",
}
RDMA_WORDS = {"counted": "RDMA counted", "not_counted": "RDMA not counted"}


def exo_present(cluster: dict[str, Any] | None) -> bool:
    """Whether to show anything about exo: our agent reads a local exo, or some node's
    link carries exo traffic."""
    nodes = (cluster or {}).get("nodes") or []
    if nodes and ((nodes[0].get("exo") or {}).get("status") == "ok"):
        return True
    return any(lk.get("exo_instances") for n in nodes for lk in n.get("links", []))


def exo_cell(link: dict[str, Any]) -> str:
    """"Llama-3.3-70B-Instruct-4bit (jaccl) · RDMA not counted"; "" when none."""
    parts = []
    for inst in link.get("exo_instances") or []:
        model = str(inst.get("model") or "?")
        parts.append(f"{model.rsplit('/', 1)[-1] or model} ({inst.get('backend')})")
    text = ", ".join(parts)
    rdma = RDMA_WORDS.get(link.get("rdma") or "")
    return f"{text} · {rdma}" if text and rdma else text or rdma or ""


#: capacities take few values: their text is formatted once each
_capacity_text = functools.lru_cache(maxsize=1024)(fmt.capacity_rate)


def _rows(cluster: dict[str, Any] | None) -> list[tuple[str, list[tuple[str, Any]]]]:
    """(link id, [(text, sort key) per column]) for every link of every node."""
    out = []
    if not cluster:
        return out
    names = {n["node"]["id"]: n["node"]["name"] for n in cluster.get("nodes", [])}
    for node in cluster.get("nodes", []):
        ifaces = linkwords.node_interfaces(node)
        for lk in node.get("links", []):
            peer = lk.get("peer_name") or names.get(lk.get("peer_id")) or lk["peer_address"]
            via = linkwords.via(lk, ifaces)
            rate_key = max(lk.get("rx_bytes_per_s") or 0, 0)
            cap = lk.get("capacity_bytes_per_s")
            cap = cap if cap and cap > 0 else None
            out.append((lk["id"], [
                (node["node"]["name"], node["node"]["name"]),
                (f"{peer} ({lk['peer_address']})", peer),
                (via, via),
                (fmt.ms(lk.get("rtt_ms")), lk.get("rtt_ms") if lk.get("rtt_ms") is not None
                 else float("inf")),
                (fmt.ms(lk.get("jitter_ms")), lk.get("jitter_ms") or 0.0),
                (fmt.percent(lk.get("loss")), lk.get("loss") or 0.0),
                (fmt.rate(lk.get("rx_bytes_per_s")), rate_key),
                (fmt.rate(lk.get("tx_bytes_per_s")), lk.get("tx_bytes_per_s") or 0.0),
                (fmt.utilization(lk.get("utilization"), cap),
                 lk.get("utilization") if lk.get("utilization") is not None and cap
                 else -1.0),
                (_capacity_text(cap), cap if cap is not None else -1.0),
                (lk["state"], {"down": 2, "saturated": 1, "up": 0}.get(lk["state"], 3)),
                (exo_cell(lk), exo_cell(lk)),
            ]))
    return out


def plain_tip(text: str) -> str:
    """A tooltip that shows `text` literally. Qt renders a tooltip as rich text whenever
    it looks like HTML (a tag on its first line), so text with a peer's names in it is
    escaped and marked up as one paragraph: '<img src=...>' shows, nothing loads."""
    return "<p>" + html.escape(text, quote=False).replace("\n", "<br>") + "</p>"


def _tips(link: dict[str, Any], ifaces: linkwords.Ifaces) -> dict[int, str]:
    """Cell tooltips of a link's row, by column: whose traffic, and the link speed."""
    traffic = linkwords.traffic_note(link, ifaces)
    if link.get("rdma") == "counted":
        traffic += " RDMA traffic (its port counters) is included."
    elif link.get("rdma") == "not_counted":
        traffic += " RDMA traffic (exo's JACCL) is not counted: this OS has no counters."
    cap = link.get("capacity_bytes_per_s")
    capacity = (f"{fmt.bit_rate(cap)} ({linkwords.capacity_words(link, ifaces)})"
                if cap and cap > 0 else "Unknown: set it in Preferences, or Measure capacity")
    return {RX: plain_tip(traffic), TX: plain_tip(traffic), CAPACITY: capacity}


class LinkTable(QTableView):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.source = QStandardItemModel(0, len(COLUMNS), self)
        self.source.setHorizontalHeaderLabels(list(COLUMNS))
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.source)
        self.proxy.setSortRole(SORT)
        self.setModel(self.proxy)
        self.setSortingEnabled(True)
        self.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().hide()
        for c, tip in HEADER_TIPS.items():
            self.source.horizontalHeaderItem(c).setToolTip(tip)
        self.setColumnHidden(EXO, True)  # until a local exo answers (exo_present)
        self._items: dict[str, list[QStandardItem]] = {}  # link id -> its row's items
        self._texts: dict[str, list[str]] = {}  # link id -> its row's texts
        # Sized to the contents when rows come or go, and widened when a changed cell's
        # text no longer fits, never per cell: ResizeToContents re-measures a whole
        # column per changed cell. No stretched last column: the space right of the
        # columns stays empty rather than making "State" 600 px wide.
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.horizontalHeader().setStretchLastSection(False)
        self.setWordWrap(False)  # "22.3 kB/s" on one line
        self.setAlternatingRowColors(True)
        self._measure_font()

    def _measure_font(self) -> None:
        """Text width in the cells' font (cached: rate texts repeat) and the margins a
        cell adds to it, as the item delegate and the grid draw them."""
        self._advance = functools.lru_cache(maxsize=8192)(
            self.fontMetrics().horizontalAdvance)
        margin = self.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self)
        self._pad = 2 * (margin + 1) + 1 + 4  # text margins, grid line, and some air

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._measure_font()
        super().changeEvent(event)

    def _widen(self, widest: dict[int, int]) -> None:
        """Widen each column whose newly set widest text (its width in pixels) does not
        fit (never narrow one: columns that jump back and forth are harder to read than
        a little air)."""
        for c, width in widest.items():
            need = width + self._pad
            if need > self.columnWidth(c):
                self.setColumnWidth(c, need)

    def set_cluster(self, cluster: dict[str, Any] | None) -> None:
        """Update rows in place (keyed by link id), so selection and sorting survive."""
        rows = dict(_rows(cluster))
        exo = exo_present(cluster)
        if self.isColumnHidden(EXO) == exo:  # the column only while exo is there
            self.setColumnHidden(EXO, not exo)
        # filled when a row's tooltips change: link id -> (link, its node's interfaces)
        links: dict[str, tuple[dict[str, Any], linkwords.Ifaces]] = {}

        def link(link_id: str) -> tuple[dict[str, Any], linkwords.Ifaces]:
            if not links:
                for node in (cluster or {}).get("nodes", []):
                    ifaces = linkwords.node_interfaces(node)
                    links.update((lk["id"], (lk, ifaces)) for lk in node.get("links", []))
            return links[link_id]

        added = False
        widest: dict[int, int] = {}  # column -> width of its widest changed text
        advance = self._advance
        # The rows' items and texts are kept on the Python side too: asking Qt for them
        # cell by cell cost more than the rest at 8000 links (issue 18: the largest view).
        gone = [lid for lid in self._items if lid not in rows]
        for lid in gone:
            self.source.removeRow(self._items.pop(lid)[0].row())
            del self._texts[lid]
        for link_id, cells in rows.items():
            items = self._items.get(link_id)
            if items is None:
                items = []
                for text, key in cells:
                    it = QStandardItem(text)
                    it.setData(key, SORT)
                    it.setData(link_id, LINK_ID)
                    items.append(it)
                for c, tip in _tips(*link(link_id)).items():
                    items[c].setToolTip(tip)
                self.source.appendRow(items)
                self._items[link_id] = items
                self._texts[link_id] = [text for text, _ in cells]
                added = True
                continue
            texts = self._texts[link_id]
            retip = False
            for c, (text, key) in enumerate(cells):
                # Only what the user can see changes a cell: each change costs Qt a
                # re-layout, and the sort key follows the text it belongs to.
                if texts[c] != text:
                    texts[c] = text
                    it = items[c]
                    it.setText(text)
                    it.setData(key, SORT)
                    retip = retip or c in (VIA, CAPACITY, EXO)
                    w = advance(text)  # cached: mostly a dict hit
                    if w > widest.get(c, 0):
                        widest[c] = w
            if retip:
                for c, tip in _tips(*link(link_id)).items():
                    items[c].setToolTip(tip)
        if added or gone:
            self.resizeColumnsToContents()
        elif widest:
            self._widen(widest)

    def link_ids(self) -> list[str]:
        """Link ids in the order shown (after sorting)."""
        return [self.proxy.index(r, 0).data(LINK_ID) for r in range(self.proxy.rowCount())]

    def selected_link(self) -> str | None:
        rows = self.selectionModel().selectedRows()
        return rows[0].data(LINK_ID) if rows else None

    def select_link(self, link_id: str | None) -> None:
        if link_id is None:
            self.clearSelection()
            return
        for r in range(self.proxy.rowCount()):
            if self.proxy.index(r, 0).data(LINK_ID) == link_id:
                self.selectRow(r)
                self.scrollTo(self.proxy.index(r, 0))
                return

"""The dashboard: topology, link details, and a sortable table of every link.

Selecting a link anywhere (an edge, a table row, a notification, a tray menu line)
selects it everywhere. Details start filled from the agent's history and then follow
the live cluster view. What an action on a link found out (a capacity test, an export)
stays in that link's details; what is wrong with the agent stays in a banner on top.
"""

from __future__ import annotations

import functools
import html
import time
from typing import Any

from PySide6.QtCore import QEvent, QSortFilterProxyModel, Qt
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMainWindow,
    QSplitter,
    QStyle,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from exotray.core import fmt, topology
from exotray.ui import linkwords, theme
from exotray.ui.client import AgentClient
from exotray.ui.link_view import LinkDetails
from exotray.ui.topology_view import TopologyView

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
        gone = [r for r in range(self.source.rowCount())
                if self.source.item(r, 0).data(LINK_ID) not in rows]
        for r in reversed(gone):  # from the bottom, so the other indexes stay valid
            self.source.removeRow(r)
        existing = {self.source.item(r, 0).data(LINK_ID): r
                    for r in range(self.source.rowCount())}
        for link_id, cells in rows.items():
            r = existing.get(link_id)
            if r is None:
                items = []
                for text, key in cells:
                    it = QStandardItem(text)
                    it.setData(key, SORT)
                    it.setData(link_id, LINK_ID)
                    items.append(it)
                for c, tip in _tips(*link(link_id)).items():
                    items[c].setToolTip(tip)
                self.source.appendRow(items)
                added = True
                continue
            retip = False
            for c, (text, key) in enumerate(cells):
                it = self.source.item(r, c)
                # Only what the user can see changes a cell: each change costs Qt a
                # re-layout, and the sort key follows the text it belongs to.
                if it.text() != text:
                    it.setText(text)
                    it.setData(key, SORT)
                    retip = retip or c in (VIA, CAPACITY, EXO)
                    w = advance(text)  # cached: mostly a dict hit
                    if w > widest.get(c, 0):
                        widest[c] = w
            if retip:
                for c, tip in _tips(*link(link_id)).items():
                    self.source.item(r, c).setToolTip(tip)
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


class MainWindow(QMainWindow):
    def __init__(self, client: AgentClient | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.client = client
        self.setWindowTitle("exotray — cluster network")
        self.cluster: dict[str, Any] | None = None
        self.edges: list[topology.Edge] = []
        self.link_id: str | None = None
        self.range_s = 600
        self._syncing = False
        self._history_for: str | None = None
        #: the last result of an action per link id, shown in its details until replaced
        self._results: dict[str, str] = {}

        self.topology = TopologyView()
        self.details = LinkDetails()
        self.table = LinkTable()
        self.empty = QLabel("Click a link to see its latency and bandwidth.")
        self.empty.setTextFormat(Qt.TextFormat.PlainText)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.empty)
        rl.addWidget(self.details)
        self.details.hide()
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.topology)
        top.addWidget(right)
        top.setSizes([640, 560])
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(self.table)
        split.setSizes([560, 220])

        # What is wrong with the agent, until it is not: a banner above everything.
        self.problem_banner = QFrame()
        self.problem_banner.setObjectName("agentProblem")
        self.problem_banner.setStyleSheet(_BANNER_STYLE)
        icon = QLabel()
        icon.setPixmap(self.style().standardIcon(
            QStyle.StandardPixmap.SP_MessageBoxWarning).pixmap(20, 20))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.agent_problem = QLabel("")
        self.agent_problem.setTextFormat(Qt.TextFormat.PlainText)
        self.agent_problem.setWordWrap(True)
        self.agent_problem.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        bl = QHBoxLayout(self.problem_banner)
        bl.setContentsMargins(12, 8, 12, 8)
        bl.addWidget(icon)
        bl.addWidget(self.agent_problem, 1)
        self.problem_banner.hide()
        central = QWidget()
        cl = QVBoxLayout(central)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.setSpacing(0)
        cl.addWidget(self.problem_banner)
        cl.addWidget(split, 1)
        self.setCentralWidget(central)
        self.resize(1280, 820)
        # The cluster summary is a status-bar widget, not a message: a message (a capacity
        # test starting, an export) covers it for a while instead of being overwritten by
        # the next update a second later. Results also stay in the link's details.
        self.summary = QLabel("Waiting for the agent…")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.statusBar().addWidget(self.summary, 1)
        tools = self.addToolBar("Link")
        tools.setMovable(False)
        self.export_action = tools.addAction("Export history…", self._export_clicked)
        self.export_action.setToolTip("Save the selected link's last hour as CSV or JSON")
        self.export_action.setEnabled(False)
        self.measure_action = tools.addAction("Measure capacity", self.measure_capacity)
        self.measure_action.setToolTip(
            "A 2 x 5 s bulk TCP transfer over this link; the result becomes its capacity")
        self.measure_action.setEnabled(False)

        self.topology.linkSelected.connect(self.select_link)
        self.table.selectionModel().selectionChanged.connect(self._table_selected)
        self.details.rangeChanged.connect(self._range_changed)

    # -- data in -------------------------------------------------------------------------
    def set_agent_problem(self, text: str | None) -> None:
        """Show what is wrong with the agent (its last error line, plain text) in a banner
        on top of the window until it is called with None."""
        self.agent_problem.setText(text or "")
        self.problem_banner.setVisible(bool(text))

    def agent_problem_text(self) -> str | None:
        """The problem the banner shows, None while it is hidden."""
        return self.agent_problem.text() if not self.problem_banner.isHidden() else None

    def set_cluster(self, cluster: dict[str, Any] | None) -> None:
        self.cluster = cluster
        if cluster is None:
            self.summary.setText("The local exotray agent does not answer.")
            return
        _nodes, self.edges = topology.build(cluster)
        self.topology.set_cluster(cluster)
        self.table.set_cluster(cluster)
        n = len(cluster.get("nodes", []))
        self.summary.setText(
            f"{n} node{'s' if n != 1 else ''} · {len(self.edges)} link"
            f"{'s' if len(self.edges) != 1 else ''} · a link's traffic is that of the local "
            "interface that carries it"
        )
        if self.link_id is not None:
            link = self._link(self.link_id)
            if link is None:
                return
            self.details.set_link(link, self._node_name(self.link_id),
                                  self._interfaces(self.link_id))
            if self._history_for == self.link_id:
                self.details.append(self._row(link))

    def _link(self, link_id: str) -> dict[str, Any] | None:
        for node in (self.cluster or {}).get("nodes", []):
            for lk in node.get("links", []):
                if lk["id"] == link_id:
                    return lk
        return None

    def _node_name(self, link_id: str) -> str | None:
        """The name of the node that measures `link_id` (the details' "from")."""
        for node in (self.cluster or {}).get("nodes", []):
            if any(lk["id"] == link_id for lk in node.get("links", [])):
                return node["node"].get("name")
        return None

    def _interfaces(self, link_id: str) -> linkwords.Ifaces:
        """The interfaces of the node that measures `link_id`, by name."""
        for node in (self.cluster or {}).get("nodes", []):
            if any(lk["id"] == link_id for lk in node.get("links", [])):
                return linkwords.node_interfaces(node)
        return {}

    @staticmethod
    def _row(link: dict[str, Any]) -> dict[str, Any]:
        return {"t": time.time(), **{k: link.get(k) for k in (
            "rtt_ms", "rtt_min_ms", "rtt_max_ms", "rx_bytes_per_s", "tx_bytes_per_s",
            "utilization", "state", "rtt_baseline_ms", "queue_delay_ms")}}

    def _own_end(self, link_id: str) -> str:
        """The id of the edge's end this node measures (its history is local)."""
        edge = topology.find_edge(self.edges, link_id)
        if edge is None or not self.cluster:
            return link_id
        own = {lk["id"] for lk in self.cluster["nodes"][0].get("links", [])}
        return next((i for i in edge.link_ids if i in own), link_id)

    # -- selection -------------------------------------------------------------------------
    def select_link(self, link_id: str) -> None:
        if not link_id or self._syncing:
            return
        link_id = self._own_end(link_id)
        self._syncing = True
        try:
            self.link_id = link_id
            self.topology.select_link(link_id)
            self.table.select_link(link_id)
        finally:
            self._syncing = False
        link = self._link(link_id)
        self.export_action.setEnabled(self.client is not None)
        self.measure_action.setEnabled(self.client is not None)
        self.empty.hide()
        self.details.show()
        self.details.set_link(link, self._node_name(link_id), self._interfaces(link_id))
        self.details.set_result(self._results.get(link_id))
        self._load_history()

    def _table_selected(self) -> None:
        if self._syncing:
            return
        lid = self.table.selected_link()
        if lid:
            self.select_link(lid)

    def _range_changed(self, seconds: int) -> None:
        self.range_s = seconds  # the hour of history is loaded once; the view zooms

    def _export_clicked(self) -> None:
        if self.link_id is None:
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Export link history", "exotray-link.csv", "CSV (*.csv);;JSON (*.json)")
        if path:
            self.export_history(path)

    def show_result(self, link_id: str, text: str) -> None:
        """Keep `text` as the link's last result: in its details (now, if it is shown, or
        when it is selected again) and for a while in the status bar."""
        self._results[link_id] = text
        if link_id == self.link_id:
            self.details.set_result(text)
        self.statusBar().showMessage(text, 10_000)

    def measure_capacity(self, seconds: float = 5.0) -> None:
        link = self._link(self.link_id or "")
        if link is None or self.client is None:
            return
        lid = link["id"]
        own = {lk["id"] for lk in (self.cluster or {}).get("nodes", [{}])[0].get("links", [])}
        if lid not in own:
            self.show_result(lid, "Only this node's own links can be measured from here.")
            return
        self.measure_action.setEnabled(False)
        who = link.get("peer_name") or link["peer_address"]
        self.show_result(lid, f"Measuring the link to {who} (about {2 * seconds:g} s)…")

        def done(result: Any, error: str | None) -> None:
            self.measure_action.setEnabled(True)
            at = time.strftime("%H:%M")
            if result is None:
                self.show_result(lid, f"Capacity test failed at {at}: {error}")
                return
            self.show_result(lid, _measured(result, at))

        self.client.measure(link["peer_address"], link.get("local_interface"), seconds, done)

    def export_history(self, path: str) -> None:
        """Write the selected link's last hour to path (CSV, or JSON for *.json)."""
        from exotray.core import export

        link_id, link = self.link_id, self._link(self.link_id or "")
        if link_id is None or self.client is None:
            return

        def done(result: Any, error: str | None) -> None:
            if result is None:
                self.show_result(link_id, f"Export failed: {error}")
                return
            text = (export.to_json(result, link) if path.endswith(".json")
                    else export.to_csv(result))
            try:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            except OSError as e:
                self.show_result(link_id, f"Export failed: {e.strerror}")
                return
            self.show_result(link_id, f"Exported {len(result['t'])} samples at "
                                      f"{time.strftime('%H:%M')} to {path}")

        self.client.history(link_id, 3600, done)

    def _load_history(self) -> None:
        link_id = self.link_id
        if link_id is None or self.client is None:
            return
        self._history_for = None

        def done(result: Any, error: str | None, lid: str = link_id) -> None:
            if lid != self.link_id:
                return
            if result is not None:
                self.details.set_history(result)
            self._history_for = lid  # live updates from now on (also without history)

        self.client.history(link_id, 3600, done)


def _measured(result: dict[str, Any], at: str) -> str:
    """A capacity test's result in one unit system (bytes/s, like the rates), the new
    capacity's link speed as a label of its own."""
    mbit = {d: result.get(f"{d}_mbit_s") for d in ("up", "down")}
    rates = {d: v * 1e6 / 8 for d, v in mbit.items() if v}
    if not rates:
        return f"Measured at {at} via {result.get('interface')}: nothing came through."
    as_bytes = ", ".join(f"{fmt.capacity_rate(v)} {d}" for d, v in rates.items())
    as_bits = ", ".join(f"{fmt.bit_rate(v)} {d}" for d, v in rates.items())
    best = max(rates.values())  # the agent keeps the larger one
    return (f"Measured at {at} via {result.get('interface')}: {as_bytes} ({as_bits}); "
            f"now its capacity: {fmt.capacity_rate(best)}.")


_BANNER_STYLE = f"""
#agentProblem {{
    background: {theme.PROBLEM_BACKGROUND}; border-bottom: 1px solid {theme.PROBLEM_BORDER};
}}
#agentProblem QLabel {{ color: {theme.PROBLEM_TEXT}; font-weight: 600; }}
"""

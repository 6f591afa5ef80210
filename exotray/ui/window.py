"""The dashboard: topology, link details, and a sortable table of every link.

Selecting a link anywhere (an edge, a table row, a notification, a tray menu line)
selects it everywhere. Details start filled from the agent's history and then follow
the live cluster view.
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import QSortFilterProxyModel, Qt
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHeaderView,
    QLabel,
    QMainWindow,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from exotray.core import fmt, topology
from exotray.ui.client import AgentClient
from exotray.ui.link_view import LinkDetails
from exotray.ui.topology_view import TopologyView

LINK_ID = Qt.ItemDataRole.UserRole + 1
SORT = Qt.ItemDataRole.UserRole + 2
COLUMNS = ("From", "To", "Via", "RTT", "Jitter", "Loss", "RX", "TX", "Utilization", "State")


def _rows(cluster: dict[str, Any] | None) -> list[tuple[str, list[tuple[str, Any]]]]:
    """(link id, [(text, sort key) per column]) for every link of every node."""
    out = []
    if not cluster:
        return out
    names = {n["node"]["id"]: n["node"]["name"] for n in cluster.get("nodes", [])}
    for node in cluster.get("nodes", []):
        for lk in node.get("links", []):
            peer = lk.get("peer_name") or names.get(lk.get("peer_id")) or lk["peer_address"]
            via = lk.get("local_label") or lk.get("local_interface") or "?"
            if lk.get("local_interface") and lk.get("local_label") not in (None,
                                                                          lk["local_interface"]):
                via = f"{lk['local_label']} ({lk['local_interface']})"
            rate_key = max(lk.get("rx_bytes_per_s") or 0, 0)
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
                (fmt.percent(lk.get("utilization")),
                 lk.get("utilization") if lk.get("utilization") is not None else -1.0),
                (lk["state"], {"down": 2, "saturated": 1, "up": 0}.get(lk["state"], 3)),
            ]))
    return out


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
        # Sized to the contents when rows come or go, not on every cell change:
        # ResizeToContents re-measures a whole column per changed cell.
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.horizontalHeader().setStretchLastSection(True)
        self.setAlternatingRowColors(True)

    def set_cluster(self, cluster: dict[str, Any] | None) -> None:
        """Update rows in place (keyed by link id), so selection and sorting survive."""
        rows = dict(_rows(cluster))
        added = False
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
                self.source.appendRow(items)
                added = True
                continue
            for c, (text, key) in enumerate(cells):
                it = self.source.item(r, c)
                # Only what the user can see changes a cell: each change costs Qt a
                # re-layout, and the sort key follows the text it belongs to.
                if it.text() != text:
                    it.setText(text)
                    it.setData(key, SORT)
        if added:
            self.resizeColumnsToContents()

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

        self.topology = TopologyView()
        self.details = LinkDetails()
        self.table = LinkTable()
        self.empty = QLabel("Click a link to see its latency and bandwidth.")
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
        self.setCentralWidget(split)
        self.resize(1280, 820)
        self.statusBar().showMessage("Waiting for the agent…")
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
    def set_cluster(self, cluster: dict[str, Any] | None) -> None:
        self.cluster = cluster
        if cluster is None:
            self.statusBar().showMessage("The local exotray agent does not answer.")
            return
        _nodes, self.edges = topology.build(cluster)
        self.topology.set_cluster(cluster)
        self.table.set_cluster(cluster)
        n = len(cluster.get("nodes", []))
        self.statusBar().showMessage(
            f"{n} node{'s' if n != 1 else ''} · {len(self.edges)} link"
            f"{'s' if len(self.edges) != 1 else ''} · a link's traffic is that of the local "
            "interface that carries it"
        )
        if self.link_id is not None:
            link = self._link(self.link_id)
            if link is None:
                return
            self.details.set_link(link)
            if self._history_for == self.link_id:
                self.details.append(self._row(link))

    def _link(self, link_id: str) -> dict[str, Any] | None:
        for node in (self.cluster or {}).get("nodes", []):
            for lk in node.get("links", []):
                if lk["id"] == link_id:
                    return lk
        return None

    @staticmethod
    def _row(link: dict[str, Any]) -> dict[str, Any]:
        return {"t": time.time(), **{k: link.get(k) for k in (
            "rtt_ms", "rtt_min_ms", "rtt_max_ms", "rx_bytes_per_s", "tx_bytes_per_s",
            "utilization", "state")}}

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
        self.details.set_link(link)
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

    def measure_capacity(self, seconds: float = 5.0) -> None:
        link = self._link(self.link_id or "")
        if link is None or self.client is None:
            return
        own = {lk["id"] for lk in (self.cluster or {}).get("nodes", [{}])[0].get("links", [])}
        if link["id"] not in own:
            self.statusBar().showMessage("Only this node's own links can be measured from here.")
            return
        self.measure_action.setEnabled(False)
        who = link.get("peer_name") or link["peer_address"]
        self.statusBar().showMessage(f"Measuring the link to {who} (about {2 * seconds:g} s)…")

        def done(result: Any, error: str | None) -> None:
            self.measure_action.setEnabled(True)
            if result is None:
                self.statusBar().showMessage(f"Capacity test failed: {error}")
                return
            self.statusBar().showMessage(
                f"{who} via {result['interface']}: {result['up_mbit_s']} Mbit/s up, "
                f"{result['down_mbit_s']} Mbit/s down — now its capacity")

        self.client.measure(link["peer_address"], link.get("local_interface"), seconds, done)

    def export_history(self, path: str) -> None:
        """Write the selected link's last hour to path (CSV, or JSON for *.json)."""
        from exotray.core import export

        link_id, link = self.link_id, self._link(self.link_id or "")
        if link_id is None or self.client is None:
            return

        def done(result: Any, error: str | None) -> None:
            if result is None:
                self.statusBar().showMessage(f"Export failed: {error}")
                return
            text = (export.to_json(result, link) if path.endswith(".json")
                    else export.to_csv(result))
            try:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            except OSError as e:
                self.statusBar().showMessage(f"Export failed: {e.strerror}")
                return
            self.statusBar().showMessage(f"Exported {len(result['t'])} samples to {path}")

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

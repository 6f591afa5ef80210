"""The link table's model: one row per link of every node, each link's raw values kept
and compared with the next cluster view's, one dataChanged per run of changed rows;
texts formatted when a cell is drawn, tooltips when one is asked for; it sorts itself (a
layout change only when the order moved). The view is link/table.py's LinkTable.
"""

from __future__ import annotations

import functools
import html
import operator
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
)

from exotray.core import fmt
from exotray.core.topology import Node, node_condition
from exotray.ui.link import words as linkwords

LINK_ID = Qt.ItemDataRole.UserRole + 1
SORT = Qt.ItemDataRole.UserRole + 2
#: the columns a user reads first come first: at the window's default size the ones
#: after "Capacity" may need a scroll
COLUMNS = ("From", "To", "State", "RTT", "Utilization", "Iface RX", "Iface TX", "Capacity",
           "Via", "Traffic of", "Jitter", "Loss", "exo")
(FROM, TO, STATE, RTT, UTIL, RX, TX, CAPACITY, VIA, OWNER, JITTER, LOSS,
 EXO) = range(len(COLUMNS))
#: header tooltips
HEADER_TIPS = {
    OWNER: "Whose traffic the RX and TX columns show: the local interface that carries "
           "the link, or the bridge's cable (member port) that reaches the peer",
    RX: "Received by the local interface that carries the link: all of its traffic, "
        "not only this link's",
    TX: "Sent by the local interface that carries the link: all of its traffic, "
        "not only this link's",
    UTIL: "The busier direction of the interface's traffic, of the link's capacity "
          "(– while the capacity is unknown)",
    CAPACITY: "The link's capacity, in the rates' unit (its link speed in the "
              "cell's tooltip)",
    EXO: "The exo models whose inference traffic this node sends over the link (shown "
         "while a local exo answers)",
}
RDMA_WORDS = {"counted": "RDMA counted", "not_counted": "RDMA not counted"}
_STATE_RANK = {"down": 2, "saturated": 1, "up": 0, "paused": -1, "stale": -2}
_ALIGN_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_NUMBERS = frozenset((RTT, JITTER, LOSS, RX, TX, UTIL, CAPACITY))
_ROOT = QModelIndex()  # the table's (invisible) parent of every row
_TEXTS = tuple(c for c in range(len(COLUMNS)) if c not in _NUMBERS)
_text_part = operator.itemgetter(*_TEXTS)


def exo_present(cluster: dict[str, Any] | None) -> bool:
    """Whether to show anything about exo: our agent reads a local exo, or some node's
    link carries exo traffic."""
    nodes = (cluster or {}).get("nodes") or []
    if nodes and ((nodes[0].get("exo") or {}).get("status") == "ok"):
        return True
    return any(lk.get("exo_instances") for n in nodes for lk in n.get("links", []))


def exo_cell(link: dict[str, Any]) -> str:
    """"Llama-3.3-70B-Instruct-4bit (jaccl) · RDMA not counted"; "" when none."""
    instances, rdma_note = link.get("exo_instances"), link.get("rdma")
    if not instances and not rdma_note:
        return ""
    parts = []
    for inst in instances or []:
        model = str(inst.get("model") or "?")
        parts.append(f"{model.rsplit('/', 1)[-1] or model} ({inst.get('backend')})")
    text = ", ".join(parts)
    rdma = RDMA_WORDS.get(rdma_note or "")
    if rdma and (state := linkwords.rdma_state(link)):
        rdma += f" ({state})"
    return f"{text} · {rdma}" if text and rdma else text or rdma or ""


#: capacities take few values: their text is formatted once each (per unit system)
_capacity_cached = functools.lru_cache(maxsize=1024)(lambda cap, _units: fmt.capacity_rate(cap))


def _capacity_text(cap: float | None) -> str:
    return _capacity_cached(cap, fmt.units())


def plain_tip(text: str) -> str:
    """A tooltip that shows `text` literally. Qt renders a tooltip as rich text whenever
    it looks like HTML (a tag on its first line), so text with a peer's names in it is
    escaped and marked up as one paragraph: '<img src=...>' shows, nothing loads."""
    return "<p>" + html.escape(text, quote=False).replace("\n", "<br>") + "</p>"


def _tips(link: dict[str, Any], ifaces: linkwords.Ifaces) -> dict[int, str]:
    """Cell tooltips of a link's row, by column: whose traffic, and the link speed."""
    traffic = linkwords.traffic_note(link, ifaces)
    if rdma := linkwords.rdma_words(link):
        traffic += " " + rdma
    cap = link.get("capacity_bytes_per_s")
    capacity = (f"{fmt.bit_rate(cap)} ({linkwords.capacity_words(link, ifaces)})"
                if cap and cap > 0 else "Unknown: set it in Preferences, or Measure capacity")
    tip = plain_tip(traffic)
    return {OWNER: tip, RX: tip, TX: tip, CAPACITY: capacity}


class _Row:
    """One link: what its cells show (`vals`, one raw value per column; texts are made
    from them when drawn) and the link itself, for its tooltips."""

    __slots__ = ("id", "ifaces", "link", "texts", "vals")

    def __init__(self, link_id: str, vals: tuple, link: dict[str, Any],
                 ifaces: linkwords.Ifaces) -> None:
        self.id = link_id
        self.vals = vals
        self.texts: list[str] | None = None
        self.link = link
        self.ifaces = ifaces


def _state(lk: dict[str, Any], condition: tuple[str, ...] | None) -> Any:
    if condition is None:
        return lk["state"]
    if condition[0] == "paused":
        return "paused"
    return ("stale", lk["state"], condition[1])


def _values(node_name: str, lk: dict[str, Any], ifaces: linkwords.Ifaces,
            names: dict[str, str], words: dict[tuple, tuple[str, str]],
            condition: tuple[str, ...] | None = None) -> tuple:
    """A link's raw values, one per column (a cell changes exactly when its value does).
    `words`: the node's "Via" and "Traffic of" texts by interface (its links share a
    few interfaces: each pair is worked out once per view); `condition`: the node's
    (node_condition)."""
    get = lk.get
    addr = lk["peer_address"]
    peer = get("peer_name") or names.get(get("peer_id")) or addr
    cap = get("capacity_bytes_per_s")
    cap = cap if cap and cap > 0 else None
    util = get("utilization") if cap is not None else None
    if util is not None and get("rdma") == "not_counted":
        util = ("IP", util)  # RDMA not in it: the IP part, a lower bound ("IP 3 %")
    carrier = (get("local_interface"), get("local_label"), get("member_interface"))
    texts = words.get(carrier)
    if texts is None:
        texts = words[carrier] = (linkwords.via(lk, ifaces), linkwords.traffic_of(lk, ifaces))
    exo = exo_cell(lk) if get("exo_instances") or get("rdma") else ""
    # a down link's last RTT is not its RTT; a stale node's numbers are not now's either
    live = lk["state"] != "down" and condition is None
    rx, tx = get("rx_bytes_per_s"), get("tx_bytes_per_s")
    if get("flow_source"):  # its own bytes, with its shared carrier's beside them
        rx, tx = ("own", get("flow_rx_bytes_per_s"), rx), ("own", get("flow_tx_bytes_per_s"), tx)
    return (node_name, (peer, addr), _state(lk, condition), get("rtt_ms") if live else None,
            util, rx, tx, cap, texts[0], texts[1],
            get("jitter_ms") if live else None, get("loss"), exo)


def _sort_key(c: int, v: Any) -> Any:
    if c == TO:
        return v[0]
    if c == STATE:
        return _STATE_RANK.get(v[0] if isinstance(v, tuple) else v, 3)
    if c in _NUMBERS:
        if v is None:  # unknown sorts below every number (RTT: above, as the slowest)
            return float("inf") if c == RTT else -1.0
        if isinstance(v, tuple):  # ("IP", utilization), ("own", own, carrier's): its number
            v = v[1]
            if v is None:
                return -1.0
        return max(v, 0.0) if c in (RX, TX) else v
    return v


class LinkModel(QAbstractTableModel):
    """Rows of links in display order, sorted by `sort_column` / `sort_order`."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: list[_Row] = []
        self._by_id: dict[str, _Row] = {}
        self.sort_column = FROM
        self.sort_order = Qt.SortOrder.AscendingOrder
        #: how numbers read (a units preference may replace them); see `formatters`
        self.rate: Callable[[float | None], str] = fmt.rate
        self.ms: Callable[[float | None], str] = fmt.ms

    # -- what a cell shows ------------------------------------------------------------
    def text(self, c: int, v: Any) -> str:
        if c == TO:
            return f"{v[0]} ({v[1]})"
        if c in (RTT, JITTER):
            return self.ms(v)
        if c == LOSS:
            return fmt.percent(v)
        if c in (RX, TX):
            if isinstance(v, tuple):  # ("own", its own, its carrier's): issue 30
                return f"{self.rate(v[1])} of {self.rate(v[2])}"
            return self.rate(v)
        if c == UTIL:
            if isinstance(v, tuple):
                return f"{v[0]} {fmt.utilization(v[1], 1.0)}"
            return fmt.utilization(v, 1.0 if v is not None else None)
        if c == CAPACITY:
            return _capacity_text(v)
        if c == STATE and isinstance(v, tuple):  # ("stale", state, age)
            return f"{v[1]}, {v[2]} s ago"  # (its node stopped answering then)
        return v

    def _texts(self, row: _Row) -> list[str]:
        if row.texts is None:
            row.texts = [self.text(c, v) for c, v in enumerate(row.vals)]
        return row.texts

    # -- Qt's model API ---------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, c = self.rows[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._texts(row)[c]
        if role == LINK_ID:
            return row.id
        if role == SORT:
            return _sort_key(c, row.vals[c])
        if role == Qt.ItemDataRole.ToolTipRole:
            return _tips(row.link, row.ifaces).get(c)
        if role == Qt.ItemDataRole.TextAlignmentRole and c in _NUMBERS:
            return _ALIGN_RIGHT
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return HEADER_TIPS.get(section)
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.sort_column, self.sort_order = column, order
        self._reorder()

    # -- updates ----------------------------------------------------------------------
    def _sorted(self, rows: list[_Row]) -> list[_Row]:
        c = self.sort_column
        if not 0 <= c < len(COLUMNS):
            return rows
        return sorted(rows, key=lambda r: _sort_key(c, r.vals[c]),
                      reverse=self.sort_order == Qt.SortOrder.DescendingOrder)

    def _reorder(self) -> None:
        """Sort the rows; a layout change (selection follows its rows) only when the
        order moved."""
        new = self._sorted(self._base())
        if new == self.rows:
            return
        self.layoutAboutToBeChanged.emit()
        where = {r.id: i for i, r in enumerate(new)}
        old = self.persistentIndexList()
        self.changePersistentIndexList(
            old, [self.index(where[self.rows[i.row()].id], i.column()) for i in old])
        self.rows = new
        self.layoutChanged.emit()

    def _base(self) -> list[_Row]:
        """The rows in the cluster view's order (what a sort starts from: ties keep it)."""
        return list(self._by_id.values())

    def update(self, cluster: dict[str, Any] | None,
               nodes: list[Node] | None = None) -> tuple[bool, dict[int, set[Any]]]:
        """Take a new cluster view. Returns (whether the row set changed, the new values
        of changed text cells by column), for the table's column widths."""
        names = ({n.id: n.name for n in nodes} if nodes is not None else
                 {n["node"]["id"]: n["node"]["name"] for n in (cluster or {}).get("nodes", [])})
        fresh: dict[str, tuple[tuple, dict[str, Any], linkwords.Ifaces]] = {}
        for node in (cluster or {}).get("nodes", []):
            ifaces = linkwords.node_interfaces(node)
            name = node["node"]["name"]
            words: dict[tuple, tuple[str, str]] = {}
            condition = node_condition(node)
            for lk in node.get("links", []):
                fresh[lk["id"]] = (_values(name, lk, ifaces, names, words, condition), lk,
                                   ifaces)
        rows_changed = fresh.keys() != self._by_id.keys()
        if rows_changed:
            self._remove([i for i, r in enumerate(self.rows) if r.id not in fresh])
        changed_text: dict[int, set[Any]] = {}
        changed: list[int] = []  # indexes in display order
        resort = False
        c_sort = self.sort_column if self.sort_column < len(COLUMNS) else -1
        for i, row in enumerate(self.rows):
            # (every row left is in the view) tooltips read the latest link
            vals, row.link, row.ifaces = fresh[row.id]
            old = row.vals
            if vals == old:
                continue
            row.vals, row.texts = vals, None
            changed.append(i)
            if c_sort >= 0 and old[c_sort] != vals[c_sort]:
                resort = True
            if _text_part(old) != _text_part(vals):  # may need a wider column
                for c in _TEXTS:
                    if old[c] != vals[c]:
                        changed_text.setdefault(c, set()).add(vals[c])
        if rows_changed:  # after the changed rows' indexes are told (they stay valid)
            added = [_Row(lid, *new) for lid, new in fresh.items() if lid not in self._by_id]
            if added:
                n = len(self.rows)
                self.beginInsertRows(QModelIndex(), n, n + len(added) - 1)
                self.rows.extend(added)
                self.endInsertRows()
        if rows_changed:  # the base order follows the view's
            known = {r.id: r for r in self.rows}
            self._by_id = {lid: known[lid] for lid in fresh}
        last = len(COLUMNS) - 1
        start = prev = None
        for i in changed:  # one dataChanged per run of adjacent changed rows
            if start is None:
                start = prev = i
            elif i == prev + 1:
                prev = i
            else:
                self.dataChanged.emit(self.index(start, 0), self.index(prev, last))
                start = prev = i
        if start is not None:
            self.dataChanged.emit(self.index(start, 0), self.index(prev, last))
        if resort or rows_changed:
            self._reorder()
        return rows_changed, changed_text

    def _remove(self, gone: list[int]) -> None:
        """Remove the rows at these display indexes (ascending), a run at a time from
        the bottom, so that the other indexes stay valid."""
        runs: list[list[int]] = []
        for i in gone:
            if runs and runs[-1][1] == i - 1:
                runs[-1][1] = i
            else:
                runs.append([i, i])
        for first, last in reversed(runs):
            self.beginRemoveRows(QModelIndex(), first, last)
            del self.rows[first:last + 1]
            self.endRemoveRows()

    def row_of(self, link_id: str) -> int | None:
        row = self._by_id.get(link_id)
        return None if row is None else self.rows.index(row)

    def link(self, link_id: str) -> dict[str, Any] | None:
        row = self._by_id.get(link_id)
        return None if row is None else row.link

    def values(self, c: int) -> set[Any]:
        return {r.vals[c] for r in self.rows}


#: the numbers each number column's format can produce at its widest (so its column
#: never needs to grow with the numbers)
WIDEST_SAMPLES: dict[int, tuple[Any, ...]] = {
    RTT: (None, 0.88, 88.8, 8888.0),
    JITTER: (None, 0.88, 88.8, 8888.0),
    LOSS: (None, 1.0),
    RX: (None, 888.0, 88.8e3, 888e3, 88.8e6, 888e6, 88.8e9, 888e9),
    TX: (None, 888.0, 88.8e3, 888e3, 88.8e6, 888e6, 88.8e9, 888e9),
    UTIL: (None, 0.001, 8.88),
    CAPACITY: (None, 8.88e3, 888e3, 88.8e6, 888e6, 8.88e9, 888e9),
}

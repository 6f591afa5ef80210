"""The window's link table: one sortable row per link of every node, updated in place
(selection and sort survive a new cluster view), with what each cell rests on in its
tooltip. MainWindow (window/dashboard.py) owns one and keeps its selection in step with the rest.

Built for a big cluster's view every second (64 nodes: 4032 rows): the rows live in a
Python model (LinkModel) that keeps each link's raw values, compares them with the new
view's and tells the view which rows changed (one dataChanged per run of changed rows);
cell texts are formatted when a cell is drawn, tooltips when one is asked for; the
model sorts itself (a layout change only when the order moved). Columns are sized in
Python: text columns to their widest text, number columns to the widest text their
format can produce, so they never jump with the numbers and Qt never measures rows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyle, QTableView, QWidget

from exotray.core.topology import Node
from exotray.ui.link.model import (
    COLUMNS,
    EXO,
    FROM,
    LINK_ID,
    WIDEST_SAMPLES,
    LinkModel,
    exo_present,
)


class LinkTable(QTableView):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.links = LinkModel(self)
        #: the model, by the names the item model and its sorting proxy had
        self.source = self.proxy = self.links
        self.setModel(self.links)
        self.setSortingEnabled(True)
        self.sortByColumn(FROM, Qt.SortOrder.AscendingOrder)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().hide()
        self.setColumnHidden(EXO, True)  # until a local exo answers (exo_present)
        # No stretched last column: the space right of the columns stays empty rather
        # than making "State" 600 px wide. Widths are set in Python (_fit).
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.horizontalHeader().setStretchLastSection(False)
        self.setWordWrap(False)  # "22.3 kB/s" on one line
        self.setAlternatingRowColors(True)
        self._measure_font()
        self._fit(self.links.values(c) for c in range(len(COLUMNS)))

    def _measure_font(self) -> None:
        """Text width in the cells' font (cached: texts repeat) and the margins a cell
        adds to it, as the item delegate and the grid draw them."""
        self._advance = functools.lru_cache(maxsize=8192)(
            self.fontMetrics().horizontalAdvance)
        margin = self.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self)
        self._pad = 2 * (margin + 1) + 1 + 4  # text margins, grid line, and some air
        header = self.horizontalHeader()
        style = header.style()
        extra = (2 * style.pixelMetric(QStyle.PixelMetric.PM_HeaderMargin, None, header)
                 + style.pixelMetric(QStyle.PixelMetric.PM_HeaderMarkSize, None, header) + 8)
        hfm = header.fontMetrics()
        self._header_w = [hfm.horizontalAdvance(t) + extra for t in COLUMNS]

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._measure_font()
            self._fit(self.links.values(c) for c in range(len(COLUMNS)))
        super().changeEvent(event)

    def _need(self, c: int, values: Any) -> int:
        """The width column `c` needs for these values."""
        text = self.links.text
        samples = WIDEST_SAMPLES.get(c)
        if samples is not None:
            values = samples
        widest = max((self._advance(text(c, v)) for v in values), default=0)
        return max(widest + self._pad, self._header_w[c])

    def _fit(self, values_by_column: Any) -> None:
        """Every column to its content (narrower too: the rows changed)."""
        for c, values in enumerate(values_by_column):
            self.setColumnWidth(c, self._need(c, values))

    def _widen(self, changed: dict[int, set[Any]]) -> None:
        """Widen each column whose newly set text does not fit (never narrow one:
        columns that jump back and forth are harder to read than a little air)."""
        for c, values in changed.items():
            need = self._need(c, values)
            if need > self.columnWidth(c):
                self.setColumnWidth(c, need)

    def set_number_formats(self, rate: Callable[[float | None], str]) -> None:
        """Show rates with another formatter: every cell again."""
        self.links.rate = rate
        self.restyle()

    def restyle(self) -> None:
        """Every cell's text again (fmt's units changed: the values did not, so an
        update would find nothing to redraw)."""
        for row in self.links.rows:
            row.texts = None
        if self.links.rows:
            self.links.dataChanged.emit(self.links.index(0, 0),
                                        self.links.index(len(self.links.rows) - 1,
                                                         len(COLUMNS) - 1))
        self._fit(self.links.values(c) for c in range(len(COLUMNS)))

    def set_cluster(self, cluster: dict[str, Any] | None,
                    nodes: list[Node] | None = None) -> None:
        """Update rows in place (keyed by link id), so selection and sorting survive.
        `nodes`: the cluster's graph's nodes when the caller built it (peer names)."""
        exo = exo_present(cluster)
        if self.isColumnHidden(EXO) == exo:  # the column only while exo is there
            self.setColumnHidden(EXO, not exo)
        rows_changed, changed = self.links.update(cluster, nodes)
        if rows_changed:
            self._fit(self.links.values(c) for c in range(len(COLUMNS)))
        elif changed:
            self._widen(changed)

    def link_ids(self) -> list[str]:
        """Link ids in the order shown (after sorting)."""
        return [r.id for r in self.links.rows]

    def selected_link(self) -> str | None:
        rows = self.selectionModel().selectedRows()
        return rows[0].data(LINK_ID) if rows else None

    def select_link(self, link_id: str | None) -> None:
        if link_id is None:
            self.clearSelection()
            return
        r = self.links.row_of(link_id)
        if r is not None:
            self.selectRow(r)
            self.scrollTo(self.links.index(r, 0))

"""The Health view: `exotray doctor`'s checks (core/doctor.py) over the cluster view the
window shows and the events its timeline holds, problems first, refreshed with the
cluster. A click on a check selects its first link (everywhere, as any selection);
its tooltip says what to do. Beside the events' timeline, in a tab of its own whose
title counts the failing checks."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from exotray.core import doctor
from exotray.ui.style import look, theme

_WORDS = {"fail": "fail", "warn": "warning", "pass": "ok"}


def _colour(status: str) -> str:
    return {"fail": theme.LINK_HOT, "warn": theme.LINK_BUSY}.get(status, theme.LINK_CALM)


def title(checks: list[doctor.Check]) -> str:
    """The tab's title: "Health · 2 failing" (or "Health" when nothing fails)."""
    n = len(doctor.failing(checks))
    return f"Health · {n} failing" if n else "Health"


class HealthView(QWidget):
    #: a check's first link was clicked (its id)
    linkSelected = Signal(str)

    def __init__(self, clock: Callable[[], float] = time.time,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.clock = clock
        self.checks: list[doctor.Check] = []
        self.heading = QLabel("Health: waiting for the agent…")
        self.heading.setTextFormat(Qt.TextFormat.PlainText)
        self.heading.setWordWrap(True)
        self.list = QTreeWidget()
        self.list.setHeaderLabels(["", "check", "what was found"])
        self.list.setRootIsDecorated(False)
        self.list.setAlternatingRowColors(True)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setWordWrap(True)
        self.list.setColumnWidth(0, 70)
        self.list.setColumnWidth(1, 130)
        self.list.itemClicked.connect(self._clicked)
        self.list.itemActivated.connect(self._clicked)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 4, 6, 0)
        lay.addWidget(self.heading)
        lay.addWidget(self.list, 1)
        self.tabs: QTabWidget | None = None
        self.restyle()
        look.instance().changed.connect(self.restyle)

    def beside(self, timeline: QWidget) -> QTabWidget:
        """The events' timeline and this view as two tabs (the window's lower right)."""
        self.tabs = QTabWidget()
        self.tabs.addTab(timeline, "Events")
        self.tabs.addTab(self, "Health")
        return self.tabs

    # -- data in ---------------------------------------------------------------------------
    def refresh(self, cluster: dict[str, Any] | None, events: list[dict[str, Any]]) -> None:
        """Run the checks over `cluster` (None: no agent) and this node's `events`."""
        if not cluster or not cluster.get("nodes"):
            self.set_checks([])
            self.heading.setText("Health: the local exotray agent does not answer.")
            return
        self.set_checks(doctor.run(cluster, events, self.clock(), sys.platform))

    def set_checks(self, checks: list[doctor.Check]) -> None:
        if checks == self.checks and self.list.topLevelItemCount() == len(checks):
            return  # the same: the list, its selection and scroll stay as they are
        self.checks = list(checks)
        self.list.clear()
        for c in checks:
            item = QTreeWidgetItem([_WORDS[c.status], c.id, c.summary])
            tip = c.summary + (f"\n\nWhat to do: {c.fix}" if c.fix else "")
            if c.links:
                tip += "\n\nClick to select its link."
            for col in range(3):
                item.setToolTip(col, tip)
            item.setForeground(0, QBrush(QColor(_colour(c.status))))
            item.setData(0, Qt.ItemDataRole.UserRole, c.links[0] if c.links else "")
            self.list.addTopLevelItem(item)
        fails = len(doctor.failing(checks))
        warns = sum(c.status == "warn" for c in checks)
        self.heading.setText(
            f"{fails} failing, {warns} warning, {len(checks) - fails - warns} passing "
            f"(as `exotray doctor`; events of the last 24 h)" if checks else "Health")
        if self.tabs is not None:
            self.tabs.setTabText(self.tabs.indexOf(self), title(checks))

    # -- look and out ----------------------------------------------------------------------
    def restyle(self) -> None:
        self.heading.setStyleSheet(f"color: {theme.TEXT}; font-weight: 600;")
        for i in range(self.list.topLevelItemCount()):
            item = self.list.topLevelItem(i)
            item.setForeground(0, QBrush(QColor(_colour(self.checks[i].status))))

    def _clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        link_id = item.data(0, Qt.ItemDataRole.UserRole)
        if link_id:
            self.linkSelected.emit(link_id)

    # -- introspection (tests) -------------------------------------------------------------
    def rows(self) -> list[tuple[str, str, str]]:
        return [tuple(self.list.topLevelItem(i).text(c) for c in range(3))  # type: ignore[misc]
                for i in range(self.list.topLevelItemCount())]

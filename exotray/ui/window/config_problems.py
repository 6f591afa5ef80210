"""What is wrong in the config file the agent refused, in the Preferences dialog: one
line per wrong key, with its line in the file; a wrong value of a field of the dialog
marks that field's label (Save writes the field's value over it), and any other wrong
key gets a ticked checkbox that fixes it on Save: the setting it most likely means
(`no_mdns = true` becomes `mdns = false`), else removing it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QLabel, QVBoxLayout, QWidget

from exotray.core.configfile import Problem
from exotray.core.settings import toml_text
from exotray.ui.style import theme


class ConfigProblems(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("problems")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        QVBoxLayout(self)
        #: a field's key -> why its value in the file is wrong
        self.wrong_fields: dict[str, str] = {}
        #: the checkboxes that fix the other wrong keys on Save, with their problem
        self.fixes: list[tuple[QCheckBox, Problem]] = []
        self._marked: list[QWidget] = []
        self.hide()

    def set_problems(self, path: Path | None, found: Iterable[Problem], error: str = "",
                     labels: Mapping[str, QWidget] | None = None) -> None:
        """Why the agent refused `path`: its wrong keys (`found`) or the `error` that says
        why; `labels`: the widget that names each field of the dialog, by key. `path`
        None: nothing is wrong (hidden)."""
        lay = self.layout()
        while lay.count():
            w = lay.takeAt(0).widget()
            if w is not None:
                w.setParent(None)  # gone now, not at the next turn of the event loop
                w.deleteLater()
        for label in self._marked:
            label.setStyleSheet("")
            label.setToolTip("")
        self.fixes, self.wrong_fields, self._marked = [], {}, []
        self.setVisible(path is not None)
        if path is None:
            return
        self.setStyleSheet(
            f"#problems {{ background: {theme.PROBLEM_BACKGROUND}; "
            f"border: 1px solid {theme.PROBLEM_BORDER}; }} "
            f"#problems QLabel, #problems QCheckBox {{ color: {theme.PROBLEM_TEXT}; }}")
        found = list(found) or ([Problem("", None, error)] if error else [])
        self._line(f"The agent is not running: it refused its config file {path}"
                   + (":" if found else "."))
        labels = labels or {}
        for p in found:
            self._line(f"line {p.line}: {p.message}" if p.line else p.message)
            if not p.key:
                continue
            if p.key in labels:
                self.wrong_fields[p.key] = p.message
                label = labels[p.key]
                label.setStyleSheet(f"color: {theme.PROBLEM_TEXT}; font-weight: bold")
                label.setToolTip(f"In the file: {p.message}. Save writes the value shown "
                                 "here.")
                self._marked.append(label)
                continue
            if p.replacement is not None:
                fix = QCheckBox(f"Save writes `{toml_text(*p.replacement)}` instead")
            else:
                fix = QCheckBox(f"Save removes `{p.key}` (the agent then uses its default)")
            fix.setChecked(True)
            lay.addWidget(fix)
            self.fixes.append((fix, p))

    def _line(self, text: str) -> None:
        label = QLabel(text)
        label.setWordWrap(True)
        label.setTextFormat(Qt.TextFormat.PlainText)
        self.layout().addWidget(label)

    def chosen(self) -> tuple[list[str], dict[str, tuple[str, Any]]]:
        """(keys to remove, wrong key -> (key, value) to write instead), as ticked."""
        ticked = [p for box, p in self.fixes if box.isChecked()]
        return ([p.key for p in ticked if p.replacement is None],
                {p.key: p.replacement for p in ticked if p.replacement is not None})

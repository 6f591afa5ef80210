"""Preferences: saved in the agent's config file and applied live through its local
control endpoint. Start at login is the app's own (an autostart entry)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from exotray.ui.client.poll import AgentClient
from exotray.ui.tray import autostart


def _spin(lo: float, hi: float, step: float, decimals: int, suffix: str) -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setSingleStep(step)
    s.setDecimals(decimals)
    s.setSuffix(suffix)
    return s


class Preferences(QDialog):
    saved = Signal(dict)

    def __init__(self, client: AgentClient, cluster: dict[str, Any] | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.client = client
        self.setWindowTitle("exotray Preferences")
        self.threshold = _spin(10, 100, 1, 0, " %")
        self.sustain = _spin(0, 600, 1, 1, " s")
        self.clear = _spin(0, 600, 1, 1, " s")
        self.interval = _spin(0.1, 60, 0.5, 2, " s")
        self.notify_peers = QCheckBox("Notify when a peer goes down or comes back")
        self.key_file = QLineEdit()
        self.key_file.setPlaceholderText("none: snapshots and probes are not authenticated")
        self.key_file.setToolTip("A file holding the cluster's shared secret (16 bytes or "
                                 "more). Agents with another key, or none, are refused.")
        self.login = QCheckBox("Start exotray at login")
        # how rates are shown (saved in the agent's config like the rest; the tray app
        # applies it, see App._settings_saved)
        self.units = QComboBox()
        self.units.addItem("bytes per second (MB/s)", "bytes")
        self.units.addItem("bits per second (Mbit/s), as link speeds are sold", "bits")
        self.capacity = QTableWidget(0, 3)
        self.capacity.setHorizontalHeaderLabels(["Interface", "Detected", "Override (Mbit/s)"])
        self.capacity.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.capacity.verticalHeader().hide()
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.PlainText)

        form = QFormLayout()
        form.addRow("Saturated at", self.threshold)
        form.addRow("…for at least", self.sustain)
        form.addRow("Cleared after", self.clear)
        form.addRow("Probe interval", self.interval)
        form.addRow("Cluster key file", self.key_file)
        form.addRow("Show rates in", self.units)
        form.addRow(self.notify_peers)
        form.addRow(self.login)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        self.buttons = buttons
        # The fields show only values read from the agent: until they are (or when
        # they cannot be) there is nothing to show but the reason.
        self.fields = QWidget()
        fields = QVBoxLayout(self.fields)
        fields.setContentsMargins(0, 0, 0, 0)
        fields.addLayout(form)
        fields.addWidget(QLabel("Link capacity per interface (empty: as detected)"))
        fields.addWidget(self.capacity)
        self.fields.hide()
        lay = QVBoxLayout(self)
        lay.addWidget(self.fields)
        lay.addWidget(self.status)
        lay.addWidget(buttons)
        self.resize(520, 480)
        self._has_units = False
        self.load(cluster)

    def load(self, cluster: dict[str, Any] | None) -> None:
        self._cluster = cluster
        self.login.setChecked(autostart.enabled())
        self.status.setText("Loading the agent's settings…")
        self.fields.hide()
        self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(False)
        self.client.get_settings(self._loaded)

    def _loaded(self, result: Any, error: str | None) -> None:
        if result is None:
            self.fields.hide()
            self.status.setText(self._why(error))
            return
        self.fields.show()
        s = result["settings"]
        self.threshold.setValue(s["threshold"] * 100)
        self.sustain.setValue(s["sustain"])
        self.clear.setValue(s["clear"])
        self.interval.setValue(s["interval"])
        self.notify_peers.setChecked(s["notify_peers"])
        self.key_file.setText(s.get("key_file") or "")
        # an agent from before the setting has none: the choice is then not offered
        self._has_units = "units" in s
        self.units.setEnabled(self._has_units)
        self.units.setCurrentIndex(max(0, self.units.findData(s.get("units", "bytes"))))
        overrides: dict[str, float] = dict(s.get("capacity") or {})
        ifaces = []
        if self._cluster:
            ifaces = [i for i in self._cluster["nodes"][0]["interfaces"] if i["kind"] != "loopback"]
        names = [i["name"] for i in ifaces] + sorted(set(overrides) - {i["name"] for i in ifaces})
        by_name = {i["name"]: i for i in ifaces}
        self.capacity.setRowCount(len(names))
        for row, name in enumerate(names):
            info = by_name.get(name)
            label = f"{info['label']} ({name})" if info and info["label"] != name else name
            item = QTableWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, name)
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
            self.capacity.setItem(row, 0, item)
            detected = "unknown"
            if info and info["capacity_bytes_per_s"] and info["capacity_source"] != "override":
                detected = f"{info['capacity_bytes_per_s'] * 8 / 1e6:g} Mbit/s"
            det = QTableWidgetItem(detected)
            det.setFlags(det.flags() & ~Qt.ItemFlag.ItemIsEditable)
            self.capacity.setItem(row, 1, det)
            self.capacity.setItem(row, 2, QTableWidgetItem(
                f"{overrides[name]:g}" if name in overrides else ""))
        self.status.setText(f"Saved in {result.get('config_file') or 'the agent (not saved)'}")
        self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(True)

    def _why(self, error: str | None) -> str:
        text = f"Cannot read the agent's settings: {error}."
        state = getattr(self.client, "state_dir", None)
        if error and ("control token" in error or "401" in error):
            text += (f"\n\nThe agent on port {self.client.port} was started with another "
                     f"state dir than this app ({state}), so its control token is not "
                     "there. Start exotray with that agent's --state-dir, or stop that agent "
                     "and let exotray start its own.")
        return text

    def changes(self) -> dict[str, Any]:
        """The settings as the dialog shows them; raises ValueError on a bad capacity."""
        capacity: dict[str, float] = {}
        for row in range(self.capacity.rowCount()):
            name = self.capacity.item(row, 0).data(Qt.ItemDataRole.UserRole)
            cell = self.capacity.item(row, 2)
            text = cell.text().strip() if cell else ""
            if not text:
                continue
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"capacity of {name}: {text!r} is not a number") from None
            if value <= 0:
                raise ValueError(f"capacity of {name} must be positive")
            capacity[name] = value
        changes = {
            "threshold": round(self.threshold.value() / 100, 4),
            "sustain": self.sustain.value(),
            "clear": self.clear.value(),
            "interval": self.interval.value(),
            "notify_peers": self.notify_peers.isChecked(),
            "capacity": capacity,
            "key_file": self.key_file.text().strip() or None,
        }
        if self._has_units:
            changes["units"] = self.units.currentData()
        return changes

    def save(self) -> None:
        try:
            changes = self.changes()
        except ValueError as e:
            self.status.setText(str(e))
            return
        if self.login.isChecked() != autostart.enabled():
            try:
                if self.login.isChecked():
                    autostart.enable()
                else:
                    autostart.disable()
            except (autostart.AutostartError, OSError) as e:
                self.login.setChecked(autostart.enabled())
                self.status.setText(f"Start at login: {e}")
                return
        self.status.setText("Saving…")
        self.client.put_settings(changes, self._saved)

    def _saved(self, result: Any, error: str | None) -> None:
        if result is None:
            self.status.setText(f"Not saved: {error}")
            return
        self.status.setText("Saved.")
        self.saved.emit(result["settings"])
        self.accept()

"""Preferences: saved in the agent's config file and applied live through its local
control endpoint. Start at login is the app's own (an autostart entry).

When the agent refused its config file (the supervisor's `config_error`: it is not
running, so it cannot be asked), the dialog opens on the file itself: each wrong key
with its line and what to do about it (the setting it most likely means, or removing
it; a wrong value of a field here marks the field), and Save writes the file (only what
changed, core/configfile.update), after which the supervisor starts the agent again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
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
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from exotray.core import configfile
from exotray.core.settings import EDITABLE, Settings, SettingsError, from_mapping
from exotray.ui.client.poll import AgentClient
from exotray.ui.client.supervisor import AgentSupervisor
from exotray.ui.tray import autostart
from exotray.ui.window.config_problems import ConfigProblems


def _spin(lo: float, hi: float, step: float, decimals: int, suffix: str) -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setSingleStep(step)
    s.setDecimals(decimals)
    s.setSuffix(suffix)
    return s


def capacity_interfaces(cluster: dict[str, Any] | None) -> list[dict[str, Any]]:
    """This node's interfaces that can be given a capacity: every one but loopback, and
    any that carries a link, loopback too (on one machine `lo` carries them all)."""
    if not cluster or not cluster.get("nodes"):
        return []
    node = cluster["nodes"][0]
    carrying = {link.get(k) for link in node.get("links") or ()
                for k in ("local_interface", "member_interface")}
    return [i for i in node["interfaces"] if i["kind"] != "loopback" or i["name"] in carrying]


class Preferences(QDialog):
    saved = Signal(dict)

    def __init__(self, client: AgentClient, cluster: dict[str, Any] | None = None,
                 parent: QWidget | None = None,
                 supervisor: AgentSupervisor | None = None) -> None:
        super().__init__(parent)
        self.client = client
        self.supervisor = supervisor
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
        self.capacity_label = QLabel("Link capacity per interface (empty: as detected)")
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        # the config file's wrong keys, when the agent refused it
        self.problems = ConfigProblems()

        form = QFormLayout()
        form.addRow("Saturated at", self.threshold)
        form.addRow("…for at least", self.sustain)
        form.addRow("Cleared after", self.clear)
        form.addRow("Probe interval", self.interval)
        form.addRow("Cluster key file", self.key_file)
        form.addRow("Show rates in", self.units)
        form.addRow(self.notify_peers)
        form.addRow(self.login)
        self._form = form
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        self.open_file = QPushButton("Open the config file")
        self.open_file.setToolTip("in the application that opens .toml files")
        self.open_file.clicked.connect(self._open_in_editor)
        buttons.addButton(self.open_file, QDialogButtonBox.ButtonRole.ActionRole)
        self.open_file.hide()
        self.buttons = buttons
        # The fields show only values read from the agent (or its config file): until
        # they are (or when they cannot be) there is nothing to show but the reason.
        self.fields = QWidget()
        fields = QVBoxLayout(self.fields)
        fields.setContentsMargins(0, 0, 0, 0)
        fields.addLayout(form)
        fields.addWidget(self.capacity_label)
        fields.addWidget(self.capacity)
        self.fields.hide()
        lay = QVBoxLayout(self)
        lay.addWidget(self.problems)
        lay.addWidget(self.fields)
        lay.addWidget(self.status)
        lay.addWidget(buttons)
        self.resize(560, 520)
        self._has_units = False
        #: the config file this dialog edits itself (the agent refused it), else None
        self.config_file: Path | None = None
        #: a field's key -> why its value in the config file is wrong
        self.wrong_fields: dict[str, str] = {}
        self._values: dict[str, Any] = {}  # as loaded, before the user changed anything
        self._shown: dict[str, Any] = {}  # as the fields showed them then
        self.load(cluster)

    def _refused(self) -> bool:
        return self.supervisor is not None and self.supervisor.state == "config_error"

    def load(self, cluster: dict[str, Any] | None) -> None:
        self._cluster = cluster
        self.login.setChecked(autostart.enabled())
        self.fields.hide()
        self.config_file = None
        self.open_file.hide()
        self._set_problems(None, [])
        self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(False)
        if self._refused():
            self._open_config(self.supervisor.config_file)
            return
        self.status.setText("Loading the agent's settings…")
        self.client.get_settings(self._loaded)

    def _loaded(self, result: Any, error: str | None) -> None:
        if result is None:
            if self._refused():  # it stopped meanwhile: its file is what there is
                self._open_config(self.supervisor.config_file)
                return
            self.fields.hide()
            self.status.setText(self._why(error))
            return
        s = result["settings"]
        # an agent from before the setting has none: the choice is then not offered
        self._has_units = "units" in s
        self._show(s)
        self.status.setText(f"Saved in {result.get('config_file') or 'the agent (not saved)'}")

    def _show(self, s: dict[str, Any]) -> None:
        """The fields from these settings (the agent's, or the config file's)."""
        self.fields.show()
        self.threshold.setValue(s["threshold"] * 100)
        self.sustain.setValue(s["sustain"])
        self.clear.setValue(s["clear"])
        self.interval.setValue(s["interval"])
        self.notify_peers.setChecked(s["notify_peers"])
        self.key_file.setText(s.get("key_file") or "")
        self.units.setEnabled(self._has_units)
        self.units.setCurrentIndex(max(0, self.units.findData(s.get("units", "bytes"))))
        overrides: dict[str, Any] = dict(s.get("capacity") or {})
        ifaces = capacity_interfaces(self._cluster)
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
            v = overrides.get(name)
            self.capacity.setItem(row, 2, QTableWidgetItem(
                "" if v is None else f"{v:g}" if isinstance(v, int | float) else str(v)))
        self._values = dict(s)
        self._shown = self._read_fields()
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

    # -- the config file, when the agent refused it ------------------------------------
    def _open_config(self, path: Path) -> None:
        """Show the config file's settings and what is wrong in it."""
        self.config_file = path
        self.open_file.setVisible(path.exists())
        try:
            data, found = configfile.check(path) if path.exists() else ({}, [])
        except SettingsError as e:  # not TOML, unreadable: an editor is what helps
            self._set_problems(path, [], str(e))
            self.status.setText("Fix it with “Open the config file”: the agent starts "
                                "again once it is saved.")
            return
        wrong = {p.key for p in found}
        self._has_units = True
        self._show(_editable(from_mapping({k: v for k, v in data.items() if k not in wrong})))
        for p in found:  # a wrong field's value as written, where the field can hold it
            if p.key == "capacity" and isinstance(data[p.key], dict):
                self._values.pop(p.key, None)
                self._show_capacity_as_written(data[p.key])
            elif p.key in EDITABLE:
                self._values.pop(p.key, None)  # so that Save writes what the field shows
        if found:
            self._set_problems(path, found)
            self.status.setText("Fix what is marked and Save: the agent starts again with "
                                "the file.")
        else:  # the file is fine now, or the agent's options were what it refused
            why = self.supervisor.problem if self.supervisor is not None else None
            self._set_problems(path, [], why or "")
            self.status.setText(f"Saved in {path}")

    def _show_capacity_as_written(self, table: dict[str, Any]) -> None:
        for row in range(self.capacity.rowCount()):
            name = self.capacity.item(row, 0).data(Qt.ItemDataRole.UserRole)
            if name in table:
                self.capacity.item(row, 2).setText(str(table[name]))
        known = {self.capacity.item(r, 0).data(Qt.ItemDataRole.UserRole)
                 for r in range(self.capacity.rowCount())}
        for name in (n for n in table if n not in known):
            row = self.capacity.rowCount()
            self.capacity.setRowCount(row + 1)
            item = QTableWidgetItem(name)
            item.setData(Qt.ItemDataRole.UserRole, name)
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
            self.capacity.setItem(row, 0, item)
            self.capacity.setItem(row, 1, QTableWidgetItem("unknown"))
            self.capacity.setItem(row, 2, QTableWidgetItem(str(table[name])))

    def _set_problems(self, path: Path | None, found: list[configfile.Problem],
                      error: str = "") -> None:
        self.problems.set_problems(path, found, error, self._labels())
        self.wrong_fields = self.problems.wrong_fields

    def _labels(self) -> dict[str, QWidget]:
        """The label (or the checkbox) that names each field."""
        out: dict[str, QWidget] = {"capacity": self.capacity_label,
                                   "notify_peers": self.notify_peers}
        for key in ("threshold", "sustain", "clear", "interval", "key_file", "units"):
            out[key] = self._form.labelForField(getattr(self, key))
        return out

    def _open_in_editor(self) -> None:
        if self.config_file is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.config_file)))

    # -- saving ------------------------------------------------------------------------
    def _read_fields(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold.value(), "sustain": self.sustain.value(),
            "clear": self.clear.value(), "interval": self.interval.value(),
            "notify_peers": self.notify_peers.isChecked(),
            "key_file": self.key_file.text().strip(), "units": self.units.currentData(),
            "capacity": {self.capacity.item(r, 0).data(Qt.ItemDataRole.UserRole):
                         (self.capacity.item(r, 2).text().strip()
                          if self.capacity.item(r, 2) else "")
                         for r in range(self.capacity.rowCount())},
        }

    def changes(self) -> dict[str, Any]:
        """The settings as the dialog shows them; raises ValueError on a bad capacity. A
        field the user did not touch keeps the value it was loaded with (a spin box
        rounds: an interval of 0.125 s shows as 0.13)."""
        now, shown, values = self._read_fields(), self._shown, self._values
        capacity: dict[str, float] = {}
        loaded = values.get("capacity") if isinstance(values.get("capacity"), dict) else {}
        for name, text in now["capacity"].items():
            if not text:
                continue
            if text == shown.get("capacity", {}).get(name) and name in loaded:
                capacity[name] = loaded[name]
                continue
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"capacity of {name}: {text!r} is not a number") from None
            if value <= 0:
                raise ValueError(f"capacity of {name} must be positive")
            capacity[name] = value
        changes = {
            "threshold": round(now["threshold"] / 100, 4),
            "sustain": now["sustain"],
            "clear": now["clear"],
            "interval": now["interval"],
            "notify_peers": now["notify_peers"],
            "capacity": capacity,
            "key_file": now["key_file"] or None,
        }
        if self._has_units:
            changes["units"] = now["units"]
        for key in changes:
            if key != "capacity" and key in values and now[key] == shown.get(key):
                changes[key] = values[key]
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
        if self.config_file is not None:
            self._save_to_file(self.config_file, changes)
            return
        self.status.setText("Saving…")
        self.client.put_settings(changes, self._saved)

    def _save_to_file(self, path: Path, changes: dict[str, Any]) -> None:
        """Write what changed into the config file the agent refused; the supervisor sees
        the file change and starts the agent again."""
        remove, renames = self.problems.chosen()
        try:
            configfile.update(path, self._values, changes, remove=remove, renames=renames)
            _data, found = configfile.check(path)
        except SettingsError as e:
            self.status.setText(f"Not saved: {e}")
            return
        if found:  # what was left as it was (a fix unticked)
            self._open_config(path)
            self.status.setText(f"Saved in {path}, but the agent still refuses it: "
                                + "; ".join(p.message for p in found))
            return
        self.status.setText(f"Saved in {path}: the agent starts again with it.")
        self.saved.emit(_editable(configfile.read(path)))
        self.accept()

    def _saved(self, result: Any, error: str | None) -> None:
        if result is None:
            self.status.setText(f"Not saved: {error}")
            return
        self.status.setText("Saved.")
        self.saved.emit(result["settings"])
        self.accept()


def _editable(s: Settings) -> dict[str, Any]:
    return {k: getattr(s, k) for k in EDITABLE}

"""The numbers panel beside the link charts: a link's current numbers (RTT, queueing,
jitter, loss, rates, utilization, capacity), the interface it goes through, a note on
what its traffic counts, and the last result of an action on it. Labels and style sheet
come from link/chart_style.py; ui/link/view.py places the panel and hands it each link."""

from __future__ import annotations

from typing import Any, Final

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QSizePolicy

from exotray.core import fmt
from exotray.ui.link import words as linkwords
from exotray.ui.link.chart_style import plain, rule, sub_label

#: rows of the numbers panel: key, caption
NUMBER_ROWS: Final = (
    ("rtt_ms", "RTT median"),
    ("rtt_min_ms", "RTT min"),
    ("rtt_max_ms", "RTT max"),
    ("rtt_p90_ms", "RTT p90"),
    ("rtt_baseline_ms", "Idle RTT"),
    ("queue_delay_ms", "Queueing"),
    ("jitter_ms", "Jitter"),
    ("loss", "Loss"),
    ("rx_bytes_per_s", "rx"),
    ("tx_bytes_per_s", "tx"),
    ("utilization", "Utilization"),
    ("capacity", "Capacity"),
)


def capacity(link: dict[str, Any]) -> float | None:
    """The link's capacity in bytes/s, None when unknown (missing, zero or negative)."""
    cap = link.get("capacity_bytes_per_s")
    if not cap or cap <= 0:
        cap = None
    return cap


class NumbersPanel(QFrame):
    """A link's current numbers, one labelled row each (NUMBER_ROWS), grouped by rules."""

    def __init__(self) -> None:
        super().__init__()
        # Every label here may show text from a peer's snapshot: plain text (see
        # chart_style.plain and link/view.py's header).
        self.setObjectName("numbers")
        self.setFixedWidth(250)
        grid = QGridLayout(self)
        grid.setContentsMargins(14, 12, 14, 12)
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(5)
        self._values: dict[str, QLabel] = {}
        self._subs: dict[str, QLabel] = {}
        row = 0
        for key, caption in NUMBER_ROWS:
            if key in ("rtt_baseline_ms", "jitter_ms", "rx_bytes_per_s", "utilization"):
                grid.addWidget(rule(), row, 0, 1, 2)
                row += 1
            cap = plain(QLabel(caption))
            cap.setProperty("role", "caption")
            value = plain(QLabel(fmt.DASH))
            value.setProperty("role", "value")
            value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            value.setWordWrap(True)  # never cut: a long value wraps inside the panel
            grid.addWidget(cap, row, 0)
            grid.addWidget(value, row, 1)
            self._values[key] = value
            row += 1
            if key in ("tx_bytes_per_s", "utilization", "capacity"):
                sub = sub_label()
                grid.addWidget(sub, row, 0, 1, 2)
                self._subs[key] = sub
                row += 1
        grid.addWidget(rule(), row, 0, 1, 2)
        row += 1
        self._interface = plain(QLabel(fmt.DASH))
        self._interface.setProperty("role", "value")
        self._interface.setWordWrap(True)
        self._note = plain(QLabel(""))
        self._note.setProperty("role", "note")
        self._note.setWordWrap(True)
        # the last result of an action on this link (a capacity test, an export): it
        # stays until it is replaced or another link is shown
        self._result = QLabel("")
        self._result.setObjectName("result")
        self._result.setWordWrap(True)
        self._result.setTextFormat(Qt.TextFormat.PlainText)
        self._result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._result.hide()
        grid.addWidget(self._interface, row, 0, 1, 2)
        grid.addWidget(self._note, row + 1, 0, 1, 2)
        grid.addWidget(self._result, row + 2, 0, 1, 2)
        grid.setRowStretch(row + 3, 1)
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)

    def show_link(self, link: dict[str, Any] | None,
                  interfaces: linkwords.Ifaces | None) -> None:
        """Fill the panel from a link dict of the cluster view (None: dashes and a hint)."""
        if link is None:
            for label in self._values.values():
                label.setText(fmt.DASH)
            for sub in self._subs.values():
                sub.setText("")
                sub.hide()
            self._interface.setText("")
            self._note.setText("Click a link in the map to see its latency and traffic.")
            return
        for key in ("rtt_ms", "rtt_min_ms", "rtt_max_ms", "rtt_p90_ms", "rtt_baseline_ms",
                    "jitter_ms"):
            self._values[key].setText(fmt.ms(link.get(key)))
        qd = link.get("queue_delay_ms")
        self._values["queue_delay_ms"].setText(fmt.DASH if qd is None else f"+{fmt.ms(qd)}")
        self._values["loss"].setText(fmt.percent(link.get("loss")))
        for own, key in (("flow_rx_bytes_per_s", "rx_bytes_per_s"),
                         ("flow_tx_bytes_per_s", "tx_bytes_per_s")):
            total = fmt.rate(link.get(key))  # its carrier's; its own beside, where read
            self._values[key].setText(f"{fmt.rate(link.get(own))} of {total}"
                                      if link.get("flow_source") else total)
        # "IP only: RDMA not counted · RDMA enabled · rdma_en3 PORT_ACTIVE": a JACCL link
        # on macOS must not read as an idle one
        self._set_sub("tx_bytes_per_s", " · ".join(
            x for x in (linkwords.rdma_short(link), linkwords.rdma_state(link)) if x))
        cap = capacity(link)
        ip_only = link.get("rdma") == "not_counted"  # the IP part of an RDMA link's load
        self._values["utilization"].setText(
            "unknown" if ip_only and cap else fmt.utilization(link.get("utilization"), cap))
        self._values["capacity"].setText(fmt.capacity_rate(cap))
        # one unit per sentence: the busier direction's rate and the capacity in bytes/s,
        # the capacity's link speed (bit/s) as a label of its own
        rates = [(link.get(k), d) for k, d in (("rx_bytes_per_s", "rx"),
                                                ("tx_bytes_per_s", "tx"))
                 if link.get(k) is not None]
        busy = max(rates, key=lambda r: r[0]) if rates else None
        if cap is not None and busy is not None:
            self._set_sub("utilization", ("IP alone: " + fmt.utilization(
                link.get("utilization"), cap) + ", " if ip_only else "")
                + f"{busy[1]} {fmt.rate(busy[0])} of {fmt.capacity_rate(cap)}")
        else:
            self._set_sub("utilization", "")
        ifaces = interfaces or {}
        if cap is not None:
            words = linkwords.capacity_words(link, ifaces)
            self._set_sub("capacity", f"({fmt.capacity_other(cap)}) · {words}")
        else:
            self._set_sub("capacity", "set it in Preferences, or Measure capacity")
        at = linkwords.speed(link, ifaces)
        self._interface.setText(f"via {linkwords.via(link, ifaces)}" + (f" · {at}" if at else ""))
        rdma = linkwords.rdma_words(link)
        self._note.setText(linkwords.traffic_note(link, ifaces) + (f" {rdma}" if rdma else ""))

    def set_result(self, text: str | None) -> None:
        """Show the last result of an action on the link (plain text); None hides it."""
        self._result.setText(text or "")
        self._result.setVisible(bool(text))

    def numbers(self) -> dict[str, str]:
        """The panel's texts by key: NUMBER_ROWS keys, "interface", "note",
        "utilization_detail", "capacity_detail" and "result" ("" while hidden)."""
        out = {k: v.text() for k, v in self._values.items()}
        out["interface"] = self._interface.text()
        out["note"] = self._note.text()
        out["utilization_detail"] = self._subs["utilization"].text()
        out["capacity_detail"] = self._subs["capacity"].text()
        out["result"] = "" if self._result.isHidden() else self._result.text()
        return out

    def _set_sub(self, key: str, text: str) -> None:
        sub = self._subs[key]
        if sub.text() != text:
            sub.setText(text)
        sub.setVisible(bool(text))

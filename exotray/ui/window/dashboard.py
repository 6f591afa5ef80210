"""The dashboard: topology, link details, a sortable table of every link, and the
cluster's events on a timeline.

Selecting a link anywhere (an edge, a table row, an event of the timeline, a
notification, a tray menu line) selects it everywhere. Details show the agent's history
for the range they ask for (`LinkDetails.historyWanted`, fetched by the client's worker
thread) and then follow the live cluster view. What an action on a link found out (a
capacity test, an export) stays in that link's details; what is wrong with the agent
stays in a banner on top. Colours follow the system's light or dark scheme and rates the
Preferences' units (exotray.ui.style.look); both redraw the window at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFileDialog,
    QLabel,
    QMainWindow,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from exotray.core import topology
from exotray.ui.client.poll import AgentClient
from exotray.ui.link import words as linkwords
from exotray.ui.link.table import LinkTable
from exotray.ui.link.view import LinkDetails
from exotray.ui.style import look
from exotray.ui.topology.view import TopologyView
from exotray.ui.window.actions import EXPORT_TIP, MEASURE_TIP, PAUSED_TEXT, measured
from exotray.ui.window.banner import ProblemBanner
from exotray.ui.window.health import HealthView
from exotray.ui.window.timeline import DEFAULT_SPAN_S, FETCH_LIMIT, EventTimeline, event_time


class MainWindow(QMainWindow):
    def __init__(self, client: AgentClient | None, parent: QWidget | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self.client = client
        self.clock = clock
        self.setWindowTitle("cluster network")  # (Qt adds " — exotray", the app's name)
        self.cluster: dict[str, Any] | None = None
        self.edges: list[topology.Edge] = []
        self._graphs = topology.GraphCache()
        self.link_id: str | None = None
        self.range_s = 600
        self._syncing = False
        self._history_for: str | None = None
        #: the latest history request; answers to older ones are dropped
        self._history_serial = 0
        #: the last result of an action per link id, shown in its details until replaced
        self._results: dict[str, str] = {}
        #: the time show_link_at asked to see, until that link's history is in
        #: the span of the events last asked for (seconds), None before the first fetch
        self._events_span: float | None = None

        split = self._build_panes()
        self.problem_banner = ProblemBanner()
        self.agent_problem = self.problem_banner.label
        central = QWidget()
        cl = QVBoxLayout(central)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.setSpacing(0)
        cl.addWidget(self.problem_banner)
        #: monitoring paused (the tray's Pause Monitoring): said while it lasts
        self.paused_banner = ProblemBanner(PAUSED_TEXT)
        cl.addWidget(self.paused_banner)
        cl.addWidget(split, 1)
        self.setCentralWidget(central)
        self.resize(1280, 820)
        self._build_bars()

        self.topology.linkSelected.connect(self.select_link)
        self.table.selectionModel().selectionChanged.connect(self._table_selected)
        self.details.rangeChanged.connect(self._range_changed)
        self.details.historyWanted.connect(self._fetch_history)
        self.timeline.eventActivated.connect(self._event_clicked)
        self.health.linkSelected.connect(self.select_link)
        events_arrived = getattr(client, "eventsArrived", None)
        if events_arrived is not None:
            events_arrived.connect(self._new_events)  # (a method: no cycle via a closure)
        look.instance().changed.connect(self.restyle)

    def _build_panes(self) -> QSplitter:
        """The topology beside the selected link's details, over the table of links beside
        the events' timeline."""
        self.topology = TopologyView()
        self.details = LinkDetails()
        self.table = LinkTable()
        self.timeline = EventTimeline(self.clock)
        self.health = HealthView(self.clock)
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
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.table)
        bottom.addWidget(self.health.beside(self.timeline))
        bottom.setSizes([700, 580])
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setSizes([560, 220])
        return split

    def _build_bars(self) -> None:
        """The status bar with the cluster summary, and the toolbar for the selected link.
        The summary is a widget, not a message: a message (a capacity test starting, an
        export) covers it for a while instead of being overwritten by the next update a
        second later. Results also stay in the link's details."""
        self.summary = QLabel("Waiting for the agent…")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.statusBar().addWidget(self.summary, 1)
        tools = self.addToolBar("Link")
        tools.setMovable(False)
        self.export_action = tools.addAction("Export history…", self._export_clicked)
        self.export_action.setToolTip(EXPORT_TIP)
        self.export_action.setEnabled(False)
        self.measure_action = tools.addAction("Measure capacity", self.measure_capacity)
        self.measure_action.setToolTip(MEASURE_TIP)
        self.measure_action.setEnabled(False)

    def release(self) -> None:
        """The app quits: let the link's charts go safely (LinkDetails.release)."""
        self.details.release()

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
        first = self.cluster is None
        self.cluster = cluster
        self.health.refresh(cluster, [ev for _t, ev in self.timeline.model.rows])
        if cluster is None:
            self.summary.setText("The local exotray agent does not answer.")
            return
        if cluster.get("nodes"):
            self.timeline.self_name = cluster["nodes"][0]["node"].get("name") or "this node"
        if first:
            self.fetch_events()  # (again) after the agent did not answer
        self.paused_banner.setVisible(bool(cluster.get("nodes", [{}])[0].get("paused")))
        nodes, self.edges = graph = self._graphs.build(cluster)  # once, for all the views
        self.topology.set_cluster(cluster, graph)
        self.table.set_cluster(cluster, nodes)
        n = len(cluster.get("nodes", []))
        self.summary.setText(
            f"{n} node{'s' if n != 1 else ''} · {len(self.edges)} link"
            f"{'s' if len(self.edges) != 1 else ''} · a link's traffic is that of the local "
            "interface that carries it")
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
        if link_id != self.link_id:
            self._history_for = None  # live rows once this link's history is in
        self._syncing = True
        try:
            self.link_id = link_id
            self.topology.select_link(link_id)
            self.table.select_link(link_id)
        finally:
            self._syncing = False
        link = self._link(link_id)
        owner = self._owner_of(link_id)
        for action, what, tip in (
                (self.export_action, "exported", EXPORT_TIP),
                (self.measure_action, "measured", MEASURE_TIP)):
            action.setEnabled(self.client is not None and owner is None)
            action.setToolTip(tip if owner is None else (
                f"This link is measured by {owner}: it can be {what} there (its agent keeps "
                f"its history), not from this node"))
        self.empty.hide()
        self.details.show()
        self.details.set_link(link, self._node_name(link_id), self._interfaces(link_id))
        if owner is not None and link_id not in self._results:
            # this agent has no history of it: the charts fill from now, and say why
            self._history_for = link_id
            self._results[link_id] = (f"Measured by {owner}, whose agent keeps this link's "
                                      "history: the charts here start now.")
        self.details.set_result(self._results.get(link_id))
        self._show_tests()

    def _owner_of(self, link_id: str) -> str | None:
        """None for a link this node measures, else the name of the node that does."""
        nodes = (self.cluster or {}).get("nodes") or [{}]
        if any(lk["id"] == link_id for lk in nodes[0].get("links", [])):
            return None
        return self._node_name(link_id) or "another node"

    def _new_events(self, events: list[dict[str, Any]]) -> None:
        self.timeline.add_events(events)
        if any(ev.get("type") == "capacity_test" for ev in events):
            self._show_tests()

    def _show_tests(self) -> None:
        """Mark the selected link's capacity tests on its charts (its capacity_test
        events in the timeline)."""
        if self.link_id is not None:
            self.details.set_tests(self.timeline.events_of("capacity_test", self.link_id))

    def _table_selected(self) -> None:
        if self._syncing:
            return
        lid = self.table.selected_link()
        if lid:
            self.select_link(lid)

    def _range_changed(self, seconds: int) -> None:
        self.range_s = seconds  # the details ask for what they need (_fetch_history)
        if self._events_span is not None and max(seconds, DEFAULT_SPAN_S) > self._events_span:
            self.fetch_events()  # the timeline covers at least what the charts show

    # -- events timeline ---------------------------------------------------------------------
    def fetch_events(self) -> None:
        """Ask the agent (off the GUI thread) for the events of the charts' range, at
        least the last DEFAULT_SPAN_S; live ones are added as the client polls them."""
        if self.client is None or not hasattr(self.client, "request"):
            return
        span = float(max(self.range_s, DEFAULT_SPAN_S))
        until = self.clock()
        since = until - span
        self._events_span = span
        self.timeline.set_loading(since, until)

        def done(result: Any, error: str | None) -> None:
            if span != self._events_span:
                return  # a newer fetch is on its way
            if result is None or not isinstance(result.get("events"), list):
                self.timeline.set_error(error or "not an events answer")
                return
            self.timeline.set_events(result["events"], since, until,
                                     bool(result.get("truncated")))
            self._show_tests()

        # "until" a little ahead: events raised while the answer travels are kept too
        self.client.request("GET", "/v1/events", done=done, params={
            "since": f"{since:.3f}", "until": f"{until + 60:.3f}", "limit": FETCH_LIMIT})

    def _event_clicked(self, event: dict[str, Any]) -> None:
        link_id = self._event_link(event)
        t = event_time(event)
        if link_id is not None and t is not None:
            self.show_link_at(link_id, t)

    def _event_link(self, event: dict[str, Any]) -> str | None:
        """The link an event is about: its link_id; for a peer's event this node's link
        to that peer (the busiest: up before down); for a port's, a link over it."""
        lid = event.get("link_id")
        if isinstance(lid, str) and lid and self._link(lid) is not None:
            return lid
        own = (self.cluster or {}).get("nodes", [{}])[0].get("links", []) if self.cluster else []
        peer, iface = event.get("peer_id"), event.get("interface")
        hits = [lk for lk in own if (peer and lk.get("peer_id") == peer)
                or (iface and lk.get("local_interface") == iface)]
        hits.sort(key=lambda lk: lk.get("state") == "down")
        return hits[0]["id"] if hits else (lid if isinstance(lid, str) and lid else None)

    def show_link_at(self, link_id: str, t: float) -> None:
        """Select `link_id` (as a click on it in the topology or the table does) and show
        its charts around time `t` (unix seconds)."""
        self.select_link(link_id)
        # the details' own request for the new link is superseded by this one: only the
        # answer to the latest history request is shown (_fetch_history)
        self.details.show_around(t)

    # -- look ------------------------------------------------------------------------------
    def restyle(self) -> None:
        """Redraw everything at once in style/theme.py's colours and fmt's units (Look.changed:
        the system's scheme or the Preferences' units changed)."""
        self.problem_banner.restyle()
        self.paused_banner.restyle()
        self.topology.restyle()
        self.details.restyle()
        self.timeline.restyle()
        self.table.restyle()
        if self.cluster is not None:
            self.set_cluster(self.cluster)

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
            self.show_result(lid, measured(result, at))

        # (address:port: the address alone may be two agents' on one host: pick_link)
        self.client.measure(f"{link['peer_address']}:{link['peer_port']}",
                            link.get("local_interface"), seconds, done)

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

    def _fetch_history(self, query: dict[str, Any]) -> None:
        """Ask the agent for the selected link's history the details want (off the GUI
        thread); only the answer to the latest request is shown."""
        link_id = self.link_id
        if link_id is None or self.client is None or self._owner_of(link_id) is not None:
            return
        self._history_serial += 1
        serial = self._history_serial

        def done(result: Any, error: str | None) -> None:
            if serial != self._history_serial or link_id != self.link_id:
                return
            if result is not None:
                self.details.set_history(result)
            self._history_for = link_id  # live updates from now on (also without history)

        self.client.history_query(link_id, query, done)

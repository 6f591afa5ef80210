"""The tray app's view of its local agent: HTTP polling off the GUI thread.

One worker thread owns a connection to the agent (localhttp: the standard library's
http.client, kept alive) and, each interval, fetches /v1/cluster and
new /v1/events; requests from the GUI (history, settings, pause) are queued to the same
thread. Results come back as Qt signals, delivered on the GUI thread. The GUI never
blocks on the network.

Only the latest cluster view is kept for the GUI: the worker replaces a view the GUI has
not taken yet instead of queueing another, so a GUI that is slow to draw a big cluster
gets the newest view when it is ready and never a backlog (issue 18 finding 4: views
emitted every second piled up in Qt's event queue, gigabytes of them). And the GUI gets
at least as long to itself between two views as the last one took to show.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from exotray.core.events import event_time
from exotray.core.paths import read_token
from exotray.core.topology import as_shown
from exotray.ui.client.localhttp import Error as HttpError
from exotray.ui.client.localhttp import LocalHttp

log = logging.getLogger(__name__)


class AgentClient(QObject):
    #: the latest /v1/cluster view, or None when the agent does not answer
    clusterChanged = Signal(object)
    #: new events (list of dicts), oldest first; never the ones from before we attached
    eventsArrived = Signal(list)
    #: (request id, result dict or None, error text or None) for queued requests
    replied = Signal(int, object, object)
    #: a view waits in `_latest` (at most one such signal is ever queued)
    _viewWaiting = Signal()

    def __init__(self, port: int, state_dir: Path, interval: float = 1.0,
                 host: str = "127.0.0.1", parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.port = port
        self.host = host
        self.base = f"http://{host}:{port}"
        self.state_dir = state_dir
        self.interval = interval
        self._jobs: queue.Queue[tuple[int, str, str, Any] | None] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._http: LocalHttp | None = None  # the worker's connection
        self._next_id = 0
        self._callbacks: dict[int, Callable[[Any, str | None], None]] = {}
        self._after: int | None = None
        #: since when this client has been without its agent (its start, or the poll that
        #: lost it): events from then on are new to the user, older ones are not
        self._detached_at = time.time()
        self.replied.connect(self._dispatch)
        self._latest_lock = threading.Lock()
        self._latest: tuple[Any] | None = None  # (view,) not yet taken by the GUI
        self._viewWaiting.connect(self._deliver)
        self.clock = time.monotonic
        self._not_before = 0.0  # no view is handed out before this time (self.clock)
        self._deferred = False
        #: views replaced before the GUI took them (for tests and diagnostics)
        self.views_skipped = 0

    # -- GUI-thread API ---------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="exotray-client",
                                            daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the worker; a request it is waiting on (a capacity test takes seconds)
        is cut short rather than waited for."""
        self._stop.set()
        self._jobs.put(None)
        http = self._http
        if http is not None:
            http.abort()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        # Requests not answered yet never will be: drop their callbacks. They close over
        # their caller (the MainWindow that owns this client); kept, they made window ->
        # client -> callback -> window a cycle that only Python's garbage collector broke,
        # deleting the window's C++ object at whatever allocation it ran, even one inside
        # the window's own paint (SIGSEGV in QPainter::restore under QGraphicsView::paintEvent).
        self._callbacks.clear()

    def request(self, method: str, path: str, body: Any = None,
                done: Callable[[Any, str | None], None] | None = None,
                control: bool = False, timeout: float = 3.0,
                params: dict[str, Any] | None = None) -> int:
        """Queue a request; `done(result, error)` runs on the GUI thread."""
        self._next_id += 1
        rid = self._next_id
        if done is not None and not self._stop.is_set():  # stopped: never answered (stop)
            self._callbacks[rid] = done
        self._jobs.put((rid, method, path, (body, control, timeout, params)))
        return rid

    def measure(self, peer: str, interface: str | None, seconds: float,
                done: Callable[[Any, str | None], None]) -> int:
        """An active capacity test (takes about 2 x seconds; polling waits meanwhile)."""
        return self.request("POST", "/v1/control/measure",
                            {"peer": peer, "interface": interface, "seconds": seconds},
                            done, control=True, timeout=2 * seconds + 30)

    def history(self, link_id: str, seconds: int,
                done: Callable[[Any, str | None], None]) -> int:
        # 3600 points: an hour at 1 s stays at full resolution (the agent's default is
        # 2000, which would average pairs of samples); link_view keeps as many.
        return self.request("GET", "/v1/history", done=done,
                            params={"link": link_id, "seconds": int(seconds), "points": 3600})

    def history_query(self, link_id: str, query: dict[str, Any],
                      done: Callable[[Any, str | None], None]) -> int:
        """/v1/history of a link with `query`'s parameters (seconds or since/until,
        points), e.g. what LinkDetails.historyWanted asks for."""
        return self.request("GET", "/v1/history", done=done, timeout=10.0,
                            params={"link": link_id, **query})

    def put_settings(self, changes: dict, done: Callable[[Any, str | None], None]) -> int:
        return self.request("PUT", "/v1/control/settings", changes, done, control=True)

    def get_settings(self, done: Callable[[Any, str | None], None]) -> int:
        return self.request("GET", "/v1/control/settings", None, done, control=True)

    def set_paused(self, paused: bool, done: Callable[[Any, str | None], None]) -> int:
        return self.request("POST", "/v1/control/pause", {"paused": paused}, done,
                            control=True)

    def _deliver(self) -> None:
        """GUI thread: hand out the latest view, but only once the GUI has had as long
        to itself as the last view took (the largest view, 8000 links, takes it a good
        part of a second: clicks and repaints get their turn between views)."""
        wait = self._not_before - self.clock()
        if wait > 0:
            if not self._deferred:
                self._deferred = True
                QTimer.singleShot(max(1, round(wait * 1000)), self._deliver_later)
            return
        with self._latest_lock:
            item, self._latest = self._latest, None
        if item is not None:
            t0 = self.clock()
            self.clusterChanged.emit(item[0])
            done = self.clock()
            self._not_before = done + (done - t0)

    def _deliver_later(self) -> None:
        self._deferred = False
        self._deliver()

    def _publish(self, view: Any) -> None:
        """Worker thread: make `view` the latest; signal only if none was waiting."""
        with self._latest_lock:
            waiting = self._latest is not None
            self.views_skipped += waiting
            self._latest = (view,)
        if not waiting:
            self._viewWaiting.emit()

    def _dispatch(self, rid: int, result: Any, error: Any) -> None:
        cb = self._callbacks.pop(rid, None)
        if cb is not None:
            cb(result, error)

    # -- worker thread ----------------------------------------------------------------
    def _run(self) -> None:
        with LocalHttp(self.host, self.port, connect_timeout=1.0, timeout=3.0) as http:
            self._http = http
            while not self._stop.is_set():
                self._poll(http)
                try:
                    job = self._jobs.get(timeout=self.interval)
                except queue.Empty:
                    continue
                while job is not None:
                    self._do(http, job)
                    try:
                        job = self._jobs.get_nowait()
                    except queue.Empty:
                        break
                if job is None and self._stop.is_set():
                    break

    def _poll(self, http: LocalHttp) -> None:
        try:
            r = http.get("/v1/cluster")
            if r.status_code != 200:
                raise ValueError(f"HTTP {r.status_code}")
            cluster = r.json()
        except HttpError:
            if self._after is not None:
                self._detached_at = time.time()
            self._after = None  # re-attach: replay only what happened since
            self._publish(None)
            return
        self._publish(as_shown(cluster))  # a paused node's links: "paused", not red
        try:
            r = http.get("/v1/events", params={"after": self._after or 0})
            if r.status_code != 200:
                raise ValueError(f"HTTP {r.status_code}")
            data = r.json()
        except HttpError:
            return
        if self._after is None:
            # attach: what happened while this app waited for its agent (the peers an
            # agent it started found in its first second) is new; what came before is not
            self._after = data["last_seq"]
            new = [e for e in data["events"]
                   if (event_time(e) or float("-inf")) >= self._detached_at]
            if new:
                self.eventsArrived.emit(new)
            return
        if data["events"]:
            self._after = data["events"][-1]["seq"]
            self.eventsArrived.emit(data["events"])
        elif data["last_seq"] < self._after:
            self._after = data["last_seq"]  # the agent restarted

    def _do(self, http: LocalHttp, job: tuple[int, str, str, Any]) -> None:
        rid, method, path, (body, control, timeout, params) = job
        headers = {}
        if control:
            token = read_token(self.state_dir)
            if token is None:
                self.replied.emit(rid, None, f"no control token in {self.state_dir}")
                return
            headers["authorization"] = f"Bearer {token}"
        try:
            r = http.request(method, path, json_body=body, headers=headers, timeout=timeout,
                             params=params)
            data = r.json()
            if r.status_code >= 400:
                self.replied.emit(rid, None, data.get("error") or f"HTTP {r.status_code}")
                return
            self.replied.emit(rid, data, None)
        except HttpError as e:
            self.replied.emit(rid, None, _why(e))


def _why(e: BaseException) -> str:
    """One line for a failed request: "timed out", "[Errno 111] Connection refused"…"""
    if isinstance(e, TimeoutError):
        return "timed out"
    return str(e) or type(e).__name__


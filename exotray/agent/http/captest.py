"""Active capacity test: a bounded bulk TCP transfer between two agents over one link.

    initiator A                               responder B (consents, or refuses)
    POST http://B:port/v1/capacity/session  ->  {"port": P, "token": T, "seconds": S}
    N TCP streams to B:P, "up":   A sends for S s, B counts and reports bytes/duration
    N TCP streams to B:P, "down": B sends for S s, A counts

B listens on P only while the session it granted is open: an ephemeral port named in
the grant (or `capacity_port` from the config, for firewalls that must name it), closed
when the test finishes or expires. The agent's port is the only one always open.

Each agent runs one test at a time (as initiator or responder): a second request is
refused with a message naming the running test. A responder accepts only while a
session it granted is open, only from the address that asked, only with the session's
token, never more connections per direction than the streams granted, and never longer
than the granted seconds; everything is bounded in time and bytes. Agents refuse all
tests with `allow_capacity_tests = false`.

Who may ask (issue 18): a LAN host only from the address of a link that answers our
probes (a known peer, `known`), at most CAPTEST_SESSIONS_PER_SOURCE sessions per
CAPTEST_WINDOW_S per address (finish-and-ask-again cannot keep us sending), and with a
cluster key set only with the request signed by it (the API checks the signature).
Loopback (a local process) is neither limited nor required to be a peer. A stream's first
line over 512 bytes, or not JSON, closes it with one log line (no traceback).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from exotray.agent.base import limits as L
from exotray.agent.base.bound_http import bound_connect
from exotray.agent.base.keys import SIGNATURE_HEADER, sign
from exotray.agent.base.throttle import Throttled
from exotray.agent.http.control import is_loopback
from exotray.core.settings import CAPTEST_SECONDS, CAPTEST_STREAMS

log = logging.getLogger(__name__)

MIN_SECONDS, MAX_SECONDS = CAPTEST_SECONDS
MIN_STREAMS, MAX_STREAMS = CAPTEST_STREAMS
#: hard byte cap per direction: 30 s at 100 Gbit/s
MAX_BYTES = int(MAX_SECONDS * 100e9 / 8)
CHUNK = 256 * 1024
#: after a test its bytes stay in the rates for an interval (sliding averages): links
#: over its interface are not judged for saturation until this long after it ended
#: (at least; the agent passes two intervals where that is longer)
MARK_AFTER_S = 3.0
_HEADER_MAX = 512


class Busy(RuntimeError):
    pass


class RateLimited(RuntimeError):
    """Too many sessions from one address in CAPTEST_WINDOW_S."""


class PortUnavailable(OSError):
    """The session's listener cannot be opened (a fixed capacity_port that is taken)."""


@dataclass
class Session:
    token: str
    peer_host: str
    seconds: float
    streams: int
    # responder-side results of the "up" direction
    up_bytes: int = 0
    up_first: float | None = None
    up_last: float | None = None
    #: connections accepted per direction ("up", "down"): at most `streams` each
    accepted: dict[str, int] | None = None


class CapacityTester:
    """Both roles of the capacity test for one agent."""

    def __init__(self, bind: str, port: int | None = None, allow: bool = True, *,
                 known: Callable[[str], bool] | None = None,
                 key: Callable[[], bytes | None] = lambda: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.bind = bind
        #: whether an address is a peer's that answers our probes (None: anyone may ask)
        self.known = known
        self.key = key
        self.clock = clock
        self._granted: dict[str, deque[float]] = {}
        self._throttled = Throttled(clock)
        #: a fixed port for the sessions' listener (config capacity_port), else ephemeral
        self.fixed_port = port or 0
        #: the open session's listening port, None between sessions
        self.port: int | None = None
        self.allow = allow
        self._busy_with: str | None = None
        self._busy_since = 0.0  # wall clock when the current test began
        self._role = "initiator"
        #: host -> when its last test ended (clock): its traffic is still in the rates
        self._ended: dict[str, float] = {}
        #: called with (host, started, ended (wall clock), role) when a test ends
        self.on_done: Callable[[str, float, float, str], None] | None = None
        self.session: Session | None = None
        self._server: asyncio.base_events.Server | None = None
        self._zero = bytes(CHUNK)
        #: "finish" calls to peers after a cancelled test (kept until done)
        self._releasing: set[asyncio.Task] = set()

    # -- lifecycle ------------------------------------------------------------------------
    async def stop(self) -> None:
        if self._releasing:
            await asyncio.wait(self._releasing, timeout=2.5)
        self._close_listener()

    async def _listen(self) -> int:
        sock = None
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.bind, self.fixed_port))
            sock.listen(2 * MAX_STREAMS)
            sock.setblocking(False)
        except OSError as e:
            if sock is not None:
                sock.close()
            raise PortUnavailable(e.errno, f"cannot open the capacity test's port "
                                  f"{self.bind}:{self.fixed_port}: {e.strerror}") from None
        try:
            self._server = await asyncio.start_server(self._accept, sock=sock,
                                                      limit=2 * _HEADER_MAX)
        except BaseException:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        return self.port

    def _close_listener(self) -> None:
        if self._server is not None:
            self._server.close()  # no new connections; running streams end by their bounds
            self._server = None
        self.port = None

    # -- responder ------------------------------------------------------------------------
    @property
    def busy_with(self) -> str | None:
        """The host a test runs with, either role (None between tests)."""
        return self._busy_with

    def _begin(self, host: str, role: str) -> None:
        self._busy_with, self._role, self._busy_since = host, role, time.time()

    def _end(self, report: bool = True) -> None:
        host, self._busy_with = self._busy_with, None
        if host is None:
            return
        now = self.clock()
        self._ended = {h: t for h, t in self._ended.items() if now - t < 60.0}  # (bounded)
        self._ended[host] = now
        if report and self.on_done is not None:
            try:
                self.on_done(host, self._busy_since, time.time(), self._role)
            except Exception:  # a report must not break the test's cleanup
                log.exception("reporting the capacity test with %s", host)

    def testing(self, after_s: float = MARK_AFTER_S) -> frozenset[str]:
        """Hosts whose test traffic is in this node's rates now: a test running, or one
        that ended within `after_s` (the rates are sliding averages)."""
        now = self.clock()
        hosts = {h for h, t in self._ended.items() if now - t < max(after_s, MARK_AFTER_S)}
        if self._busy_with is not None:
            hosts.add(self._busy_with)
        return frozenset(hosts)

    async def grant(self, peer_host: str, seconds: float, streams: int) -> dict[str, Any]:
        """Consent to a test from peer_host (HTTP API) and open the session's listener;
        raises Busy, PermissionError or PortUnavailable."""
        if not self.allow:
            raise PermissionError("this agent does not take capacity tests "
                                  "(allow_capacity_tests = false)")
        local = is_loopback(peer_host)
        if not local and self.known is not None and not self.known(peer_host):
            raise PermissionError(f"{peer_host} is not a peer of this agent that answers its "
                                  "probes")
        if self.busy_with is not None:
            raise Busy(f"a capacity test with {self.busy_with} is running; try again shortly")
        seconds = max(MIN_SECONDS, min(float(seconds), MAX_SECONDS))
        streams = max(MIN_STREAMS, min(int(streams), MAX_STREAMS))
        if not local:
            now = self.clock()
            for host in [h for h, q in self._granted.items()
                         if not q or now - q[-1] > L.CAPTEST_WINDOW_S]:
                del self._granted[host]  # forget quiet sources (the dict stays small)
            recent = self._granted.setdefault(peer_host, deque())
            while recent and now - recent[0] > L.CAPTEST_WINDOW_S:
                recent.popleft()
            if len(recent) >= L.CAPTEST_SESSIONS_PER_SOURCE:
                raise RateLimited(f"{len(recent)} capacity tests from {peer_host} in the last "
                                  f"{L.CAPTEST_WINDOW_S:g} s; try again later")
            recent.append(now)
        token = secrets.token_hex(16)
        self._begin(peer_host, "responder")
        try:
            port = await self._listen()
        except BaseException:  # port taken, out of fds, cancelled: the slot stays free
            self._end(report=False)  # (no test ran)
            self._close_listener()
            raise
        self.session = Session(token, peer_host, seconds, streams, accepted={})
        # Up, down, and slack for connection set-up: the session cannot outlive this.
        asyncio.get_running_loop().call_later(2 * seconds + 10, self._expire, token)
        return {"port": port, "token": token, "seconds": seconds, "streams": streams}

    def _expire(self, token: str) -> None:
        if self.session is not None and self.session.token == token:
            self.session = None
            self._end()
            self._close_listener()

    def finish(self, token: str) -> dict[str, Any] | None:
        """The initiator is done: report what arrived here and free the slot."""
        s = self.session
        if s is None or s.token != token:
            return None
        self.session = None
        self._end()
        self._close_listener()
        dur = (s.up_last - s.up_first) if s.up_first and s.up_last else 0.0
        return {"up_bytes": s.up_bytes, "up_seconds": dur}

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            try:
                line = await asyncio.wait_for(reader.readline(), 5.0)
            except ValueError:  # asyncio's LimitOverrunError: no newline within the limit
                line = b"x" * (_HEADER_MAX + 1)
            s = self.session
            if len(line) > _HEADER_MAX:
                self._throttled("captest-line", logging.WARNING, "capacity test: a connection "
                                "from %s sent a first line over %d bytes; closed",
                                peer[0] if peer else "?", _HEADER_MAX)
                return
            if s is None or not peer or peer[0] != s.peer_host:
                return
            try:
                hdr = json.loads(line)
            except ValueError:
                return
            if not isinstance(hdr, dict) or not secrets.compare_digest(
                str(hdr.get("token", "")), s.token
            ):
                return
            direction = hdr.get("dir")
            if direction not in ("up", "down") or s.accepted is None:
                return
            if s.accepted.get(direction, 0) >= s.streams:
                return  # no more connections than the streams granted
            s.accepted[direction] = s.accepted.get(direction, 0) + 1
            if direction == "up":
                await self._receive(reader, s)
            else:
                await self._send(writer, s.seconds)
        except (TimeoutError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _receive(self, reader: asyncio.StreamReader, s: Session) -> None:
        deadline = time.monotonic() + s.seconds + 5
        while time.monotonic() < deadline and s.up_bytes < MAX_BYTES:
            data = await asyncio.wait_for(reader.read(CHUNK), max(0.1, deadline - time.monotonic()))
            if not data:
                return
            now = time.monotonic()
            if s.up_first is None:
                s.up_first = now
            s.up_last = now
            s.up_bytes += len(data)

    async def _send(self, writer: asyncio.StreamWriter, seconds: float) -> int:
        """Zeros for `seconds` (or until MAX_BYTES), at the pace TCP allows."""
        end = time.monotonic() + seconds
        sent = 0
        while time.monotonic() < end and sent < MAX_BYTES:
            writer.write(self._zero)
            sent += CHUNK
            await writer.drain()
        return sent

    # -- initiator ------------------------------------------------------------------------
    async def run(self, http: httpx.AsyncClient, host: str, api_port: int, *,
                  seconds: float = 5.0, streams: int = 4, bind_ip: str | None = None,
                  who: str = "", sock_options: list[tuple[int, int, Any]] | None = None,
                  ) -> dict[str, Any]:
        """Test the link to host (its agent's API at api_port); Mbit/s each way.
        `sock_options` (e.g. SO_BINDTODEVICE / IP_BOUND_IF) are set on each stream's
        socket before it connects, so a link pinned to an on-link interface is measured
        through that interface, not wherever the routes would send it."""
        return await self._run(http, host, api_port, seconds=seconds, streams=streams,
                               bind_ip=bind_ip, who=who, options=sock_options or [])

    async def _run(self, http: httpx.AsyncClient, host: str, api_port: int, *,
                   seconds: float, streams: int, bind_ip: str | None,
                   who: str, options: list[tuple[int, int, Any]]) -> dict[str, Any]:
        if self.busy_with is not None:
            raise Busy(f"a capacity test with {self.busy_with} is running; try again shortly")
        self._begin(host, "initiator")
        grant: dict[str, Any] | None = None
        try:
            ask = json.dumps({"seconds": seconds, "streams": streams, "from": who}).encode()
            headers = {"content-type": "application/json"}
            if (key := self.key()) is not None:
                headers[SIGNATURE_HEADER] = sign(key, ask)
            r = await http.post(f"http://{host}:{api_port}/v1/capacity/session", content=ask,
                                headers=headers, timeout=5.0)
            body = r.json()
            if r.status_code == 409:  # the far agent is in a test (one just cancelled here
                # may not have been released there yet): busy, not a refusal
                raise Busy(f"{host} is busy: {body.get('error', r.text)}")
            if r.status_code != 200:
                raise PermissionError(f"{host} refused the test: {body.get('error', r.text)}")
            grant = body
            up = await self._streams(host, grant, "up", bind_ip, options)
            down_bytes, down_s = await self._streams(host, grant, "down", bind_ip, options)
            r = await http.post(f"http://{host}:{api_port}/v1/capacity/finish",
                                json={"token": grant["token"]}, timeout=5.0)
            far = r.json() if r.status_code == 200 else {}
            up_bytes, up_s = far.get("up_bytes", up[0]), far.get("up_seconds", up[1])
            return {
                "peer": host,
                "seconds": grant["seconds"],
                "streams": grant["streams"],
                "up_mbit_s": round(up_bytes * 8 / up_s / 1e6, 1) if up_s else None,
                "down_mbit_s": round(down_bytes * 8 / down_s / 1e6, 1) if down_s else None,
                "up_bytes": up_bytes,
                "down_bytes": down_bytes,
                "measured_at": time.time(),
            }
        except BaseException as e:
            # Cancelled (the client that asked went away) or failed (a stream could not
            # connect): free the peer's slot too, or it refuses every test until the
            # session it granted expires.
            if grant is not None and isinstance(e, asyncio.CancelledError):
                # we may not wait any more: release in the background
                task = asyncio.create_task(self._release(http, host, api_port, grant["token"]))
                self._releasing.add(task)
                task.add_done_callback(self._releasing.discard)
            elif grant is not None:
                await self._release(http, host, api_port, grant["token"])
            if isinstance(e, asyncio.CancelledError):
                log.info("capacity test with %s cancelled", host)
            raise
        finally:
            self._end()

    @staticmethod
    async def _release(http: httpx.AsyncClient, host: str, api_port: int, token: str) -> None:
        with contextlib.suppress(Exception):
            await http.post(f"http://{host}:{api_port}/v1/capacity/finish",
                            json={"token": token}, timeout=2.0)

    async def _streams(self, host: str, grant: dict[str, Any], direction: str,
                       bind_ip: str | None, options: list[tuple[int, int, Any]],
                       ) -> tuple[int, float]:
        seconds = float(grant["seconds"])
        header = (json.dumps({"token": grant["token"], "dir": direction}) + "\n").encode()
        first: list[float] = []
        last: list[float] = []
        total = [0]

        async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            if not options:
                local = (bind_ip, 0) if bind_ip else None
                return await asyncio.open_connection(host, grant["port"], local_addr=local)
            sock = await bound_connect(host, grant["port"], options, bind_ip)
            return await asyncio.open_connection(sock=sock)

        async def one() -> None:
            reader, writer = await asyncio.wait_for(connect(), 5.0)
            try:
                writer.write(header)
                if direction == "up":
                    await self._send(writer, seconds)
                    writer.write_eof()
                    await asyncio.wait_for(reader.read(), 10.0)
                else:
                    deadline = time.monotonic() + seconds + 5
                    while time.monotonic() < deadline:
                        data = await asyncio.wait_for(reader.read(CHUNK), seconds + 5)
                        if not data:
                            break
                        now = time.monotonic()
                        if not first:
                            first.append(now)
                        last[:] = [now]
                        total[0] += len(data)
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

        await asyncio.gather(*(one() for _ in range(int(grant["streams"]))))
        if direction == "up":
            return 0, 0.0
        return total[0], (last[0] - first[0]) if first and last else 0.0

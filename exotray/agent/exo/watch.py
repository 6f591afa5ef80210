"""The local exo node, polled: which of our links its inference traffic takes, whether a
better link to the same peer sits idle, and its RDMA traffic (exo/state.py reads exo's JSON,
exo/paths.py decides the slow paths, hw/rdma.py reads RDMA counters).

Off the hot path: its own loop ("exo", every `poll_period`), one short-timeout HTTP
client on loopback, JSON parsing and file/command reads in a worker thread. An absent exo
is the normal case for most users: it is a status (`exotray status` shows one line), not
a log line; a change of state is logged once (exo found, exo gone, exo unreadable — the
last at most once a minute).
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

import httpx

from exotray.agent.base.throttle import Throttled
from exotray.agent.exo import state as exo
from exotray.agent.exo.paths import LinkFacts, SlowPaths
from exotray.agent.hw import rdma
from exotray.agent.hw.hardware import Hardware
from exotray.core import capacity as cap
from exotray.core.stats import Rate

if TYPE_CHECKING:
    from exotray.agent.hw.monitor import InterfaceMonitor
    from exotray.agent.peers.links import Link

log = logging.getLogger("exotray.agent.runtime")

EXO_TIMEOUT_S = 1.0
#: the whole of one poll (/node_id and /state): httpx's timeouts are per read, so an exo
#: that drips its answer would hold the poll (and the status) for as long as it drips
POLL_DEADLINE_S = 5.0
#: exo's /state also carries tasks, downloads and model cards; more than this is refused
MAX_STATE_BYTES = 16 << 20
#: macOS RDMA status (two commands) every this many polls
MACOS_RDMA_EVERY = 10
STATUSES = ("off", "waiting", "absent", "unreadable", "ok")
REFUSED = "connection refused"


class LinkNumbers(NamedTuple):
    """A link's traffic as everything shows and judges it (snapshot, saturation
    detector, history, slow paths): the carrying interface's IP counters plus, where this
    node can read them, the RDMA port counters on that interface."""

    rate: Rate | None
    capacity: cap.Capacity
    utilization: float | None
    #: "counted" (RDMA bytes are in `rate`), "not_counted" (exo's JACCL runs over the
    #: link and this node has no RDMA counters), None (no RDMA)
    rdma: str | None
    instances: list[exo.ExoInstance]


def poll_period(interval: float) -> float:
    """Every few seconds: three agent intervals (3 s by default), within 1..10 s."""
    return min(max(3.0 * interval, 1.0), 10.0)


def linux_bridge_members(sys_net: str | Path = "/sys/class/net") -> dict[str, tuple[str, ...]]:
    """bridge -> its member ports (`/sys/class/net/BR/brif/`)."""
    out: dict[str, tuple[str, ...]] = {}
    try:
        names = os.listdir(sys_net)
    except OSError:
        return out
    for name in names:
        try:
            out[name] = tuple(sorted(os.listdir(Path(sys_net) / name / "brif")))
        except OSError:
            continue
    return out


class ExoWatch:
    def __init__(self, url: str, *, monitor: InterfaceMonitor,
                 links: Callable[[], Iterable[Link]],
                 emit: Callable[[str, dict], None], clock: Callable[[], float],
                 platform: str = sys.platform, sysfs_ib: str | Path = rdma.SYSFS_IB,
                 run: Callable[[list[str]], str | None] | None = None) -> None:
        self.url = url.rstrip("/")
        self.monitor = monitor
        self.links = links
        self.emit = emit
        self.clock = clock
        self.platform = platform
        self.sysfs_ib = sysfs_ib
        self.run = run or rdma._run
        self.status = "waiting" if self.url else "off"
        self.detail: str | None = None
        #: why `/node_id` gave no id (None: it did, or not asked yet)
        self.node_id_error: str | None = None
        self.state: exo.ExoState | None = None
        self.members: dict[str, tuple[str, ...]] = {}
        self.rdma_rates = rdma.RdmaRates()
        self.rdma_macos: dict | None = None
        self.slow = SlowPaths()
        self.polls = 0
        self._client: httpx.AsyncClient | None = None
        self._throttled = Throttled(clock)

    @property
    def enabled(self) -> bool:
        return bool(self.url)

    # -- the poll ------------------------------------------------------------------------
    async def tick(self) -> None:
        if not self.enabled:
            return
        self.polls += 1
        if self.status == "absent" and self.detail == REFUSED and refused_now(self.url):
            # nothing listens still: a plain connect said so for a fraction of what an
            # HTTP client's refused request costs (exo is absent for most users)
            self._paths()
            return
        try:
            async with asyncio.timeout(POLL_DEADLINE_S):
                node_raw, state_raw = await self._fetch()
        except TimeoutError:
            self._set("absent", f"not answering: no whole answer within {POLL_DEADLINE_S:g} s",
                      None)
        except (httpx.HTTPError, OSError) as e:
            self._set("absent", _why(e), None)
        except exo.ExoUnreadable as e:
            self._set("unreadable", str(e), None)
        else:
            # this machine's addresses tell which exo node it is when /node_id does not
            local = [a for st in self.monitor.ifaces.values() if st.vanished_at is None
                     for a in st.addresses]
            try:
                state = await asyncio.to_thread(self._read, node_raw, state_raw, local)
            except exo.ExoUnreadable as e:
                self._set("unreadable", str(e), None)
            else:
                self._set("ok", None, state)
        self._paths()

    async def _fetch(self) -> tuple[bytearray | None, bytearray]:
        if self._client is None:
            # trust_env=False: never a proxy from the environment for a loopback poll.
            # A client loads the CA bundle (tens of ms holding the GIL, which a thread does
            # not spare the loop: probe replies wait and it shows as RTT); plain http://
            # needs none, so only an https:// exo_url verifies.
            self._client = await asyncio.to_thread(
                httpx.AsyncClient, timeout=EXO_TIMEOUT_S, trust_env=False,
                verify=self.url.startswith("https://"))
        try:
            node: bytearray | None = await self._get("/node_id")
            self.node_id_error = None
        except exo.ExoUnreadable as e:  # an exo without /node_id, or failing it: /state
            node, self.node_id_error = None, str(e)  # still says a lot (exo.identify_self)
        state = await self._get("/state")
        return node, state

    async def _get(self, path: str) -> bytearray:
        assert self._client is not None
        async with self._client.stream("GET", self.url + path) as resp:
            if resp.status_code != 200:
                raise exo.ExoUnreadable(f"{path} answered HTTP {resp.status_code}")
            body = bytearray()
            async for chunk in resp.aiter_bytes():
                body += chunk
                if len(body) > MAX_STATE_BYTES:
                    raise exo.ExoUnreadable(f"{path} is over {MAX_STATE_BYTES >> 20} MiB")
            return body  # (not copied: the readers take any buffer)

    def _read(self, node_raw: bytes | bytearray | None, state_raw: bytes | bytearray,
              local: list[str] | None = None) -> exo.ExoState:
        """In a worker thread: parse exo's answers; read RDMA counters and bridge members."""
        try:
            node_id = exo.parse_node_id(node_raw) if node_raw is not None else None
            if node_raw is not None and node_id is None:
                self.node_id_error = "/node_id answered no id"
            state = exo.parse_state(exo.decode_state(state_raw), node_id, local)
        except exo.ExoUnreadable:
            raise
        except Exception as e:  # whatever exo's answer does to the reader: unreadable,
            # said once (_set), never a traceback a poll (a RecursionError, a shape the
            # readers did not expect)
            raise exo.ExoUnreadable(f"cannot be read ({type(e).__name__})") from None
        self._read_host(state)
        return state

    def _read_host(self, state: exo.ExoState) -> None:
        if self.platform.startswith("linux"):
            self.members = linux_bridge_members()
            self.rdma_rates.update(self.clock(), rdma.read_linux_counters(self.sysfs_ib))
        elif self.platform == "darwin" and self.polls % MACOS_RDMA_EVERY == 1:
            self.rdma_macos = rdma.macos_status(self.run)

    def _set(self, status: str, detail: str | None, state: exo.ExoState | None) -> None:
        old = self.status
        self.status, self.detail, self.state = status, detail, state
        if status == "ok" and old != "ok":
            assert state is not None
            log.info("exo at %s: %d instance(s)%s", self.url, len(state.instances),
                     f", {state.skipped} not understood ({'; '.join(state.skip_reasons)})"
                     if state.skipped else "")
        elif status == "absent" and old == "ok":
            log.info("exo at %s stopped answering (%s)", self.url, detail)
        elif status == "unreadable" and old != "unreadable":
            self._throttled("exo-unreadable", logging.WARNING,
                            "exo at %s: unreadable answer (%s)", self.url, detail)
        if status != "ok":
            self.rdma_rates = rdma.RdmaRates()
        # exo's speeds of this machine's Thunderbolt ports: a second source where the
        # hardware readers know none (hw/hardware.py); gone with exo
        hardware = getattr(self.monitor, "hardware", None)
        if isinstance(hardware, Hardware):
            tb = state.thunderbolt if state is not None else None
            hardware.exo_speeds = tb.speeds() if tb is not None else {}

    # -- what the links see ----------------------------------------------------------------
    def _members(self, iface: str) -> tuple[str, ...]:
        """A bridge's member ports: the hardware readers' (macOS ifconfig, Linux sysfs,
        read off the loop by the monitor), else our own Linux sysfs read."""
        hardware = getattr(self.monitor, "hardware", None)
        hw = hardware.get(iface) if hardware is not None else None
        if hw is not None and getattr(hw, "members", None):
            return tuple(hw.members)
        return self.members.get(iface, ())

    def for_link(self, peer_address: str, local_interface: str | None) -> list[exo.ExoInstance]:
        """exo's instances over the link; through a bridge whose cable to the peer is
        known, only those on that cable (as its counters and RDMA ports are the link's)."""
        carrier = self.monitor.carrier(local_interface, peer_address)
        if carrier and carrier != local_interface:
            return exo.link_instances(self.state, peer_address, carrier)
        return exo.link_instances(self.state, peer_address, local_interface, self._members)

    def rdma_for(self, local_interface: str | None, instances: list[exo.ExoInstance],
                 carrier: str | None = None) -> tuple[str | None, tuple[float, float]]:
        """("counted" | "not_counted" | None, (rx, tx) bytes/s to add to the link).
        `carrier`: the bridge member that reaches the peer, when known (then only its
        RDMA ports count, as only its IP counters do)."""
        if not local_interface:
            return None, (0.0, 0.0)
        ports = ((carrier,) if carrier and carrier != local_interface
                 else (local_interface, *self._members(local_interface)))
        rates = [self.rdma_rates.rates.get(n) for n in ports]
        rates = [x for x in rates if x is not None]
        if rates:
            return "counted", (sum(x[0] for x in rates), sum(x[1] for x in rates))
        if any(i.backend == "jaccl" for i in instances):
            return "not_counted", (0.0, 0.0)
        return None, (0.0, 0.0)

    def numbers(self, link: Link, *, track: bool = False) -> LinkNumbers:
        """`link`'s traffic, capacity and utilization, RDMA included where counted."""
        return self.numbers_at(link.local_interface, link.target[0], track=track)

    def numbers_at(self, local_interface: str | None, peer: str, *,
                   track: bool = False) -> LinkNumbers:
        """The numbers of a link to `peer` through `local_interface` (a link's own
        interface, or the one it was on before it moved)."""
        rate, capacity, util = self.monitor.numbers(local_interface, peer, track=track)
        if self.state is None and not self.rdma_rates.rates:  # no exo: most users
            return LinkNumbers(rate, capacity, util, None, [])
        insts = self.for_link(peer, local_interface)
        if not self.rdma_rates.rates:  # the common case: no RDMA counters (or no exo)
            return LinkNumbers(rate, capacity, util,
                               self.rdma_for(local_interface, insts)[0], insts)
        note, (rx, tx) = self.rdma_for(local_interface, insts,
                                       self.monitor.carrier(local_interface, peer))
        if note == "counted" and rate is not None:
            rate = Rate(rate.rx_bytes_per_s + rx, rate.tx_bytes_per_s + tx, rate.dt)
            if util is not None:  # None: capacity unknown, or a bridge's unknown member
                util = cap.utilization(rate.rx_bytes_per_s, rate.tx_bytes_per_s,
                                       capacity.bytes_per_s)
        return LinkNumbers(rate, capacity, util, note, insts)

    def rdma_state(self, local_interface: str | None, instances: list[exo.ExoInstance],
                   note: str | None, carrier: str | None = None,
                   ) -> tuple[bool | None, list[dict[str, str | None]]]:
        """Where a link's RDMA is not counted: whether RDMA is enabled here (macOS
        `rdma_ctl status`, else exo's `nodeRdmaCtl`) and the state of each RDMA device
        exo uses over the link (`ibv_devinfo`; None when it does not list it).
        `carrier`: the bridge cable that reaches the peer, when known — then only its
        devices (an instance over several cables lists each cable's), as rdma_for."""
        if note != "not_counted" or not local_interface:
            return None, []
        on_link = ({carrier} if carrier and carrier != local_interface
                   else {local_interface, *self._members(local_interface)})
        mac = self.rdma_macos or {}
        states = mac.get("ports") or {}
        # names from exo and ibv_devinfo, within what peers' schema takes (64 characters)
        devices = dict.fromkeys(d for i in instances if i.backend == "jaccl"
                                for d in i.devices if exo.rdma_port(d) in on_link
                                and len(d) <= 64)
        enabled = mac.get("enabled")
        if enabled is None and self.state is not None:
            enabled = self.state.rdma_enabled
        return enabled, [{"device": d, "state": (states.get(d) or "")[:64] or None}
                         for d in devices]  # (as many as peers take: share/views.py)

    def _paths(self) -> None:
        facts = []
        for lk in self.links():
            st = self.monitor.ifaces.get(lk.local_interface or "")
            n = self.numbers(lk)
            facts.append(LinkFacts(
                id=lk.id, peer_key=lk.peer.id or lk.peer.key, peer_name=lk.peer.name,
                state=lk.state, kind=st.kind if st else None, label=st.label if st else None,
                local_interface=lk.local_interface, capacity=n.capacity.bytes_per_s,
                utilization=n.utilization, instances=tuple(i.wire() for i in n.instances)))
        for type_, fields in self.slow.update(facts):
            self.emit(type_, fields)

    def status_dict(self, local: bool = True) -> dict[str, Any] | None:
        """The `exo` field of our snapshot (None when off): for a client not on loopback
        (`local` False) only the status, never exo's url, ids, addresses or devices."""
        if not self.enabled:
            return None
        if not local:
            return {"status": self.status}
        s = self.state
        return {
            "url": self.url,
            "status": self.status,
            "detail": self.detail,
            "node_id": s.node_id if s else None,
            # how we know which exo node we are ("node_id", "network", "ring"), or why not
            "identified_by": s.identified_by if s else None,
            "unidentified": s.unidentified if s else None,
            "node_id_error": self.node_id_error,
            "instances": [{**i.wire(), "neighbours": list(i.neighbours),
                           "devices": list(i.devices), "mine": i.mine}
                          for i in (s.instances if s else ())],
            "skipped": s.skipped if s else 0,
            "skip_reasons": list(s.skip_reasons) if s else [],
            "polls": self.polls,
            "rdma_enabled": (self.rdma_macos or {}).get("enabled",
                                                        s.rdma_enabled if s else None),
            "rdma_ports": dict((self.rdma_macos or {}).get("ports") or {}),
            **_thunderbolt(s),
        }

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _thunderbolt(s: exo.ExoState | None) -> dict[str, Any]:
    """What exo says of this node's RDMA and Thunderbolt, for health checks (`exotray
    doctor`): exo's own `nodeRdmaCtl` (the gate of its RDMA placement), its receptacles,
    its Thunderbolt Bridge service and the first bridge loop this node is in."""
    tb = s.thunderbolt if s is not None else None
    return {
        "rdma_ctl": s.rdma_enabled if s is not None else None,
        "thunderbolt_ports": [{"interface": p.interface, "rdma_device": p.rdma_device,
                               "link_speed": p.link_speed, "speed_mbit": p.speed_mbit}
                              for p in (tb.ports if tb else ())],
        "tb_bridge": None if tb is None or tb.bridge_enabled is None else {
            "enabled": tb.bridge_enabled, "exists": tb.bridge_exists,
            "service_name": tb.bridge_service},
        "tb_bridge_cycles": tb.cycles if tb else 0,
        "tb_bridge_cycle": list(tb.cycle) if tb else [],
    }


def refused_now(url: str) -> bool:
    """Whether a TCP connect to `url`'s loopback host and port is refused at once (no
    packet leaves the host; False whenever it cannot tell: another host, a name, a
    kernel that answers later, a listener)."""
    try:
        u = urlsplit(url)
        host, port = u.hostname, u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        return False
    if host == "localhost":
        host = "127.0.0.1"
    try:
        if host is None or not ipaddress.ip_address(host).is_loopback:
            return False
    except ValueError:
        return False
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                           socket.SOCK_STREAM) as s:
            s.setblocking(False)
            s.connect_ex((host, port))
            return s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == errno.ECONNREFUSED
    except OSError:
        return False


def _why(e: BaseException) -> str:
    if isinstance(e, httpx.ConnectError):
        cause: BaseException | None = e
        while cause is not None:
            if isinstance(cause, ConnectionRefusedError) or "refused" in str(cause).lower():
                return REFUSED
            cause = cause.__cause__ or cause.__context__
        return "cannot connect"
    if isinstance(e, httpx.TimeoutException):
        return f"no answer within {EXO_TIMEOUT_S:g} s"
    return type(e).__name__

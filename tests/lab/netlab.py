"""A virtual LAN of network namespaces on one machine (see shared LAB.md).

    xt<tag>br  : a namespace holding the bridge xt<tag>b0
    xt<tag>h<i>: one namespace per host, veth xt<tag><i>a (10.213.<net>.<i>/24) whose
                 peer end xt<tag><i>b is a port of the bridge
    root ns    : a monitor veth xt<tag>ma (10.213.<net>.254) on the same bridge, so the
                 test process reaches the agents' HTTP APIs directly

Names start with "xt", addresses come from 10.213.0.0/16, IPv6 is off inside the lab.
Everything is torn down by `close()` (also on failure, by the fixture), and
`cleanup_stale()` removes what a killed run left behind. Traffic generators are bounded.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import system_tools
from helpers import AgentProc

STALE = re.compile(r"^xt([0-9a-z]{3})(br|h\d+)$")
#: a file per live lab holding its creator's pid, so concurrent runs leave each other be
OWNERS = Path("/tmp/exotray-lab")
#: how long a lab test waits for what the agents do (a link down, a restarted agent seen
#: up, a saturation raised): a bound for the test, not the figure. The targets (down
#: within 3 s of a SIGKILL, saturation within 4 s of its onset, ...) are measured by
#: bench/lab_liveness.py, lab_detection.py and lab_scale.py; a test asserts that it
#: happens and prints how long it took. A loaded CI machine starts an agent in seconds.
SETTLE_S = 15.0
#: a goodbye removes a link at once; without one, the link stays listed "down" for
#: minutes (peers.PEER_FORGET_S), so this bound still tells the two apart
GOODBYE_S = 5.0


class CommandFailed(subprocess.CalledProcessError):
    """A failed command that says what it printed on stderr (CalledProcessError does not:
    a lab test failed in CI with only "returned non-zero exit status 1")."""

    def __str__(self) -> str:
        err = (self.stderr or "").strip()
        return super().__str__() + (f"\nits stderr:\n{err[-4000:]}" if err else "")


#: what building any lab runs: namespaces and veths (ip), IPv6 off (sysctl), GSO/TSO off so
#: that byte counters count frames as a physical NIC's do (ethtool); the tools a test uses
#: besides these (ping, iperf3, tc, ss, avahi) are its `needs` mark
LAB_TOOLS = ("ip", "sysctl", "ethtool")


def _program(args: tuple[str, ...] | list[str]) -> str:
    """The program a command runs: "ping" for `ip netns exec NS ping …`."""
    if len(args) > 4 and tuple(args[:3]) == ("ip", "netns", "exec"):
        return args[4]
    return args[0]


def run(*args: str, check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess:
    system_tools.require(_program(args))  # a test without its `needs` mark skips here
    done = subprocess.run(args, check=False, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode:
        raise CommandFailed(done.returncode, args, done.stdout, done.stderr)
    return done


def why_not_available() -> str | None:
    """None when the lab can be built here, else the reason it cannot."""
    if os.geteuid() != 0:
        return "lab tests need root (network namespaces); run as root or in CI"
    if (missing := system_tools.missing(*LAB_TOOLS)) is not None:
        return f"the lab {missing}"
    probe = f"xt{secrets.token_hex(2)[:3]}h0"
    r = run("ip", "netns", "add", probe, check=False)
    if r.returncode != 0:
        return f"'ip netns add' does not work here: {r.stderr.strip()}"
    run("ip", "netns", "del", probe, check=False)
    return None


def _owner_alive(tag: str) -> bool:
    try:
        pid = int((OWNERS / tag).read_text())
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cleanup_stale() -> None:
    """Remove labs whose creating process is gone (a killed run's leftovers)."""
    r = run("ip", "netns", "list", check=False)
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = STALE.match(name)
        if m and not _owner_alive(m.group(1)):
            run("ip", "netns", "del", name, check=False)
    r = run("ip", "-o", "link", "show", check=False)
    for m in re.finditer(r"^\d+: (xt([0-9a-f]{3})m[ab])[@:]", r.stdout, re.M):
        if not _owner_alive(m.group(2)):
            run("ip", "link", "del", m.group(1), check=False)


@dataclass
class Host:
    ns: str
    veth: str
    bridge_port: str
    addr: str
    procs: list[subprocess.Popen] = field(default_factory=list)

    def exec(self, *args: str, check: bool = True, timeout: float = 60) -> str:
        return run("ip", "netns", "exec", self.ns, *args, check=check, timeout=timeout).stdout

    def popen(self, *args: str, **kw) -> subprocess.Popen:
        system_tools.require(args[0])
        p = subprocess.Popen(["ip", "netns", "exec", self.ns, *args], **kw)
        self.procs.append(p)
        return p


class Lab:
    def __init__(self, n: int, net: int | None = None, monitor: bool = True,
                 tag: str | None = None) -> None:
        """`tag` (names xt<tag>...) and `net` (10.213.<net>.0/24, and <net>+1 for a
        second LAN) when a run must keep to a given prefix; random (free) otherwise."""
        existing = run("ip", "netns", "list", check=False).stdout
        # XT_LAB_TAG_PREFIX: the first letter(s) of the tag, so that engineers sharing a
        # machine each have names of their own (xt<prefix>...)
        prefix = os.environ.get("XT_LAB_TAG_PREFIX", "")[:2]

        def new_tag() -> str:
            return prefix + secrets.token_hex(2)[:3 - len(prefix)]

        self.tag = tag or new_tag()
        while tag is None and f"xt{self.tag}br" in existing:
            self.tag = new_tag()
        # XT_LAB_NET: the third octet of labs that do not choose theirs (LAN B is the next)
        env_net = os.environ.get("XT_LAB_NET")
        self.net = (net if net is not None else int(env_net) if env_net
                    else 100 + 2 * secrets.randbelow(50))
        self.br_ns = f"xt{self.tag}br"
        self.bridge = f"xt{self.tag}b0"
        self.hosts: list[Host] = []
        self.monitor_addr = f"10.213.{self.net}.254"
        self._n = n
        self._monitor = monitor  # False: no root-namespace port (the bridge has only hosts)
        self._shaped: list[str] = []

    # -- build / tear down ---------------------------------------------------------
    def __enter__(self) -> Lab:
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _build(self) -> None:
        OWNERS.mkdir(exist_ok=True)
        (OWNERS / self.tag).write_text(str(os.getpid()))
        b = self.br_ns
        run("ip", "netns", "add", b)
        run("ip", "-n", b, "link", "add", self.bridge, "type", "bridge")
        run("ip", "-n", b, "link", "set", self.bridge, "up")
        for i in range(1, self._n + 1):
            self.add_host(i)
        if not self._monitor:
            time.sleep(1.0)
            return
        # monitor port in the root namespace
        ma, mb = f"xt{self.tag}ma", f"xt{self.tag}mb"
        run("ip", "link", "add", ma, "type", "veth", "peer", "name", mb)
        run("ip", "link", "set", mb, "netns", b)
        run("ip", "-n", b, "link", "set", mb, "master", self.bridge)
        run("ip", "-n", b, "link", "set", mb, "up")
        run("ip", "addr", "add", f"{self.monitor_addr}/24", "dev", ma)
        run("ip", "link", "set", ma, "up")
        time.sleep(1.0)  # LAB.md: give links about a second before measuring

    def add_host(self, i: int) -> Host:
        ns = f"xt{self.tag}h{i}"
        a, pb = f"xt{self.tag}{i}a", f"xt{self.tag}{i}b"
        addr = f"10.213.{self.net}.{i}"
        run("ip", "netns", "add", ns)
        h = Host(ns, a, pb, addr)
        self.hosts.append(h)
        h.exec("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
               "net.ipv6.conf.default.disable_ipv6=1")
        run("ip", "-n", ns, "link", "set", "lo", "up")
        run("ip", "-n", ns, "link", "add", a, "type", "veth", "peer", "name", pb)
        run("ip", "-n", ns, "link", "set", pb, "netns", self.br_ns)
        run("ip", "-n", ns, "addr", "add", f"{addr}/24", "brd", "+", "dev", a)
        run("ip", "-n", ns, "link", "set", a, "up")
        run("ip", "-n", self.br_ns, "link", "set", pb, "master", self.bridge)
        run("ip", "-n", self.br_ns, "link", "set", pb, "up")
        run("ip", "-n", ns, "route", "add", "224.0.0.0/4", "dev", a)
        # Segment in the stack, as a physical NIC's counters see frames: with GSO a veth
        # counts the headers of a 64 KB super-packet once, ~4 % under the on-wire bytes.
        h.exec("ethtool", "-K", a, "tso", "off", "gso", "off", check=False)
        return h

    def add_lan(self, hosts: list[Host], addresses: list[str] | None = None,
                prefix: int = 24) -> list[str]:
        """A second LAN (another bridge, by default 10.213.<net+1>.0/24) joining `hosts`,
        as when a Thunderbolt cable is plugged in; returns each host's new interface name.
        `addresses` (one per host, from 10.213.0.0/16) and `prefix` give other addresses,
        e.g. the same /16 as LAN A for the ambiguous on-link case of 169.254/16 on a Mac.
        The bridge and the hosts' ends live in the lab's namespaces: close() removes them."""
        if addresses is not None and len(addresses) != len(hosts):
            raise ValueError("one address per host")
        for a in addresses or ():
            if not a.startswith("10.213."):
                raise ValueError(f"lab addresses come from 10.213.0.0/16, not {a}")
        br = f"xt{self.tag}b1"
        run("ip", "-n", self.br_ns, "link", "add", br, "type", "bridge")
        run("ip", "-n", self.br_ns, "link", "set", br, "up")
        names = []
        for k, h in enumerate(hosts):
            i = self.hosts.index(h) + 1
            c, d = f"xt{self.tag}{i}c", f"xt{self.tag}{i}d"
            addr = addresses[k] if addresses else f"10.213.{self.net + 1}.{i}"
            run("ip", "-n", h.ns, "link", "add", c, "type", "veth", "peer", "name", d)
            run("ip", "-n", h.ns, "link", "set", d, "netns", self.br_ns)
            run("ip", "-n", h.ns, "addr", "add", f"{addr}/{prefix}", "brd", "+", "dev", c)
            run("ip", "-n", h.ns, "link", "set", c, "up")
            run("ip", "-n", self.br_ns, "link", "set", d, "master", br)
            run("ip", "-n", self.br_ns, "link", "set", d, "up")
            names.append(c)
        return names

    def readdress(self, host: Host, addr: str, prefix: int) -> None:
        """Give a host's LAN-A interface another address and prefix (10.213.0.0/16 only);
        its connected route is added anew, so it comes before any added later."""
        if not addr.startswith("10.213."):
            raise ValueError(f"lab addresses come from 10.213.0.0/16, not {addr}")
        old = next(line.split()[3] for line in host.exec(
            "ip", "-o", "-4", "addr", "show", "dev", host.veth).splitlines())
        host.exec("ip", "addr", "del", old, "dev", host.veth)
        host.exec("ip", "addr", "add", f"{addr}/{prefix}", "brd", "+", "dev", host.veth)
        host.exec("ip", "route", "replace", "224.0.0.0/4", "dev", host.veth)
        host.addr = addr

    def bridge_exec(self, *args: str, check: bool = True, timeout: float = 60) -> str:
        """Run a command inside the bridge's namespace (its sysfs is that namespace's)."""
        return run("ip", "netns", "exec", self.br_ns, *args, check=check,
                   timeout=timeout).stdout

    def address_bridge(self, i: int = 253) -> str:
        """Give the bridge itself 10.213.<net>.<i>/24 (IPv6 off in its namespace), so the
        bridge's namespace is a host on the LAN that reaches the others through its ports."""
        addr = f"10.213.{self.net}.{i}"
        self.bridge_exec("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                         "net.ipv6.conf.default.disable_ipv6=1")
        run("ip", "-n", self.br_ns, "link", "set", "lo", "up")
        run("ip", "-n", self.br_ns, "addr", "add", f"{addr}/24", "brd", "+", "dev",
            self.bridge)
        return addr

    def leave_lan(self, host: Host) -> None:
        """Take a host off LAN A: its veth is deleted (its bridge port goes with it)."""
        host.exec("ip", "link", "del", host.veth)

    def iface_counters(self, host: Host, iface: str) -> dict[str, int]:
        """rx/tx bytes and packets of any interface of a host, read inside its namespace."""
        out = host.exec("sh", "-c", f"cd /sys/class/net/{iface}/statistics && "
                        "grep -H . rx_bytes tx_bytes rx_packets tx_packets")
        return {k: int(v) for k, v in (line.split(":", 1) for line in out.split())}

    def close(self) -> None:
        for h in self.hosts:
            for p in h.procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in h.procs:
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)
        for h in self.hosts:
            run("ip", "netns", "del", h.ns, check=False)
        run("ip", "link", "del", f"xt{self.tag}ma", check=False)
        run("ip", "netns", "del", self.br_ns, check=False)
        (OWNERS / self.tag).unlink(missing_ok=True)

    # -- shaping and load ------------------------------------------------------------
    def shape(self, host: Host, rate: str = "50mbit", burst: str = "32kbit",
              latency: str = "200ms") -> None:
        """tbf on the bridge port that *delivers* to host: a forwarding hop that queues
        (LAB.md: on the sender's own veth it throttles the socket instead). `latency`
        sizes its buffer: the longest a packet may wait (deep 200ms, shallow 5ms)."""
        run("ip", "netns", "exec", self.br_ns, "tc", "qdisc", "replace", "dev",
            host.bridge_port, "root", "tbf", "rate", rate, "burst", burst,
            "latency", latency)

    def iperf_server(self, host: Host) -> subprocess.Popen:
        p = host.popen("iperf3", "-s", "-1", "-B", host.addr, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10  # (until it listens: a client refused sends nothing)
        while not host.exec("ss", "-Hltn", f"src {host.addr}:5201", check=False).strip():
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"iperf3 -s on {host.ns} did not listen")
            time.sleep(0.05)
        return p

    def iperf_client(self, src: Host, dst: Host, seconds: int, *extra: str,
                     log: Path | None = None) -> subprocess.Popen:
        out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115
        return src.popen("iperf3", "-c", dst.addr, "-t", str(int(seconds)), "-C", "cubic",
                         "-J", *extra, stdout=out, stderr=subprocess.STDOUT)

    def ping(self, src: Host, dst: Host, count: int, interval: float = 0.2) -> list[float]:
        """RTTs in ms of a bounded ping."""
        out = src.exec("ping", "-n", "-c", str(count), "-i", str(interval), dst.addr,
                       check=False, timeout=count * interval + 10)
        return [float(m) for m in re.findall(r"time=([\d.]+) ms", out)]

    def counters(self, host: Host) -> tuple[int, int]:
        """(rx_bytes, tx_bytes) of a host's lab interface, read inside its namespace."""
        rx = int(host.exec("cat", f"/sys/class/net/{host.veth}/statistics/rx_bytes"))
        tx = int(host.exec("cat", f"/sys/class/net/{host.veth}/statistics/tx_bytes"))
        return rx, tx


DBUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="signal"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
  </policy>
  <includedir>/usr/share/dbus-1/system.d</includedir>
</busconfig>
"""

AVAHI_CONF = """[server]
host-name={hostname}
use-ipv4=yes
use-ipv6=no
allow-interfaces={iface}
enable-dbus=yes
ratelimit-interval-usec=0
[wide-area]
enable-wide-area=no
[publish]
publish-hinfo=no
publish-workstation=no
publish-addresses=yes
[reflector]
enable-reflector=no
"""


class Avahi:
    """avahi-daemon inside a lab host, on a private system D-Bus (LAB.md)."""

    def __init__(self, host: Host, tmp: Path) -> None:
        self.host = host
        self.dir = tmp / f"avahi-{host.ns}"
        self.dir.mkdir(parents=True, exist_ok=True)
        # the socket in a short directory of its own: a unix socket's path has at most
        # 107 bytes, and pytest's tmp_path under xdist is already ~90 long
        self._sock_dir = tempfile.mkdtemp(prefix="xtavahi-")
        self.socket = Path(self._sock_dir) / "system_bus_socket"
        self.env = {**os.environ, "DBUS_SYSTEM_BUS_ADDRESS": f"unix:path={self.socket}"}
        self._procs: list[subprocess.Popen] = []

    #: what it runs (the avahi test's `needs` mark)
    TOOLS = ("avahi-daemon", "avahi-browse", "avahi-publish", "dbus-daemon")

    def __enter__(self) -> Avahi:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self, *args: str, log: str) -> subprocess.Popen:
        out = open(self.dir / log, "wb")  # noqa: SIM115
        p = self.host.popen(*args, stdout=out, stderr=subprocess.STDOUT, env=self.env)
        self._procs.append(p)
        return p

    def _start(self) -> None:
        dconf = self.dir / "dbus.conf"
        dconf.write_text(DBUS_CONF.format(socket=self.socket))
        aconf = self.dir / "avahi-daemon.conf"
        aconf.write_text(AVAHI_CONF.format(hostname=f"{self.host.ns}-avahi",
                                           iface=self.host.veth))
        self._spawn("dbus-daemon", f"--config-file={dconf}", "--nofork", "--nopidfile",
                    log="dbus.log")
        deadline = time.monotonic() + 5
        while not self.socket.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("private dbus-daemon did not start")
            time.sleep(0.05)
        Path("/run/avahi-daemon").mkdir(parents=True, exist_ok=True)
        self._spawn("avahi-daemon", "-f", str(aconf), "--no-drop-root", "--no-chroot",
                    "--no-rlimits", "--no-proc-title", log="avahi.log")
        deadline = time.monotonic() + 10
        while "Server startup complete" not in (self.dir / "avahi.log").read_text(errors="replace"):
            if time.monotonic() > deadline or self._procs[-1].poll() is not None:
                raise RuntimeError("avahi-daemon did not start:\n"
                                   + (self.dir / "avahi.log").read_text(errors="replace"))
            time.sleep(0.05)

    def browse(self, service_type: str) -> list[dict]:
        """Resolved services from `avahi-browse -r -t -p` (IPv4)."""
        r = subprocess.run(
            ["ip", "netns", "exec", self.host.ns, "avahi-browse", "-r", "-t", "-p", service_type],
            capture_output=True, text=True, timeout=20, env=self.env,
        )
        rows = []
        for line in r.stdout.splitlines():
            f = line.split(";")
            if f[0] != "=" or len(f) < 10 or f[2] != "IPv4":
                continue
            txt = dict(
                kv.split("=", 1) for kv in re.findall(r'"([^"]*)"', f[9]) if "=" in kv
            )
            rows.append({"name": f[3], "host": f[6], "address": f[7], "port": int(f[8]),
                         "txt": txt})
        return rows

    def publish(self, name: str, service_type: str, port: int, *txt: str) -> subprocess.Popen:
        return self._spawn("avahi-publish", "-s", name, service_type, str(port), *txt,
                           log=f"publish-{name}.log")

    def close(self) -> None:
        for p in reversed(self._procs):
            if p.poll() is None:
                p.terminate()
        for p in self._procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        self._procs.clear()
        shutil.rmtree(self._sock_dir, ignore_errors=True)


class Agents:
    """Starts agents inside lab hosts; closes them all at the end."""

    def __init__(self, lab: Lab, tmp: Path) -> None:
        self.lab = lab
        self.tmp = tmp
        self.all: list[AgentProc] = []

    def start(self, host: Host, *extra: str, name: str | None = None,
              mdns: bool = True, peers: list[str] | None = None,
              port: int = 52480, all_interfaces: bool = False, **kw) -> AgentProc:
        name = name or host.ns[-2:]
        mdns_args = ["--mdns-interface", host.addr] if mdns and not all_interfaces else []
        a = AgentProc(self.tmp, name, port, list(peers or []), *mdns_args, *extra,
                      netns=host.ns, bind="0.0.0.0", host=host.addr, mdns=mdns, **kw)
        self.all.append(a)
        return a

    def close(self) -> None:
        for a in self.all:
            a.close()


@contextmanager
def lab_with_agents(tmp_path: Path, n: int, net: int | None = None,
                    ) -> Iterator[tuple[Lab, Agents]]:
    """A lab of `n` hosts (on 10.213.`net`.0/24 when given: a suite's own subnets, so that
    labs can run side by side) and its agents, all closed at the end."""
    with Lab(n, net=net) as lab:
        agents = Agents(lab, tmp_path)
        try:
            yield lab, agents
        finally:
            agents.close()

"""Interface kind classification.

Every network interface the agent reports gets a *kind* (one of :data:`KINDS`) and a human
label. The kind feeds the capacity rules (e.g. a Thunderbolt link has a generation-based
capacity) and the UI; the label is what people recognise ("Thunderbolt Bridge", "Wi-Fi").

Sources:

* Linux: ``/sys/class/net/<name>/`` (``type``, ``flags``, ``uevent`` DEVTYPE, ``wireless/``,
  ``phy80211``, ``bridge/``, ``bonding/``, ``tun_flags``, the ``device`` symlink and its
  ``driver``/``subsystem``). Interfaces can vanish while we read them, so every read is
  guarded and a missing interface is ``("other", name)``.
* macOS: ``networksetup -listallhardwareports`` (Hardware Port name -> kind), with name
  rules for the many BSD interfaces that have no hardware port (lo0, utun*, awdl0, ...).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from exotray.agent.hw.kinds_other import (  # noqa: F401 (re-exported)
    _classify_generic,
    classify_macos,
    macos_port_kind,
    mdns_by_default,
    parse_networksetup,
)

logger = logging.getLogger(__name__)

KINDS = ("ethernet", "wifi", "thunderbolt", "loopback", "virtual", "vpn", "other")

Classification = tuple[str, str]

DEFAULT_SYSFS_ROOT = "/sys/class/net"
NETWORKSETUP_CMD = ("networksetup", "-listallhardwareports")
NETWORKSETUP_TIMEOUT_S = 5.0

# include/uapi/linux/if_arp.h
_ARPHRD_ETHER = 1
_ARPHRD_INFINIBAND = 32
_ARPHRD_PPP = 512
_ARPHRD_TUNNEL = 768
_ARPHRD_TUNNEL6 = 769
_ARPHRD_LOOPBACK = 772
_ARPHRD_SIT = 776
_ARPHRD_IPGRE = 778
_ARPHRD_IP6GRE = 823
_ARPHRD_CAN = 280
_ARPHRD_NONE = 65534
_TUNNEL_TYPES = {_ARPHRD_TUNNEL, _ARPHRD_TUNNEL6, _ARPHRD_SIT, _ARPHRD_IPGRE, _ARPHRD_IP6GRE}

# include/uapi/linux/if.h, include/uapi/linux/if_tun.h
_IFF_LOOPBACK = 0x8
_IFF_TUN = 0x0001
_IFF_TAP = 0x0002

_THUNDERBOLT_NET_DRIVER = "thunderbolt-net"


# --------------------------------------------------------------------------- Linux


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except (OSError, ValueError):
        return None


def _read_int(path: str, base: int = 10) -> int | None:
    text = _read_text(path)
    if not text:
        return None
    try:
        return int(text, base)
    except ValueError:
        return None


def _isdir(path: str) -> bool:
    try:
        return os.path.isdir(path)
    except (OSError, ValueError):
        return False


def _lexists(path: str) -> bool:
    try:
        return os.path.lexists(path)
    except (OSError, ValueError):
        return False


def _link_target(path: str) -> str:
    """Resolved target of a symlink ('' when absent/unreadable); never raises."""
    try:
        if not os.path.islink(path):
            return ""
        return os.path.realpath(path)
    except (OSError, ValueError):
        return ""


def _read_uevent(path: str) -> dict[str, str]:
    text = _read_text(path)
    result: dict[str, str] = {}
    if not text:
        return result
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            result[key.strip().upper()] = value.strip()
    return result


# name prefix -> label, for VPN-ish interfaces whose name is the best evidence we have.
_LINUX_VPN_PREFIXES: tuple[tuple[str, str], ...] = (
    ("tailscale", "VPN (Tailscale)"),
    ("wg", "VPN (WireGuard)"),
    ("zt", "VPN (ZeroTier)"),
    ("nordlynx", "VPN (WireGuard)"),
    ("ppp", "VPN (PPP)"),
    ("ipsec", "VPN (IPsec)"),
    ("tun", "VPN (tun)"),
    ("tap", "VPN (tap)"),
    ("utun", "VPN (tun)"),
)

_LINUX_DEVTYPE_LABELS: dict[str, tuple[str, str]] = {
    "wireguard": ("vpn", "VPN (WireGuard)"),
    "bridge": ("virtual", "Bridge"),
    "vlan": ("virtual", "VLAN"),
    "bond": ("virtual", "Bond"),
    "team": ("virtual", "Team"),
    "vxlan": ("virtual", "VXLAN"),
    "geneve": ("virtual", "Geneve"),
    "macvlan": ("virtual", "MACVLAN"),
    "macvtap": ("virtual", "MACVTAP"),
    "ipvlan": ("virtual", "IPVLAN"),
    "vrf": ("virtual", "VRF"),
    "dsa": ("virtual", "Switch port"),
}

# name prefix -> label for device-less (software) interfaces.
_LINUX_VIRTUAL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("veth", "Virtual Ethernet"),
    ("docker", "Bridge (Docker)"),
    ("br-", "Bridge (Docker)"),
    ("virbr", "Bridge (libvirt)"),
    ("lxcbr", "Bridge (LXC)"),
    ("lxdbr", "Bridge (LXD)"),
    ("cni", "Bridge (CNI)"),
    ("flannel", "Overlay (flannel)"),
    ("cilium", "Overlay (Cilium)"),
    ("vxlan", "VXLAN"),
    ("dummy", "Dummy"),
    ("bond", "Bond"),
    ("team", "Team"),
    ("ifb", "IFB"),
    ("br", "Bridge"),
)


def _linux_name_rules(name: str) -> Classification | None:
    """Classification from the name alone, for VPN-ish names; None if nothing matches."""
    if name == "lo":
        return ("loopback", "Loopback")
    for prefix, label in _LINUX_VPN_PREFIXES:
        if name.startswith(prefix):
            return ("vpn", label)
    return None


def _linux_virtual_label(name: str) -> str:
    for prefix, label in _LINUX_VIRTUAL_PREFIXES:
        if name.startswith(prefix):
            return label
    if "." in name:  # eth0.100 style VLAN
        return "VLAN"
    return "Virtual"


def classify_linux(name: str, sysfs_root: str | Path = DEFAULT_SYSFS_ROOT) -> Classification:
    """(kind, human label) for a Linux interface, from sysfs.

    Never raises: an interface that vanished (or a sysfs that cannot be read) yields
    ``("other", name)``; partially readable data falls back to name rules.
    """
    if not name or "/" in name or name in (".", ".."):
        return ("other", name)
    base = os.path.join(os.fspath(sysfs_root), name)
    if not _isdir(base):
        return ("other", name)

    def p(*parts: str) -> str:
        return os.path.join(base, *parts)

    arp_type = _read_int(p("type"))
    flags = _read_int(p("flags"), 16)
    uevent = _read_uevent(p("uevent"))
    devtype = uevent.get("DEVTYPE", "").lower()

    # Loopback.
    if arp_type == _ARPHRD_LOOPBACK or (flags is not None and flags & _IFF_LOOPBACK):
        return ("loopback", "Loopback")

    # VPNs: WireGuard, tun/tap (Tailscale, OpenVPN, ZeroTier...), PPP.
    if devtype == "wireguard":
        return ("vpn", "VPN (WireGuard)")
    tun_flags = _read_int(p("tun_flags"), 16)
    if tun_flags is not None or _lexists(p("tun_flags")):
        by_name = _linux_name_rules(name)
        if by_name is not None and by_name[0] == "vpn" and not name.startswith(("tun", "tap")):
            return by_name  # e.g. tailscale0 / zt* are tun devices with a better label
        if tun_flags is not None and tun_flags & _IFF_TAP and not tun_flags & _IFF_TUN:
            return ("vpn", "VPN (tap)")
        return ("vpn", "VPN (tun)")
    if arp_type == _ARPHRD_PPP:
        return ("vpn", "VPN (PPP)")

    # Wireless (also ARPHRD_ETHER, so before the Ethernet check).
    if devtype == "wlan" or _isdir(p("wireless")) or _lexists(p("phy80211")):
        return ("wifi", "Wi-Fi")

    # Thunderbolt networking (thunderbolt-net / USB4 host-to-host).
    has_device = _lexists(p("device"))
    if has_device:
        driver = _link_target(p("device", "driver"))
        subsystem = _link_target(p("device", "subsystem"))
        if (
            os.path.basename(driver) == _THUNDERBOLT_NET_DRIVER
            or "thunderbolt" in driver
            or "thunderbolt" in subsystem
        ):
            return ("thunderbolt", "Thunderbolt")

    # Software interfaces identified by the kernel.
    if devtype in _LINUX_DEVTYPE_LABELS and not (has_device and devtype == "dsa"):
        return _LINUX_DEVTYPE_LABELS[devtype]
    if _isdir(p("bridge")):
        return ("virtual", "Bridge")
    if _isdir(p("bonding")):
        return ("virtual", "Bond")
    if devtype == "wwan":
        return ("other", "Mobile broadband")
    if arp_type in _TUNNEL_TYPES:
        return ("virtual", "Tunnel")

    by_name = _linux_name_rules(name)
    if by_name is not None:
        return by_name

    if not has_device:
        if arp_type is None and not uevent:
            # Nothing readable at all (vanished mid-read, or an unreadable sysfs).
            return ("other", name)
        if arp_type == _ARPHRD_NONE:
            return ("virtual", "Virtual")
        return ("virtual", _linux_virtual_label(name))

    # Physical device from here on.
    if arp_type == _ARPHRD_ETHER:
        return ("ethernet", "Ethernet")
    if arp_type == _ARPHRD_INFINIBAND:
        return ("other", "InfiniBand")
    if arp_type == _ARPHRD_CAN:
        return ("other", "CAN")
    return ("other", name)


# --------------------------------------------------------------------------- classifier


def _run_networksetup() -> str:
    completed = subprocess.run(
        list(NETWORKSETUP_CMD),
        capture_output=True,
        text=True,
        timeout=NETWORKSETUP_TIMEOUT_S,
        check=True,
    )
    return completed.stdout


class InterfaceClassifier:
    """Caches ``(kind, label)`` per interface name.

    On macOS the hardware-port table is read once (lazily) and again after
    :meth:`refresh`; ``networksetup_runner`` replaces the subprocess call in tests. If it
    fails, one warning is logged and name rules are used.
    """

    def __init__(
        self,
        platform: str = sys.platform,
        sysfs_root: str | Path = DEFAULT_SYSFS_ROOT,
        networksetup_runner: Callable[[], str] | None = None,
    ) -> None:
        self._platform = platform
        self._sysfs_root = sysfs_root
        self._runner: Callable[[], str] = networksetup_runner or _run_networksetup
        self._cache: dict[str, Classification] = {}
        self._ports: dict[str, Classification] | None = None
        self._warned = False
        self._lock = threading.Lock()
        #: bumped by refresh(); a result computed under an older one is not cached
        self._generation = 0

    @property
    def platform(self) -> str:
        return self._platform

    @property
    def blocking(self) -> bool:
        """Whether classifying may block (macOS runs `networksetup`, up to
        NETWORKSETUP_TIMEOUT_S): then the agent classifies in a worker thread, never on
        its event loop. Linux reads sysfs files, which is quick."""
        return self._platform == "darwin"

    def peek(self, name: str) -> Classification | None:
        """The cached result, or None; never blocks (not even on the lock that a worker
        thread holds while networksetup runs: one dict read is atomic)."""
        return self._cache.get(name)

    def provisional(self, name: str) -> Classification:
        """(kind, label) from the name alone, for an interface not classified yet."""
        if self._platform == "darwin":
            return classify_macos(name, {})
        return _classify_generic(name)

    def classify_all(self, names: Iterable[str]) -> None:
        """Classify and cache these names (run in a worker thread where blocking)."""
        for name in names:
            self.classify(name)

    def classify(self, name: str) -> Classification:
        cached = self._cache.get(name)
        if cached is not None:
            return cached
        with self._lock:  # one classification (one networksetup) at a time
            generation = self._generation
            cached = self._cache.get(name)
            if cached is not None:
                return cached
            result = self._classify_uncached(name, generation)
            if generation == self._generation:  # else computed before a refresh: stale
                self._cache[name] = result
            return result

    def refresh(self) -> None:
        """Forget cached results (and the macOS port table); call when interfaces change.
        Never waits: it is called on the agent's loop while a worker thread may hold the
        lock for a whole networksetup run; what that run finds is not kept."""
        self._generation += 1
        self._cache = {}
        self._ports = None

    def _classify_uncached(self, name: str, generation: int) -> Classification:
        try:
            if self._platform.startswith("linux"):
                return classify_linux(name, self._sysfs_root)
            if self._platform == "darwin":
                return classify_macos(name, self._macos_ports(generation))
            return _classify_generic(name)
        except Exception:  # defensive: classification must never break the agent
            logger.exception("classifying interface %r failed", name)
            return ("other", name)

    def _macos_ports(self, generation: int) -> dict[str, Classification]:
        ports = self._ports
        if ports is None:
            try:
                ports = parse_networksetup(self._runner())
            except Exception as exc:
                log = logger.debug if self._warned else logger.warning
                log(
                    "networksetup -listallhardwareports failed (%s); "
                    "classifying interfaces by name",
                    exc,
                )
                self._warned = True
                ports = {}
            if generation == self._generation:
                self._ports = ports
        return ports

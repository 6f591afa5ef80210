"""True 64-bit interface byte counters on macOS, from sysctl net.link.generic.ifdata.

Why not psutil: psutil reads the counters through sysctl NET_RT_IFLIST2, and xnu
(bsd/net/rtsock.c, rdar://problem/32940901) rounds ifi_ibytes/ifi_obytes down to 1 KiB
and truncates them to 32 bits for every process that is not an Apple platform binary.
At Thunderbolt 5 rates (80 Gb/s, 10 GB/s) a 32-bit byte counter wraps more than twice a
second, faster than the agent samples, so no unwrapping can recover the rate.

The IFMIB path has no such restriction: for {CTL_NET, PF_LINK, NETLINK_GENERIC,
IFMIB_IFDATA, ifindex, IFDATA_GENERAL} bsd/net/if_mib.c (make_ifmibdata) copies the
interface's if_data into a `struct if_data64` with if_data_internal_to_if_data64, no
rounding, readable by anyone (CTLFLAG_RD). Interface indexes run from 1 to
net.link.generic.system.ifcount (the kernel's if_index); gaps answer ENOENT.

Known, not fixed here: on some Skywalk-backed interfaces (btop #1850 on macOS 27,
NetFluss #31 on 26.5) the kernel's ifi_ibytes does not increase at all, whichever path
reads it. It shows as rx staying 0 (or frozen) while tx grows on an interface that
carries traffic both ways; packaging/macos/CHECKLIST.md has the check on a real Mac.

The parser (`parse_ifmibdata`) is plain bytes-in, values-out and works on any platform;
`read_counters` makes the syscalls and works only on macOS (elsewhere it raises
IfmibError). Every Mac this runs on is little-endian (x86_64, arm64), so the layouts are
declared little-endian: fixtures built from the xnu headers parse the same on any host.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import struct
import sys
from collections.abc import Callable, Sequence

# bsd/sys/socket.h, bsd/sys/sysctl.h, bsd/net/if_mib.h, bsd/net/if.h
CTL_NET = 4
PF_LINK = 18  # AF_LINK
NETLINK_GENERIC = 0
IFMIB_SYSTEM = 1
IFMIB_IFCOUNT = 1
IFMIB_IFDATA = 2
IFDATA_GENERAL = 1
IFNAMSIZ = 16

#: net.link.generic.system.ifcount: an int, the highest interface index in use
IFCOUNT_MIB = (CTL_NET, PF_LINK, NETLINK_GENERIC, IFMIB_SYSTEM, IFMIB_IFCOUNT)


def ifdata_mib(ifindex: int) -> tuple[int, ...]:
    """net.link.generic.ifdata.<ifindex>.general: one `struct ifmibdata`."""
    return (CTL_NET, PF_LINK, NETLINK_GENERIC, IFMIB_IFDATA, ifindex, IFDATA_GENERAL)


# `_pack_ = 4` is xnu's #pragma pack(4). `_layout_ = "ms"` says that the layout that
# `_pack_` implies is meant (Python 3.14 warns without it; earlier versions ignore it):
# with no bit fields, it is the same as clang's with the pragma.


class Timeval32(ctypes.LittleEndianStructure):
    _layout_ = "ms"
    _pack_ = 4
    _fields_ = [("tv_sec", ctypes.c_int32), ("tv_usec", ctypes.c_int32)]


class IfData64(ctypes.LittleEndianStructure):
    """struct if_data64 (bsd/net/if_var.h, inside #pragma pack(4)): 128 bytes."""

    _layout_ = "ms"
    _pack_ = 4
    _fields_ = [
        ("ifi_type", ctypes.c_uint8),
        ("ifi_typelen", ctypes.c_uint8),
        ("ifi_physical", ctypes.c_uint8),
        ("ifi_addrlen", ctypes.c_uint8),
        ("ifi_hdrlen", ctypes.c_uint8),
        ("ifi_recvquota", ctypes.c_uint8),
        ("ifi_xmitquota", ctypes.c_uint8),
        ("ifi_unused1", ctypes.c_uint8),
        ("ifi_mtu", ctypes.c_uint32),
        ("ifi_metric", ctypes.c_uint32),
        ("ifi_baudrate", ctypes.c_uint64),
        ("ifi_ipackets", ctypes.c_uint64),
        ("ifi_ierrors", ctypes.c_uint64),
        ("ifi_opackets", ctypes.c_uint64),
        ("ifi_oerrors", ctypes.c_uint64),
        ("ifi_collisions", ctypes.c_uint64),
        ("ifi_ibytes", ctypes.c_uint64),
        ("ifi_obytes", ctypes.c_uint64),
        ("ifi_imcasts", ctypes.c_uint64),
        ("ifi_omcasts", ctypes.c_uint64),
        ("ifi_iqdrops", ctypes.c_uint64),
        ("ifi_noproto", ctypes.c_uint64),
        ("ifi_recvtiming", ctypes.c_uint32),
        ("ifi_xmittiming", ctypes.c_uint32),
        ("ifi_lastchange", Timeval32),
    ]


class IfMibData(ctypes.LittleEndianStructure):
    """struct ifmibdata (bsd/net/if_mib.h): 180 bytes, 4-byte aligned."""

    _layout_ = "ms"
    _pack_ = 4
    _fields_ = [
        ("ifmd_name", ctypes.c_char * IFNAMSIZ),
        ("ifmd_pcount", ctypes.c_uint32),
        ("ifmd_flags", ctypes.c_uint32),
        ("ifmd_snd_len", ctypes.c_uint32),
        ("ifmd_snd_maxlen", ctypes.c_uint32),
        ("ifmd_snd_drops", ctypes.c_uint32),
        ("ifmd_filler", ctypes.c_uint32 * 4),
        ("ifmd_data", IfData64),
    ]


IFMIBDATA_SIZE = ctypes.sizeof(IfMibData)


class IfmibError(OSError):
    """The IFMIB counters cannot be read here (not macOS, or an answer we do not
    understand). An OSError, so callers that already handle sysctl failures handle it."""


#: sysctl(mib, size) -> the bytes the kernel wrote; raises OSError with the errno
Sysctl = Callable[[Sequence[int], int], bytes]


def _valid_name(raw: bytes) -> str:
    name = raw.split(b"\0", 1)[0]  # xnu's snprintf terminates it; 16 bytes is accepted
    if not name:
        raise ValueError("ifmibdata: empty interface name")
    if not all(0x21 <= b <= 0x7E for b in name):
        raise ValueError(f"ifmibdata: interface name is not printable ASCII: {name!r}")
    return name.decode("ascii")


def parse_ifmibdata(buf: bytes) -> tuple[str, int, int, int]:
    """(name, rx_bytes, tx_bytes, baudrate) from one `struct ifmibdata`.

    Raises ValueError for a buffer of the wrong size or with no readable name.
    """
    if len(buf) != IFMIBDATA_SIZE:
        raise ValueError(
            f"ifmibdata: expected {IFMIBDATA_SIZE} bytes (struct ifmibdata), got {len(buf)}"
        )
    md = IfMibData.from_buffer_copy(buf)
    name = _valid_name(bytes(buf[:IFNAMSIZ]))
    d = md.ifmd_data
    return name, int(d.ifi_ibytes), int(d.ifi_obytes), int(d.ifi_baudrate)


@functools.cache
def _libc_sysctl() -> Sysctl:
    """libc's sysctl(3) through ctypes; macOS only."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "/usr/lib/libSystem.B.dylib",
                       use_errno=True)
    fn = libc.sysctl
    fn.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_uint, ctypes.c_void_p,
                   ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p, ctypes.c_size_t]
    fn.restype = ctypes.c_int

    def call(mib: Sequence[int], size: int) -> bytes:
        name = (ctypes.c_int * len(mib))(*mib)
        buf = ctypes.create_string_buffer(size)
        oldlen = ctypes.c_size_t(size)
        if fn(name, len(mib), buf, ctypes.byref(oldlen), None, 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"sysctl {'.'.join(map(str, mib))}: {os.strerror(err)}")
        return buf.raw[: oldlen.value]

    return call


def read_counters(sysctl: Sysctl | None = None,
                  platform: str | None = None) -> dict[str, tuple[int, int]]:
    """{name: (rx_bytes, tx_bytes)} for every attached interface, 64-bit and unrounded.

    `sysctl` replaces the syscall (tests); without it this works only on macOS and
    raises IfmibError elsewhere. Raises OSError when a sysctl fails (other than ENOENT
    for an unused interface index) and IfmibError for an answer of the wrong shape.
    """
    if sysctl is None:
        platform = platform or sys.platform
        if platform != "darwin":
            raise IfmibError(errno.ENOTSUP,
                             f"IFMIB interface counters exist only on macOS, not {platform}")
        sysctl = _libc_sysctl()
    raw = sysctl(IFCOUNT_MIB, 4)
    if len(raw) != 4:
        raise IfmibError(errno.EINVAL,
                         f"net.link.generic.system.ifcount: expected 4 bytes, got {len(raw)}")
    (ifcount,) = struct.unpack("<i", raw)
    out: dict[str, tuple[int, int]] = {}
    for ifindex in range(1, ifcount + 1):
        try:
            buf = sysctl(ifdata_mib(ifindex), IFMIBDATA_SIZE)
        except OSError as e:
            if e.errno == errno.ENOENT:  # no interface at this index (gone, or never)
                continue
            raise
        if len(buf) == IFMIBDATA_SIZE and buf[0] == 0:
            # make_ifmibdata answers an all-zero struct for an interface that is
            # being detached: no name, nothing to count
            continue
        try:
            name, rx, tx, _baud = parse_ifmibdata(buf)
        except ValueError as e:
            raise IfmibError(errno.EINVAL, f"interface index {ifindex}: {e}") from e
        out[name] = (rx, tx)
    return out

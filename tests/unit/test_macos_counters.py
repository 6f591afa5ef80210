"""macOS 64-bit byte counters (sysctl IFMIB): layout, parser, reader through a fake sysctl,
and the sampler's choice between them and psutil. Runs anywhere: no syscall is made."""

from __future__ import annotations

import ctypes
import errno
import importlib.util
import logging
import struct
from pathlib import Path

import pytest

from exotray.agent.hw import macos_counters as mc
from exotray.agent.hw import sampler
from exotray.core.stats import counter_delta

FIX = Path(__file__).parent.parent / "fixtures" / "macos"


def _load_builder():
    spec = importlib.util.spec_from_file_location("build_ifmibdata", FIX / "build_ifmibdata.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# -- layout, against the numbers from the xnu headers -------------------------------------


def test_struct_sizes():
    assert ctypes.sizeof(mc.Timeval32) == 8
    assert ctypes.sizeof(mc.IfData64) == 128
    assert ctypes.sizeof(mc.IfMibData) == 180
    assert mc.IFMIBDATA_SIZE == 180
    assert ctypes.alignment(mc.IfMibData) == 4


@pytest.mark.parametrize(("field", "offset"), [
    ("ifmd_name", 0), ("ifmd_pcount", 16), ("ifmd_flags", 20), ("ifmd_snd_len", 24),
    ("ifmd_snd_maxlen", 28), ("ifmd_snd_drops", 32), ("ifmd_filler", 36), ("ifmd_data", 52),
])
def test_ifmibdata_offsets(field, offset):
    assert getattr(mc.IfMibData, field).offset == offset


@pytest.mark.parametrize(("field", "offset"), [
    ("ifi_type", 0), ("ifi_typelen", 1), ("ifi_physical", 2), ("ifi_addrlen", 3),
    ("ifi_hdrlen", 4), ("ifi_recvquota", 5), ("ifi_xmitquota", 6), ("ifi_unused1", 7),
    ("ifi_mtu", 8), ("ifi_metric", 12), ("ifi_baudrate", 16), ("ifi_ipackets", 24),
    ("ifi_ierrors", 32), ("ifi_opackets", 40), ("ifi_oerrors", 48), ("ifi_collisions", 56),
    ("ifi_ibytes", 64), ("ifi_obytes", 72), ("ifi_imcasts", 80), ("ifi_omcasts", 88),
    ("ifi_iqdrops", 96), ("ifi_noproto", 104), ("ifi_recvtiming", 112),
    ("ifi_xmittiming", 116), ("ifi_lastchange", 120),
])
def test_if_data64_offsets(field, offset):
    assert getattr(mc.IfData64, field).offset == offset


def test_byte_counters_within_ifmibdata():
    data = mc.IfMibData.ifmd_data.offset
    assert data + mc.IfData64.ifi_ibytes.offset == 116
    assert data + mc.IfData64.ifi_obytes.offset == 124
    assert mc.IfData64.ifi_ibytes.size == mc.IfData64.ifi_obytes.size == 8


def test_mibs():
    assert mc.IFCOUNT_MIB == (4, 18, 0, 1, 1)
    assert mc.ifdata_mib(7) == (4, 18, 0, 2, 7, 1)


# -- parser ------------------------------------------------------------------------------

FIXTURES = {
    "ifmibdata_en0_wifi.bin": ("en0", 3_141_592_653, 271_828_182, 1_200_000_000),
    "ifmibdata_bridge0.bin": ("bridge0", (1 << 32) + 6, 123_456_789, 10_000_000),
    "ifmibdata_en2_thunderbolt.bin": ("en2", 7_300_000_000_000, 5_123_456_789_012,
                                      80_000_000_000),
    "ifmibdata_name16.bin": ("utun1234567890ab", (1 << 64) - 1, (1 << 63) + 12345, 0),
}


@pytest.mark.parametrize(("fixture", "expected"), FIXTURES.items())
def test_parse_fixtures(fixture, expected):
    buf = (FIX / fixture).read_bytes()
    assert len(buf) == 180
    assert mc.parse_ifmibdata(buf) == expected


def test_fixtures_are_what_the_builder_writes():
    builder = _load_builder()
    assert set(builder.FIXTURES) == set(FIXTURES)
    for name, blob in builder.FIXTURES.items():
        assert (FIX / name).read_bytes() == blob, name


def test_counters_at_fixed_offsets():
    # the byte counters read straight from offsets 116 and 124 agree with the parser
    buf = (FIX / "ifmibdata_en2_thunderbolt.bin").read_bytes()
    rx, tx = struct.unpack_from("<QQ", buf, 116)
    assert (rx, tx) == (7_300_000_000_000, 5_123_456_789_012)
    assert rx > 1 << 32  # what NET_RT_IFLIST2 would have cut to 32 bits


def test_64bit_value_is_not_rounded_or_truncated():
    builder = _load_builder()
    odd = 7_300_000_000_001  # not a multiple of 1024, above 2^32
    buf = builder.ifmibdata(b"en2", ift=6, flags=0x8863, mtu=1500, baudrate=0,
                            ipackets=0, opackets=0, ibytes=odd, obytes=odd + 1023)
    assert mc.parse_ifmibdata(buf)[1:3] == (odd, odd + 1023)


def test_bytes_after_the_name_terminator_are_ignored():
    buf = bytearray((FIX / "ifmibdata_en0_wifi.bin").read_bytes())
    buf[4:16] = b"garbage!!!!!"  # after "en0\0"
    assert mc.parse_ifmibdata(bytes(buf))[0] == "en0"


@pytest.mark.parametrize("size", [0, 4, 52, 179, 181, 360])
def test_wrong_size_rejected(size):
    with pytest.raises(ValueError, match=rf"expected 180 bytes.*got {size}"):
        mc.parse_ifmibdata(b"en0".ljust(size, b"\0")[:size])


@pytest.mark.parametrize(("name", "match"), [
    (b"\0" * 16, "empty interface name"),
    (b"en\x010", "not printable ASCII"),
    (b"\xff\xfe\xfd", "not printable ASCII"),
    (b"en 0", "not printable ASCII"),
])
def test_garbled_name_rejected(name, match):
    buf = bytearray((FIX / "ifmibdata_en0_wifi.bin").read_bytes())
    buf[:16] = name.ljust(16, b"\0")
    with pytest.raises(ValueError, match=match):
        mc.parse_ifmibdata(bytes(buf))


# -- reader, through a fake sysctl -------------------------------------------------------


class FakeSysctl:
    """Answers IFCOUNT and per-index IFDATA_GENERAL like xnu; records every call."""

    def __init__(self, ifaces: dict[int, bytes], ifcount: int, errors=None) -> None:
        self.ifaces = ifaces
        self.ifcount = ifcount
        self.errors = errors or {}
        self.calls: list[tuple[tuple[int, ...], int]] = []

    def __call__(self, mib, size):
        mib = tuple(mib)
        self.calls.append((mib, size))
        if mib == mc.IFCOUNT_MIB:
            assert size == 4
            return struct.pack("<i", self.ifcount)
        assert mib[:4] == (4, 18, 0, 2) and mib[5] == 1, mib
        assert size == 180
        idx = mib[4]
        if idx in self.errors:
            raise OSError(self.errors[idx], "fake")
        if idx not in self.ifaces:
            raise OSError(errno.ENOENT, "No such file or directory")
        return self.ifaces[idx]


def _fixture(name: str) -> bytes:
    return (FIX / name).read_bytes()


def test_reader_iterates_ifcount_and_skips_gaps():
    fake = FakeSysctl({
        1: _fixture("ifmibdata_en0_wifi.bin"),
        4: _fixture("ifmibdata_bridge0.bin"),
        7: _fixture("ifmibdata_en2_thunderbolt.bin"),
        9: _fixture("ifmibdata_name16.bin"),  # above ifcount: never asked for
    }, ifcount=7)
    got = mc.read_counters(sysctl=fake)
    assert got == {
        "en0": (3_141_592_653, 271_828_182),
        "bridge0": ((1 << 32) + 6, 123_456_789),
        "en2": (7_300_000_000_000, 5_123_456_789_012),
    }
    assert fake.calls[0] == ((4, 18, 0, 1, 1), 4)
    assert [c[0] for c in fake.calls[1:]] == [(4, 18, 0, 2, i, 1) for i in range(1, 8)]


def test_reader_skips_detached_interface():
    # make_ifmibdata answers a zeroed struct for an interface that is no longer attached
    fake = FakeSysctl({1: bytes(180), 2: _fixture("ifmibdata_en0_wifi.bin")}, ifcount=2)
    assert mc.read_counters(sysctl=fake) == {"en0": (3_141_592_653, 271_828_182)}


def test_reader_with_no_interfaces():
    assert mc.read_counters(sysctl=FakeSysctl({}, ifcount=0)) == {}


def test_reader_raises_other_errors():
    fake = FakeSysctl({1: _fixture("ifmibdata_en0_wifi.bin")}, ifcount=2,
                      errors={2: errno.EPERM})
    with pytest.raises(OSError) as exc:
        mc.read_counters(sysctl=fake)
    assert exc.value.errno == errno.EPERM


def test_reader_rejects_garbled_answers():
    fake = FakeSysctl({1: _fixture("ifmibdata_en0_wifi.bin")[:100]}, ifcount=1)
    with pytest.raises(mc.IfmibError, match=r"interface index 1: .*expected 180 bytes"):
        mc.read_counters(sysctl=fake)

    def short_count(mib, size):
        return b"\x01\x00"

    with pytest.raises(mc.IfmibError, match="ifcount: expected 4 bytes, got 2"):
        mc.read_counters(sysctl=short_count)


def test_reader_off_macos_raises_clear_error():
    with pytest.raises(mc.IfmibError, match="only on macOS, not linux") as exc:
        mc.read_counters(platform="linux")
    assert isinstance(exc.value, OSError)
    assert exc.value.errno == errno.ENOTSUP


def test_64bit_counters_give_the_right_delta_where_32bit_would_not():
    # 10 GB/s for one 1 s interval: the 64-bit counters give the true delta; the same
    # readings cut to 32 bits (what NET_RT_IFLIST2 gives us) wrap twice in between
    before, after = 7_300_000_000_000, 7_310_000_000_000
    assert counter_delta(before, after) == 10_000_000_000
    assert counter_delta(before % (1 << 32), after % (1 << 32)) != 10_000_000_000


# -- sampler: which reader it uses ------------------------------------------------------


class _Nic:
    def __init__(self, rx: int, tx: int) -> None:
        self.bytes_recv, self.bytes_sent = rx, tx


@pytest.fixture
def fake_psutil(monkeypatch):
    calls = []

    def net_io_counters(pernic, nowrap):
        calls.append((pernic, nowrap))
        return {"eth0": _Nic(10, 20)}

    monkeypatch.setattr(sampler.psutil, "net_io_counters", net_io_counters)
    monkeypatch.setattr(sampler, "_ifmib_failed", None)
    return calls


def test_sampler_off_darwin_uses_psutil(monkeypatch, fake_psutil):
    def no_ifmib(*a, **k):
        raise AssertionError("IFMIB reader called off macOS")

    monkeypatch.setattr(sampler.macos_counters, "read_counters", no_ifmib)
    # (Linux reads /proc/net/dev itself, as psutil does: tests/unit/test_proc_net_dev.py)
    assert sampler.read_counters(platform="freebsd") == {"eth0": (10, 20)}
    assert fake_psutil == [(True, False)]  # psutil's own unwrapping stays off


def test_sampler_on_darwin_uses_ifmib(monkeypatch, fake_psutil):
    monkeypatch.setattr(sampler.macos_counters, "read_counters",
                        lambda: {"en2": (7_300_000_000_000, 1)})
    assert sampler.read_counters(platform="darwin") == {"en2": (7_300_000_000_000, 1)}
    assert fake_psutil == []


def test_sampler_falls_back_to_psutil_once(monkeypatch, fake_psutil, caplog):
    attempts = []

    def failing():
        attempts.append(1)
        raise OSError(errno.EPERM, "sysctl 4.18.0.1.1: Operation not permitted")

    monkeypatch.setattr(sampler.macos_counters, "read_counters", failing)
    with caplog.at_level(logging.WARNING, logger=sampler.__name__):
        first = sampler.read_counters(platform="darwin")
        second = sampler.read_counters(platform="darwin")
    assert first == second == {"eth0": (10, 20)}
    assert attempts == [1]  # not tried again
    warnings = [r for r in caplog.records if r.name == sampler.__name__]
    assert len(warnings) == 1
    assert "Operation not permitted" in warnings[0].getMessage()
    assert "psutil" in warnings[0].getMessage()
    assert "Operation not permitted" in sampler._ifmib_failed

"""Capacity precedence, interface-kind rules and utilization (exotray.core.capacity)."""

from __future__ import annotations

import pytest

from exotray.core.capacity import MBIT, SOURCES, Capacity, kind_rule_mbit, resolve, utilization

GBIT = 1000 * MBIT


def test_mbit_is_bytes_per_second() -> None:
    assert MBIT == 125_000
    assert SOURCES == ("override", "measured", "nic", "kind", "unknown")


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({}, Capacity(None, "unknown"), id="nothing-known"),
        pytest.param(
            {"override_mbit": 100, "measured_mbit": 200, "nic_speed_mbit": 300, "kind_mbit": 400},
            Capacity(100 * MBIT, "override"),
            id="override-beats-all",
        ),
        pytest.param(
            {"measured_mbit": 200, "nic_speed_mbit": 300, "kind_mbit": 400},
            Capacity(200 * MBIT, "measured"),
            id="measured-beats-nic-and-kind",
        ),
        pytest.param(
            {"nic_speed_mbit": 300, "kind_mbit": 400},
            Capacity(300 * MBIT, "nic"),
            id="nic-beats-kind",
        ),
        pytest.param({"kind_mbit": 40_000}, Capacity(40 * GBIT, "kind"), id="kind-only"),
        pytest.param({"override_mbit": 2500}, Capacity(2.5 * GBIT, "override"), id="override-only"),
        pytest.param(
            {"override_mbit": 0, "measured_mbit": 200},
            Capacity(200 * MBIT, "measured"),
            id="zero-override-skipped",
        ),
        pytest.param(
            {"override_mbit": -1, "measured_mbit": None, "nic_speed_mbit": 1000},
            Capacity(1000 * MBIT, "nic"),
            id="negative-override-and-none-measured-skipped",
        ),
        pytest.param(
            {"nic_speed_mbit": 0, "kind_mbit": 866.7},
            Capacity(866.7 * MBIT, "kind"),
            id="nic-speed-zero-means-unknown",
        ),
        pytest.param(
            {"override_mbit": None, "measured_mbit": 0, "nic_speed_mbit": -5, "kind_mbit": 0},
            Capacity(None, "unknown"),
            id="all-nonpositive-unknown",
        ),
        pytest.param(
            {"measured_mbit": 0.5},
            Capacity(0.5 * MBIT, "measured"),
            id="fractional-mbit",
        ),
    ],
)
def test_resolve_precedence(kwargs: dict, expected: Capacity) -> None:
    got = resolve(**kwargs)
    assert got.source == expected.source
    if expected.bytes_per_s is None:
        assert got.bytes_per_s is None
    else:
        assert got.bytes_per_s == pytest.approx(expected.bytes_per_s)


@pytest.mark.parametrize(
    ("kind", "tb_gen", "wifi", "expected"),
    [
        pytest.param("thunderbolt", 3, None, 40_000.0, id="tb3-40g"),
        pytest.param("thunderbolt", 4, None, 40_000.0, id="tb4-40g"),
        pytest.param("thunderbolt", 5, None, 80_000.0, id="tb5-80g"),
        pytest.param("thunderbolt", None, None, None, id="tb-unknown-generation"),
        pytest.param("thunderbolt", 2, None, 20_000.0, id="tb2-20g"),
        pytest.param("thunderbolt", 6, None, None, id="unknown-generation-6"),
        pytest.param("thunderbolt", 6, None, None, id="tb-future-generation"),
        pytest.param("wifi", None, 866.7, 866.7, id="wifi-rate"),
        pytest.param("wifi", None, 1201, 1201.0, id="wifi-int-rate-as-float"),
        pytest.param("wifi", None, None, None, id="wifi-rate-unreadable"),
        pytest.param("wifi", None, 0, None, id="wifi-rate-zero"),
        pytest.param("wifi", None, -54, None, id="wifi-rate-negative"),
        pytest.param("wifi", 4, None, None, id="wifi-ignores-tb-generation"),
        pytest.param("thunderbolt", None, 866.7, None, id="tb-ignores-wifi-rate"),
        pytest.param("ethernet", 4, 866.7, None, id="ethernet-none"),
        pytest.param("loopback", None, None, None, id="loopback-none"),
        pytest.param("virtual", None, None, None, id="virtual-none"),
        pytest.param("vpn", None, None, None, id="vpn-none"),
        pytest.param("other", None, None, None, id="other-none"),
    ],
)
def test_kind_rule_mbit(
    kind: str, tb_gen: int | None, wifi: float | None, expected: float | None
) -> None:
    got = kind_rule_mbit(kind, thunderbolt_generation=tb_gen, wifi_rate_mbit=wifi)
    assert got == expected
    if got is not None:
        assert isinstance(got, float)


@pytest.mark.parametrize(
    ("rx", "tx", "cap", "expected"),
    [
        pytest.param(50.0, 10.0, 100.0, 0.5, id="rx-dominates"),
        pytest.param(10.0, 90.0, 100.0, 0.9, id="tx-dominates"),
        pytest.param(0.0, 0.0, 100.0, 0.0, id="idle"),
        pytest.param(150.0, 0.0, 100.0, 1.5, id="over-capacity-not-clamped"),
        pytest.param(50.0, 10.0, None, None, id="capacity-unknown"),
        pytest.param(50.0, 10.0, 0.0, None, id="capacity-zero"),
        pytest.param(None, 10.0, 100.0, None, id="rx-unknown"),
        pytest.param(10.0, None, 100.0, None, id="tx-unknown"),
        pytest.param(None, None, None, None, id="all-unknown"),
        pytest.param(125_000_000.0, 0.0, 1000 * MBIT, 1.0, id="line-rate-gigabit"),
    ],
)
def test_utilization(
    rx: float | None, tx: float | None, cap: float | None, expected: float | None
) -> None:
    got = utilization(rx, tx, cap)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)

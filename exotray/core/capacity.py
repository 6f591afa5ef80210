"""Which capacity a link has, and where that number came from.

Order (first known wins): user override > measured by an active test > NIC-reported
speed > interface-kind rule > unknown. Unknown stays unknown: utilization is then None
and no saturation is ever claimed.
"""

from __future__ import annotations

from dataclasses import dataclass

MBIT = 1_000_000 / 8  # bytes per second in one Mbit/s

SOURCES = ("override", "measured", "nic", "kind", "unknown")

#: Nominal link rate of Thunderbolt generations, Mbit/s.
THUNDERBOLT_MBIT = {1: 10_000, 2: 20_000, 3: 40_000, 4: 40_000, 5: 80_000}


@dataclass(frozen=True)
class Capacity:
    bytes_per_s: float | None
    source: str


def kind_rule_mbit(
    kind: str, thunderbolt_generation: int | None = None, wifi_rate_mbit: float | None = None,
    thunderbolt_mbit: float | None = None,
) -> float | None:
    """Capacity a kind of interface implies, where the OS told us enough to know it: a
    Thunderbolt link at its negotiated rate (else its generation's nominal one), Wi-Fi at
    its current transmit (PHY) rate."""
    if kind == "thunderbolt" and thunderbolt_mbit and thunderbolt_mbit > 0:
        return float(thunderbolt_mbit)
    if kind == "thunderbolt" and thunderbolt_generation in THUNDERBOLT_MBIT:
        return float(THUNDERBOLT_MBIT[thunderbolt_generation])
    if kind == "wifi" and wifi_rate_mbit and wifi_rate_mbit > 0:
        return float(wifi_rate_mbit)
    return None


def resolve(
    *,
    override_mbit: float | None = None,
    measured_mbit: float | None = None,
    nic_speed_mbit: float | None = None,
    kind_mbit: float | None = None,
) -> Capacity:
    for source, mbit in (
        ("override", override_mbit),
        ("measured", measured_mbit),
        ("nic", nic_speed_mbit),
        ("kind", kind_mbit),
    ):
        if mbit is not None and mbit > 0:
            return Capacity(mbit * MBIT, source)
    return Capacity(None, "unknown")


def utilization(
    rx: float | None, tx: float | None, capacity_bytes_per_s: float | None
) -> float | None:
    """max(rx, tx) / capacity, or None when the capacity or the rates are unknown."""
    if not capacity_bytes_per_s or capacity_bytes_per_s <= 0 or rx is None or tx is None:
        return None
    return max(rx, tx) / capacity_bytes_per_s

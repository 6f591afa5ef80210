"""Human formatting of rates, times and ratios, shared by the CLI and the UI."""

from __future__ import annotations

DASH = "–"


def rate(bytes_per_s: float | None) -> str:
    """Decimal units, as network people read them: 1.2 GB/s, 12.3 MB/s, 850 kB/s.

    The unit is chosen after rounding, so 999,999 B/s reads "1.0 MB/s", not "1000 kB/s".
    """
    if bytes_per_s is None:
        return DASH
    if round(bytes_per_s) < 1000:
        return f"{bytes_per_s:.0f} B/s"
    for unit, scale in (("kB/s", 1e3), ("MB/s", 1e6), ("GB/s", 1e9)):
        value = bytes_per_s / scale
        if unit == "GB/s" or round(value) < 1000:
            return _num(value, unit)
    raise AssertionError("unreachable")


def _num(value: float, unit: str) -> str:
    """One decimal below 100, none from 100 on, deciding after rounding."""
    if round(value, 1) < 100:
        return f"{value:.1f} {unit}"
    return f"{value:.0f} {unit}"


def ms(value: float | None) -> str:
    if value is None:
        return DASH
    if round(value, 2) < 1:
        return f"{value:.2f} ms"
    if round(value, 1) < 100:
        return f"{value:.1f} ms"
    return f"{value:.0f} ms"


def percent(ratio: float | None) -> str:
    return DASH if ratio is None else f"{ratio * 100:.0f} %"


def capacity(bytes_per_s: float | None) -> str:
    if bytes_per_s is None:
        return "unknown"
    mbit = bytes_per_s * 8 / 1e6
    return f"{mbit / 1000:g} Gbit/s" if mbit >= 1000 else f"{mbit:g} Mbit/s"

"""Human formatting of rates, times and ratios, shared by the CLI and the UI."""

from __future__ import annotations

DASH = "–"


def rate(bytes_per_s: float | None) -> str:
    """Decimal units, as network people read them: 1.2 GB/s, 12.3 MB/s, 850 kB/s."""
    if bytes_per_s is None:
        return DASH
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bytes_per_s >= scale:
            value = bytes_per_s / scale
            return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{bytes_per_s:.0f} B/s"


def ms(value: float | None) -> str:
    if value is None:
        return DASH
    if value < 1:
        return f"{value:.2f} ms"
    if value < 100:
        return f"{value:.1f} ms"
    return f"{value:.0f} ms"


def percent(ratio: float | None) -> str:
    return DASH if ratio is None else f"{ratio * 100:.0f} %"


def capacity(bytes_per_s: float | None) -> str:
    if bytes_per_s is None:
        return "unknown"
    mbit = bytes_per_s * 8 / 1e6
    return f"{mbit / 1000:g} Gbit/s" if mbit >= 1000 else f"{mbit:g} Mbit/s"

"""Human formatting of rates, times and ratios, shared by the CLI and the UI."""

from __future__ import annotations

DASH = "–"

#: the unit systems a rate can be shown in (the tray app's Preferences, "units")
UNITS = ("bytes", "bits")
_units = "bytes"


def set_units(units: str) -> None:
    """Show every rate (rate, capacity_rate, capacity_other) in bytes/s or in bits/s.

    One switch for the whole process, so that no caller has to pass it along: the tray
    app sets it from its Preferences, the command line from --units or the same
    preference in the config file."""
    global _units
    if units not in UNITS:
        raise ValueError(f"units must be one of {', '.join(UNITS)}, not {units!r}")
    _units = units


def units() -> str:
    """The unit system rates are shown in: "bytes" or "bits"."""
    return _units


def rate_unit() -> str:
    """The base unit of a rate as shown: "B/s" or "bit/s" (chart axes add the prefix)."""
    return "bit/s" if _units == "bits" else "B/s"


def rate(bytes_per_s: float | None) -> str:
    """Decimal units, as network people read them: 1.2 GB/s, 12.3 MB/s, 850 kB/s
    (9.6 Gbit/s, 98.4 Mbit/s, 6.8 kbit/s when the units are bits).

    The unit is chosen after rounding, so 999,999 B/s reads "1.0 MB/s", not "1000 kB/s".
    """
    if bytes_per_s is None:
        return DASH
    bits = _units == "bits"
    value, units = (bytes_per_s * 8, _RATE_BITS) if bits else (bytes_per_s, _RATE_BYTES)
    if round(value) < 1000:
        return f"{value:.0f} {units[0]}"
    for unit, scale in zip(units[1:], (1e3, 1e6, 1e9), strict=True):
        scaled = value / scale
        if unit == units[-1] or round(scaled) < 1000:
            return _num(scaled, unit)
    raise AssertionError("unreachable")


_RATE_BYTES = ("B/s", "kB/s", "MB/s", "GB/s")
_RATE_BITS = ("bit/s", "kbit/s", "Mbit/s", "Gbit/s")


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


def _sig3(value: float, units: tuple[tuple[str, float], ...]) -> str:
    """`value` in the largest unit that keeps it under 1000, at 3 significant digits
    (trailing zeros dropped: 6.25, 50, 835), the unit chosen after rounding."""
    for i, (unit, scale) in enumerate(units):
        scaled = float(f"{value / scale:.3g}")
        if scaled < 1000 or i == len(units) - 1:
            return f"{scaled:g} {unit}" if scaled < 1e6 else f"{scaled:.0f} {unit}"
    raise AssertionError("unreachable")


_BYTE_UNITS = (("B/s", 1.0), ("kB/s", 1e3), ("MB/s", 1e6), ("GB/s", 1e9), ("TB/s", 1e12))
_BIT_UNITS = (("bit/s", 1.0), ("kbit/s", 1e3), ("Mbit/s", 1e6), ("Gbit/s", 1e9),
              ("Tbit/s", 1e12))


def capacity_rate(bytes_per_s: float | None) -> str:
    """A capacity in the rates' unit, at 3 significant digits: 6.25 MB/s, 835 MB/s,
    1.25 GB/s (50 Mbit/s, 10 Gbit/s in bits); "unknown" when it is not known."""
    if bytes_per_s is None or bytes_per_s <= 0:
        return "unknown"
    if _units == "bits":
        return bit_rate(bytes_per_s)
    return _sig3(bytes_per_s, _BYTE_UNITS)


def capacity_other(bytes_per_s: float | None) -> str:
    """The capacity in the other unit system than the rates': its link speed
    (10 Gbit/s) beside bytes/s, its bytes/s (1.25 GB/s) beside bits/s."""
    if bytes_per_s is None or bytes_per_s <= 0:
        return "unknown"
    if _units == "bits":
        return _sig3(bytes_per_s, _BYTE_UNITS)
    return bit_rate(bytes_per_s)


def bit_rate(bytes_per_s: float | None) -> str:
    """A capacity as a link speed, at 3 significant digits: 50 Mbit/s, 6.68 Gbit/s."""
    if bytes_per_s is None or bytes_per_s <= 0:
        return "unknown"
    return _sig3(bytes_per_s * 8, _BIT_UNITS)


def speed(mbit: float | None) -> str:
    """A link speed or a measured capacity given in Mbit/s, in the rates' unit at 3
    significant digits: 10 Gbit/s or 1.25 GB/s; "unknown" when it is not known."""
    return capacity_rate(mbit * 1e6 / 8 if mbit else None)


def utilization(ratio: float | None, capacity_bytes_per_s: float | None) -> str:
    """Utilization as a percentage; DASH when the capacity (so the ratio) is unknown,
    "< 1 %" for traffic that is there but rounds to nothing."""
    if ratio is None or not capacity_bytes_per_s or capacity_bytes_per_s <= 0:
        return DASH
    if 0 < ratio < 0.005:
        return "< 1 %"
    return percent(ratio)


def mbit(value: float | None) -> str:
    """A negotiated link speed given in Mbit/s, as sold: 40 Gb/s, 2.5 Gb/s, 100 Mb/s."""
    if not value or value <= 0:
        return "unknown"
    return f"{value / 1000:g} Gb/s" if value >= 1000 else f"{value:g} Mb/s"

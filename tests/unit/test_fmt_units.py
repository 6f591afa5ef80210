"""fmt's unit switch (issue 15, "units: bytes/s or bits/s"): every rate follows it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from exotray.core import fmt


@pytest.fixture
def bits() -> Iterator[None]:
    fmt.set_units("bits")
    yield
    fmt.set_units("bytes")


@pytest.mark.parametrize(("value", "expected"), [
    (None, fmt.DASH),
    (0, "0 bit/s"),
    (100, "800 bit/s"),
    (125, "1.0 kbit/s"),
    (850e3, "6.8 Mbit/s"),
    (12.3e6, "98.4 Mbit/s"),
    (124_999, "1.0 Mbit/s"),  # the unit is chosen after rounding
    (1.2e9, "9.6 Gbit/s"),
    (20e9, "160 Gbit/s"),
])
def test_rates_in_bits(bits: None, value: float | None, expected: str) -> None:
    assert fmt.rate(value) == expected


def test_capacity_in_bits_and_its_other_unit(bits: None) -> None:
    assert fmt.units() == "bits"
    assert fmt.rate_unit() == "bit/s"
    assert fmt.capacity_rate(1.25e9) == "10 Gbit/s"
    assert fmt.capacity_other(1.25e9) == "1.25 GB/s"
    assert fmt.bit_rate(6.25e6) == "50 Mbit/s"  # a link speed stays a link speed
    assert fmt.capacity_rate(None) == "unknown"


def test_bytes_is_the_default_and_unchanged() -> None:
    assert fmt.units() == "bytes"
    assert fmt.rate_unit() == "B/s"
    assert fmt.rate(12.3e6) == "12.3 MB/s"
    assert fmt.capacity_rate(1.25e9) == "1.25 GB/s"
    assert fmt.capacity_other(1.25e9) == "10 Gbit/s"


def test_unknown_units_are_refused() -> None:
    with pytest.raises(ValueError, match="units must be one of"):
        fmt.set_units("furlongs")
    assert fmt.units() == "bytes"

import csv
import io
import json
from pathlib import Path

import pytest

from exotray.core.export import parse_since, to_csv, to_json

HIST = json.loads((Path(__file__).parent.parent / "qt" / "fixtures" / "history.json").read_text())


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("10m", 600),
                                              ("1h", 3600), (" 2.5m ", 150)])
def test_parse_since(text, seconds):
    assert parse_since(text) == seconds


@pytest.mark.parametrize("text", ["", "10x", "-5m", "2h", "0", "ten"])
def test_parse_since_rejects(text):
    with pytest.raises(ValueError):
        parse_since(text)


def test_csv_has_units_and_every_row():
    table = list(csv.reader(io.StringIO(to_csv(HIST))))
    assert table[0] == ["time_utc", "unix_time_s", "rtt_median_ms", "rtt_min_ms", "rtt_max_ms",
                        "rx_bytes_per_s", "tx_bytes_per_s", "utilization_ratio", "state"]
    assert len(table) == len(HIST["t"]) + 1
    assert table[1][0].endswith("Z") and float(table[1][1]) == HIST["t"][0]
    assert table[-1][8] == HIST["state"][-1]


def test_json_rows_and_units():
    data = json.loads(to_json(HIST))
    assert data["link"] == HIST["link"] and data["units"]["rtt_ms"] == "ms"
    assert len(data["rows"]) == len(HIST["t"])
    assert data["rows"][-1]["tx_bytes_per_s"] == HIST["tx_bytes_per_s"][-1]

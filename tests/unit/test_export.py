import csv
import io
import json
from pathlib import Path

import pytest

from exotray.core.export import parse_since, to_csv, to_json

HIST = json.loads((Path(__file__).parent.parent / "qt" / "fixtures" / "history.json").read_text())


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("10m", 600),
                                              ("1h", 3600), (" 2.5m ", 150),
                                              ("2h", 7200), ("30d", 30 * 86400)])
def test_parse_since(text, seconds):
    assert parse_since(text) == seconds


@pytest.mark.parametrize("text", ["", "10x", "-5m", "4000d", "0", "ten", "1w"])
def test_parse_since_rejects(text):
    with pytest.raises(ValueError):
        parse_since(text)


def test_csv_has_units_and_every_row():
    table = list(csv.reader(io.StringIO(to_csv(HIST))))
    assert table[0] == ["time_utc", "unix_time_s", "rtt_median_ms", "rtt_min_ms", "rtt_max_ms",
                        "rx_bytes_per_s", "tx_bytes_per_s", "utilization_ratio", "state",
                        "flow_rx_bytes_per_s", "flow_tx_bytes_per_s", "loss_ratio"]
    assert len(table) == len(HIST["t"]) + 1
    assert table[1][0].endswith("Z") and float(table[1][1]) == HIST["t"][0]
    assert table[-1][8] == HIST["state"][-1]


def test_json_rows_and_units():
    data = json.loads(to_json(HIST))
    assert data["link"] == HIST["link"] and data["units"]["rtt_ms"] == "ms"
    assert len(data["rows"]) == len(HIST["t"])
    assert data["rows"][-1]["tx_bytes_per_s"] == HIST["tx_bytes_per_s"][-1]


@pytest.mark.parametrize(("value", "cell"), [
    ('=HYPERLINK("http://evil.example/","Click")', '\'=HYPERLINK("http://evil.example/","Click")'),
    ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
    ("-2+3", "'-2+3"),
    ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
    ("\t=1", "'\t=1"),
    ("studio-2", "studio-2"),
    ("up", "up"),
    (-0.5, -0.5),  # numbers stay numbers
    (12.5, 12.5),
    (None, ""),
])
def test_csv_cell_never_starts_a_formula(value, cell):
    from exotray.core.export import csv_cell

    assert csv_cell(value) == cell


def test_text_from_elsewhere_in_the_history_is_not_a_formula_in_the_csv():
    """Every cell goes through csv_cell: a state (or any text) like a formula is quoted."""
    hist = {"t": [1.0, 2.0], "rtt_ms": [0.4, None], "state": ["=cmd|' /C calc'!A0", "up"],
            "rx_bytes_per_s": ["@SUM(1+1)*cmd", 5.0]}
    table = list(csv.reader(io.StringIO(to_csv(hist))))
    assert table[1][8] == "'=cmd|' /C calc'!A0" and table[2][8] == "up"
    assert table[1][5] == "'@SUM(1+1)*cmd" and table[2][5] == "5.0"
    assert table[1][2] == "0.4" and table[2][2] == ""
    for row in table[1:]:
        assert not any(cell.startswith(("=", "+", "-", "@")) for cell in row)

#!/usr/bin/env python3
"""Rewrite docs/reference.md's table of config keys from the settings model
(exotray.core.configfile.reference_table); tests/unit/test_config_file.py holds the two
equal. `--check`: only say whether they differ (exit status 1 if they do)."""

from __future__ import annotations

import sys
from pathlib import Path

from exotray.core.configfile import reference_table

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference.md"
HEADER = "| key | option | default | what |"


def main() -> int:
    text = REFERENCE.read_text()
    start = text.index(HEADER, text.index("## Config file"))
    end = text.index("\n\n", start) + 1
    table = reference_table()
    if text[start:end] == table:
        print(f"{REFERENCE}: the table of config keys is the model's")
        return 0
    if "--check" in sys.argv[1:]:
        print(f"{REFERENCE}: the table of config keys differs from the model's")
        return 1
    REFERENCE.write_text(text[:start] + table + text[end:])
    print(f"{REFERENCE}: table of config keys rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())

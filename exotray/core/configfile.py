"""The config file as its user wrote it.

- `check`: its settings and each wrong key, with its line and the key it most likely
  means (`no_mdns = true`: did you mean `mdns = false`?);
- `read`: the settings it gives, or a SettingsError naming the file, the line and the key;
- `update`: only the keys whose values changed are written, in place: comments, order,
  spacing and every other key stay as written (tomlkit), no default is added, and the
  file is replaced atomically, keeping its mode (a symlinked file stays a symlink);
- `reference_table`: docs/reference.md's table of config keys, made from the settings
  model (a test holds the two equal: regenerate it with scripts/config_keys.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from exotray.core import paths
from exotray.core.settings import (
    Settings,
    SettingsError,
    from_mapping,
    load_file,
    problems,
    suggestion,
)


@dataclass(frozen=True)
class Problem:
    """A wrong key of a config file: its line (1-based; None if not found), why, and for an
    unknown key the setting it most likely means, with its value (`replacement`)."""

    key: str
    line: int | None
    message: str
    replacement: tuple[str, Any] | None = None


#: a top-level key (bare or quoted, maybe dotted: `capacity.en0 = 1`) or a table header
_KEY = re.compile(r"""^\s*(?P<key>[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')\s*[.=]""")
_HEADER = re.compile(r"""^\s*\[\[?\s*(?P<key>[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')""")


def key_lines(text: str) -> dict[str, int]:
    """Where each top-level key of a TOML text is first written (1-based lines): its
    `key = …` line, or its table's `[key]` header."""
    out: dict[str, int] = {}
    in_table = False
    for n, line in enumerate(text.splitlines(), 1):
        if m := _HEADER.match(line):
            in_table = True
            out.setdefault(_unquote(m["key"]), n)
        elif not in_table and (m := _KEY.match(line)):
            out.setdefault(_unquote(m["key"]), n)
    return out


def _unquote(key: str) -> str:
    if key[:1] == '"':
        return key[1:-1].encode().decode("unicode_escape")
    return key.strip("'")


def check(path: str | Path) -> tuple[dict[str, Any], list[Problem]]:
    """The file's mapping and its wrong keys; a SettingsError when it cannot be read or is
    not TOML (the message names the file and tomllib's line)."""
    data = load_file(path)
    try:
        lines = key_lines(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        lines = {}
    return data, [
        Problem(key, lines.get(key), why,
                suggestion(key, data[key]) if why.startswith("unknown setting") else None)
        for key, why in problems(data).items()
    ]


def describe(path: str | Path, found: list[Problem]) -> str:
    """"config PATH, line 3: unknown setting no_mdns (did you mean `mdns = false`?)"."""
    said = [f"line {p.line}: {p.message}" if p.line else p.message for p in found]
    if len(said) == 1:
        return f"config {path}, {said[0]}"
    return f"config {path}: " + "; ".join(said)


def read(path: str | Path, base: Settings | None = None) -> Settings:
    """The settings of the file over `base`; a SettingsError naming the file, and each
    wrong key with its line."""
    data, found = check(path)
    if found:
        raise SettingsError(describe(path, found))
    try:
        return from_mapping(data, base)
    except SettingsError as e:
        raise SettingsError(f"config {path}: {e}") from None


_ABSENT = object()


def update(path: str | Path, old: Mapping[str, Any], new: Mapping[str, Any],
           remove: Iterable[str] = (), renames: Mapping[str, tuple[str, Any]] | None = None
           ) -> bool:
    """Write into the config file the settings whose values differ between `old` (as they
    were; a key missing from it was wrong in the file) and `new`, each in place, keeping
    the rest of the file as it is. A table (`capacity`) changes entry by entry. A value
    None removes its key (TOML has no null); a key the file lacks is not added for a
    default value. `remove` drops keys; `renames` replaces a wrong key with another
    (`no_mdns = true` -> `mdns = false`) where it stood. Returns whether the file changed;
    a SettingsError names the file when it cannot be read, parsed or written."""
    path = Path(path)
    real = Path(os.path.realpath(path))
    try:
        text = real.read_bytes().decode("utf-8")  # its line ends as they are (CRLF too)
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as e:
        raise SettingsError(f"cannot update {path}: {getattr(e, 'strerror', None) or e}") from None
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as e:
        raise SettingsError(f"cannot update {path}: it is not valid TOML: {e}") from None
    defaults = _defaults()
    for key in remove:
        doc.pop(key, None)
    for wrong, (key, value) in (renames or {}).items():
        _rename(doc, wrong, key, value)
    for key, value in new.items():
        before = old.get(key, _ABSENT)
        if before == value and isinstance(before, bool) == isinstance(value, bool):
            continue
        if value is None:
            doc.pop(key, None)
        elif isinstance(value, dict):
            _update_table(doc, key, before, value)
        elif key in doc or value != defaults.get(key, _ABSENT):
            doc[key] = _plain(value)
    out = doc.as_string()
    if out == text:
        return False
    try:
        paths.write_atomically(real, out.encode())
    except OSError as e:
        raise SettingsError(f"cannot save {real}: {e.strerror or e}") from None
    return True


def _rename(doc: Any, wrong: str, key: str, value: Any) -> None:
    """`wrong = …` goes; `key = value` comes unless the file sets `key` already."""
    if wrong not in doc:
        return
    doc.pop(wrong)
    if key not in doc:
        doc[key] = _table(value) if isinstance(value, dict) else _plain(value)


def _update_table(doc: Any, key: str, before: Any, value: dict[str, Any]) -> None:
    """Entry by entry: those that changed from `before`; when `before` is not a table (the
    file's was wrong) the file's table becomes `value`."""
    current = doc.get(key)
    if not isinstance(current, dict):  # absent, or not a table
        if value:
            doc[key] = _table(value)
        elif current is not None:
            doc.pop(key)
        return
    was = before if isinstance(before, dict) else None
    for name in list(current):
        if name not in value and (was is None or name in was):
            del current[name]
    for name, v in value.items():
        if (was.get(name, _ABSENT) if was is not None else current.get(name, _ABSENT)) != v:
            current[name] = _plain(v)


def _table(value: dict[str, Any]) -> Any:
    t = tomlkit.table()
    for name, v in value.items():
        t[name] = _plain(v)
    return t


def _plain(value: Any) -> Any:
    """A value as a person writes it: 1000, not 1000.0; a list for a tuple."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _defaults() -> dict[str, Any]:
    return {f.name: f.default for f in fields(Settings) if f.default is not MISSING}


# -- the reference --------------------------------------------------------------------------

def _default_cell(value: Any) -> str:
    if value is None or value == {}:
        return "none"
    if isinstance(value, bool):
        return f"`{'true' if value else 'false'}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if value == ():
        return "`[]`"
    return f"{value:g}"


def reference_rows() -> list[tuple[str, str, str, str]]:
    """(key, option, default, what) of every setting, in the model's order."""
    rows = []
    for f in fields(Settings):
        meta = f.metadata
        option = f"`{meta['option']}`" if meta.get("option") else "—"
        if meta.get("note"):
            option += f" ({meta['note']})"
        default = meta.get("shown") or _default_cell(
            f.default if f.default is not MISSING else f.default_factory())
        rows.append((f"`{f.name}`", option, default, meta["what"]))
    return rows


def reference_table() -> str:
    """The reference's table of config keys, as markdown."""
    lines = ["| key | option | default | what |", "|---|---|---|---|"]
    for row in reference_rows():
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines) + "\n"

"""The history database's schema and file: tables per kind and tier, the version and
its migrations, columns added since a file was made, and moving a bad file aside.
See history/db.py for what is stored and why."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from exotray.agent.base.statedir import KEEP_ASIDE, set_aside  # noqa: F401 (re-exported)
from exotray.core.history import IFACE_COLUMNS, LINK_COLUMNS, TEXT_COLUMNS

#: this code's schema; `MIGRATIONS[v]` upgrades a database at version v to v + 1
SCHEMA_VERSION = 1
MIGRATIONS: dict[int, Any] = {}
#: what `meta.app` says in our databases (anything else is a foreign file)
APP = "exotray-history"
#: the columns kept per kind of series (the first is always "t")
KINDS = {"link": LINK_COLUMNS, "iface": IFACE_COLUMNS}
#: text columns stored as their rank here; a bucket keeps the highest (the worst state)
RANKS = {"state": ("up", "saturated", "down"), "carrier": ("up", "down")}
#: how long full resolution and the 10 s tier are kept (capped by the retention)
RAW_KEEP_S = 6 * 3600.0
TEN_S_KEEP_S = 48 * 3600.0
#: SQLite's page cache for the one connection, KiB. SQLite's default (2000 KiB) fills
#: as the file grows (every page written or checked stays cached) and showed as ~2 MiB of
#: agent RSS creeping up over the first hours; the writes touch only the newest pages of
#: each table, and reads of older ranges come from the OS's file cache.
CACHE_KIB = 512
#: set-aside files kept next to the database (older ones are removed)
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26


class NotOurs(Exception):
    """A database that is not ours, or of a newer schema than this code knows."""


class Corrupt(Exception):
    """SQLite's own check found damage."""


def is_corruption(e: BaseException) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)


def scale(col: str) -> float:
    """Stored integer = round(value * scale)."""
    if col.endswith("_ms"):
        return 1000.0
    if col.endswith("_bytes_per_s"):
        return 1.0
    return 10000.0  # ratios: utilization, loss


def digits(col: str) -> int:
    return {1000.0: 3, 1.0: 1, 10000.0: 4}[scale(col)]


@dataclass(frozen=True)
class Tier:
    name: str
    step_ms: int  # 0: every sample
    keep_s: float


def tiers(retention_s: float) -> tuple[Tier, ...]:
    return (Tier("raw", 0, min(RAW_KEEP_S, retention_s)),
            Tier("10s", 10_000, min(TEN_S_KEEP_S, retention_s)),
            Tier("1m", 60_000, retention_s))


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def numeric(col: str) -> bool:
    return col not in TEXT_COLUMNS


def tier_columns(kind: str, raw: bool) -> list[tuple[str, str]]:
    """(column, SQL type) of a tier's table after series and t."""
    out: list[tuple[str, str]] = [] if raw else [("n", "INTEGER")]
    for c in KINDS[kind][1:]:
        if not numeric(c):
            out.append((c, "INTEGER" if c in RANKS else "TEXT"))
        elif raw:
            out.append((c, "INTEGER"))
        else:
            out += [(f"{c}_min", "INTEGER"), (f"{c}_mean", "INTEGER"), (f"{c}_max", "INTEGER")]
    return out


def prepare(c: sqlite3.Connection, tiers_: tuple[Tier, ...]) -> None:
    """Check, create or upgrade the schema of a just opened database."""
    c.execute(f"PRAGMA cache_size=-{CACHE_KIB}")  # before quick_check reads every page
    check = c.execute("PRAGMA quick_check").fetchone()[0]
    if check != "ok":
        raise Corrupt(f"quick_check: {check}"[:200])
    tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if tables and "meta" not in tables:
        raise NotOurs(f"not an exotray history (tables {', '.join(sorted(tables))[:80]})")
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=NORMAL")  # a killed process loses no commit
    c.execute("PRAGMA journal_size_limit=8388608")
    c.execute("BEGIN IMMEDIATE")
    try:
        if not tables:
            _create(c, tiers_)
        version = _check_meta(c)
        while version < SCHEMA_VERSION:
            MIGRATIONS[version](c)
            version += 1
            c.execute("UPDATE meta SET value=? WHERE key='schema'", (str(version),))
        _add_missing_columns(c, tiers_)
        c.execute("COMMIT")
    except BaseException:
        c.execute("ROLLBACK")
        raise

def _create(c: sqlite3.Connection, tiers_: tuple[Tier, ...]) -> None:
    c.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID")
    c.executemany("INSERT INTO meta VALUES (?, ?)",
                  [("app", APP), ("schema", str(SCHEMA_VERSION))])
    c.execute("CREATE TABLE series (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, "
              "name TEXT NOT NULL, UNIQUE (kind, name))")
    c.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, seq INTEGER, at REAL, "
              "type TEXT, link_id TEXT, body TEXT)")
    c.execute("CREATE INDEX events_at ON events (at)")
    for kind in KINDS:
        for tier in tiers_:
            cols = "".join(f", {q(n)} {t}" for n, t in tier_columns(kind, not tier.step_ms))
            c.execute(f"CREATE TABLE {kind}_{tier.name} (series INTEGER NOT NULL, "
                      f"t INTEGER NOT NULL{cols}, PRIMARY KEY (series, t)) WITHOUT ROWID")

def _check_meta(c: sqlite3.Connection) -> int:
    meta = dict(c.execute("SELECT key, value FROM meta"))
    if meta.get("app") != APP:
        raise NotOurs(f"not an exotray history (app {meta.get('app')!r:.40})")
    try:
        version = int(meta.get("schema", ""))
    except ValueError:
        raise NotOurs(f"of unknown schema {meta.get('schema')!r:.20}") from None
    if version > SCHEMA_VERSION:
        raise NotOurs(f"of a newer schema ({version}; this agent knows {SCHEMA_VERSION})")
    return version

def _add_missing_columns(c: sqlite3.Connection, tiers_: tuple[Tier, ...]) -> None:
    """Columns added to LINK_COLUMNS / IFACE_COLUMNS since the file was made."""
    for kind in KINDS:
        for tier in tiers_:
            table = f"{kind}_{tier.name}"
            have = {r[1] for r in c.execute(f"PRAGMA table_info({table})")}
            for name, typ in tier_columns(kind, not tier.step_ms):
                if name not in have:
                    c.execute(f"ALTER TABLE {table} ADD COLUMN {q(name)} {typ}")

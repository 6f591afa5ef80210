"""Agent settings: defaults, the TOML config file, and command-line overrides."""

from __future__ import annotations

import math
import platform
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from exotray.core.fmt import UNITS

DEFAULT_PORT = 52480


#: the log line format of the agent and the tray app; the tray's supervisor parses the
#: agent's lines by it (exotray.ui.client.supervisor.problem_line)
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: exit status of an agent refused by its settings (sysexits.h EX_CONFIG): the tray app
#: does not restart such an agent until its config file changes.
EXIT_CONFIG = 78


#: bounds of an active capacity test, per direction (`exotray measure`, the API)
CAPTEST_SECONDS = (1.0, 30.0)
CAPTEST_STREAMS = (1, 8)


#: where a local exo node serves its API (github exo-explore/exo, `--api-port` 52415)
DEFAULT_EXO_URL = "http://127.0.0.1:52415"

#: sharing protocols (Settings.sharing)
SHARING = ("poll", "stream")


class SettingsError(ValueError):
    pass


@dataclass(frozen=True)
class Settings:
    name: str = field(default_factory=lambda: platform.node().split(".")[0] or "exotray")
    port: int = DEFAULT_PORT
    bind: str = "0.0.0.0"
    interval: float = 1.0
    peers: tuple[str, ...] = ()
    mdns: bool = True
    mdns_interfaces: tuple[str, ...] = ()
    #: interface name -> capacity in Mbit/s
    capacity: dict[str, float] = field(default_factory=dict)
    threshold: float = 0.90
    sustain: float = 3.0
    clear: float = 5.0
    cooldown: float = 60.0
    #: a link is down after this many intervals without any probe reply
    down_after: float = 2.5
    #: probes sent per link per interval while the link is in question (down, losing,
    #: busy: agent/probe/pacing.py); one per interval to a link at rest
    probes_per_interval: int = 4
    #: the tray app notifies when peers go down and come back (links always notify)
    notify_peers: bool = True
    #: the tray app shows rates in "bytes" (MB/s) or "bits" (Mbit/s, as links are sold)
    units: str = "bytes"
    #: answer other agents' active capacity tests (a bounded bulk TCP transfer)
    allow_capacity_tests: bool = True
    #: TCP port a capacity test's responder listens on, only during a consented test
    #: (0: an ephemeral port, named in the consent)
    capacity_port: int = 0
    #: warn (once) when a `capacity` interface has not appeared this long after start
    capacity_warn_after: float = 60.0
    #: how peers' snapshots are shared: "stream" (one connection per peer, a full
    #: snapshot then deltas; docs/design.md "Stream sharing") or "poll" (the previous
    #: protocol: each peer's /v1/snapshot every interval); the two interoperate
    sharing: str = "stream"
    #: the local exo node's API, read every few seconds for which links its inference
    #: traffic takes ("" = do not look for exo)
    exo_url: str = DEFAULT_EXO_URL
    #: days of history kept in the state dir's database (tiered; 0: none, one hour in
    #: memory only)
    history_days: float = 30.0
    events: str | None = None
    state_dir: str | None = None
    key_file: str | None = None

    def validate(self) -> Settings:
        self._check_types()
        if not 0 <= self.port <= 65535:
            raise SettingsError(f"port {self.port} is not in 0..65535")
        if not 0 <= self.capacity_port <= 65535:
            raise SettingsError(f"capacity_port {self.capacity_port} is not in 0..65535 "
                                "(0: an ephemeral port per test)")
        for name in ("interval", "sustain", "clear", "cooldown", "down_after",
                     "capacity_warn_after"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise SettingsError(f"{name} must be a non-negative number, not {v!r}")
        if not 0.05 <= self.interval <= 60:
            raise SettingsError(f"interval {self.interval} s is outside 0.05..60 s")
        if not 0.1 <= self.threshold <= 1.0:
            raise SettingsError(f"threshold {self.threshold} is outside 0.1..1.0")
        if not 1 <= self.probes_per_interval <= 20:
            raise SettingsError("probes_per_interval must be 1..20")
        for p in self.peers:
            parse_peer(p)
        for iface, mbit in self.capacity.items():
            if not (isinstance(mbit, int | float) and math.isfinite(mbit) and mbit > 0):
                raise SettingsError(f"capacity of {iface} must be a positive number of Mbit/s")
        if not (math.isfinite(self.history_days) and 0 <= self.history_days <= 3650):
            raise SettingsError(f"history_days must be 0..3650, not {self.history_days!r}")
        if self.units not in UNITS:
            raise SettingsError(f"units must be one of {', '.join(UNITS)}, "
                                f"not {self.units!r}"[:120])
        if self.sharing not in SHARING:
            raise SettingsError(f"sharing must be one of {', '.join(SHARING)}, "
                                f"not {self.sharing!r}"[:120])
        if self.exo_url and not (self.exo_url.startswith(("http://", "https://"))
                                 and len(self.exo_url) <= 200):
            raise SettingsError(f"exo_url must be an http:// URL or \"\" (off), "
                                f"not {self.exo_url!r}"[:120])
        if not self.name or len(self.name) > 64:
            raise SettingsError("name must be 1..64 characters")
        return self


    def _check_types(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            kind = _TYPES.get(f.name)
            if kind is None:
                continue
            ok = (
                (v is None and f.name in _OPTIONAL)
                or (kind is bool and isinstance(v, bool))
                or (kind is int and isinstance(v, int) and not isinstance(v, bool))
                or (kind is float and isinstance(v, int | float) and not isinstance(v, bool))
                or (kind is str and isinstance(v, str))
                or (kind is tuple and isinstance(v, tuple) and all(isinstance(x, str) for x in v))
                or (kind is dict and isinstance(v, dict) and all(
                    isinstance(k, str) and isinstance(x, int | float) and not isinstance(x, bool)
                    for k, x in v.items()))
            )
            if not ok:
                raise SettingsError(f"{f.name} must be {_TYPE_NAMES[kind]}, not {v!r}"[:120])


_TYPES: dict[str, type] = {
    "name": str, "port": int, "bind": str, "interval": float, "peers": tuple, "mdns": bool,
    "mdns_interfaces": tuple, "capacity": dict, "threshold": float, "sustain": float,
    "clear": float, "cooldown": float, "down_after": float, "probes_per_interval": int,
    "events": str, "state_dir": str, "key_file": str, "notify_peers": bool,
    "allow_capacity_tests": bool, "capacity_port": int, "capacity_warn_after": float,
    "sharing": str, "exo_url": str, "history_days": float, "units": str,
}
_OPTIONAL = {"events", "state_dir", "key_file"}
_TYPE_NAMES = {
    str: "text", int: "a whole number", float: "a number", bool: "true or false",
    tuple: "a list of text", dict: "a table of NAME = number",
}


def parse_peer(text: str) -> tuple[str, int]:
    """'HOST:PORT', 'HOST' (default port) or '[v6]:PORT' -> (host, port)."""
    text = text.strip()
    if not text:
        raise SettingsError("empty peer")
    host, port = text, DEFAULT_PORT
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise SettingsError(f"peer {text!r}: missing ']'")
        host, rest = text[1:end], text[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise SettingsError(f"peer {text!r}: expected ':PORT' after ']'")
            port = _port(text, rest[1:])
    elif text.count(":") == 1:
        host, p = text.split(":")
        port = _port(text, p)
    if not host:
        raise SettingsError(f"peer {text!r}: missing host")
    if any(c.isspace() for c in host) or not host.isprintable():
        raise SettingsError(f"peer {text!r}: host may not contain spaces")
    return host, port


def _port(text: str, p: str) -> int:
    if not (p.isascii() and p.isdigit()):
        raise SettingsError(f"peer {text!r}: port {p!r} is not a number")
    port = int(p)
    if not 1 <= port <= 65535:
        raise SettingsError(f"peer {text!r}: port {port} is not in 1..65535")
    return port


def parse_capacity(text: str) -> tuple[str, float]:
    """'IFACE=MBIT' -> (iface, mbit)."""
    iface, sep, mbit = text.partition("=")
    if not sep or not iface.strip():
        raise SettingsError(f"capacity {text!r}: expected IFACE=MBIT, e.g. en0=1000")
    try:
        value = float(mbit)
    except ValueError:
        raise SettingsError(f"capacity {text!r}: {mbit!r} is not a number of Mbit/s") from None
    if not (math.isfinite(value) and value > 0):
        raise SettingsError(f"capacity {text!r}: must be a positive number of Mbit/s")
    return iface.strip(), value


_KNOWN = {f.name for f in fields(Settings)}


def from_mapping(data: dict[str, Any], base: Settings | None = None) -> Settings:
    """Settings from a config-file mapping (keys as the dataclass fields)."""
    unknown = set(data) - _KNOWN
    if unknown:
        raise SettingsError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    values = dict(data)
    for key in ("peers", "mdns_interfaces"):
        if key in values:
            items = values[key]
            if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
                raise SettingsError(f"{key} must be a list of strings")
            values[key] = tuple(values[key])
    if "capacity" in values:
        cap = values["capacity"]
        if not isinstance(cap, dict):
            raise SettingsError("capacity must be a table of IFACE = MBIT")
        values["capacity"] = {str(k): v for k, v in cap.items()}
    try:
        return replace(base or Settings(), **values).validate()
    except TypeError as e:
        raise SettingsError(str(e)) from None


def load_file(path: str | Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise SettingsError(f"cannot read config {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise SettingsError(f"config {path} is not valid TOML: {e}") from None
    except UnicodeDecodeError:
        raise SettingsError(f"config {path} is not UTF-8 text") from None

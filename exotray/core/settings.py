"""Agent settings: the model (`Settings`: each field a config key, with its option and
what the reference says of it), validation, and the words for a wrong key (`problems`,
`suggestion`: `no_mdns = true` -> did you mean `mdns = false`?). The config file as its
user wrote it is core/configfile.py."""

from __future__ import annotations

import difflib
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


#: the settings the tray app's Preferences change at run time, through the agent's local
#: control endpoint (the others take a restart)
EDITABLE = ("interval", "threshold", "sustain", "clear", "capacity", "notify_peers",
            "key_file", "units")


class SettingsError(ValueError):
    pass


def _key(what: str, option: str | None = None, note: str | None = None,
         shown: str | None = None, **default: Any) -> Any:
    """A setting: its config key is the field's name. `option`: the `exotray agent` option
    that sets it (with its metavar; None: the config file only), `note`: said after the
    option ("repeatable"; "false": what the option sets), `shown`: the default in words
    where its value would not say it, `what`: what it is. docs/reference.md's table of
    config keys is made of these (`reference_table`; a test holds the two equal)."""
    return field(metadata={"what": what, "option": option, "note": note, "shown": shown},
                 **default)


@dataclass(frozen=True)
class Settings:
    name: str = _key("this node's name, 1..64 characters", "--name",
                     shown="the host name (up to its first dot)",
                     default_factory=lambda: platform.node().split(".")[0] or "exotray")
    port: int = _key("TCP and UDP port, 1..65535; the agent's only fixed port", "--port",
                     default=DEFAULT_PORT)
    bind: str = _key("the address to listen on", "--bind", default="0.0.0.0")
    interval: float = _key("sampling and probing interval in seconds, 0.05..60",
                           "--interval", default=1.0)
    peers: tuple[str, ...] = _key(
        'peers to monitor without mDNS: `"HOST:PORT"`, `"HOST"` (port 52480) or '
        '`"[v6]:PORT"`; they merge with what mDNS finds', "--peer HOST:PORT", "repeatable",
        default=())
    mdns: bool = _key("discover peers and announce this one with mDNS", "--no-mdns", "false",
                      default=True)
    mdns_interfaces: tuple[str, ...] = _key(
        "run mDNS only on the interfaces with these addresses", "--mdns-interface ADDR",
        "repeatable", shown="`[]`: every up multicast interface", default=())
    #: interface name -> capacity in Mbit/s
    capacity: dict[str, float] = _key(  # noqa: RUF009 (a field(), default_factory=dict)
        "a table of interface = capacity in Mbit/s (positive), over what the OS says",
        "--capacity IFACE=MBIT", "repeatable", default_factory=dict)
    threshold: float = _key("utilization that counts as saturated, 0.1..1.0", "--threshold",
                            default=0.90)
    sustain: float = _key("seconds at or above the threshold before `link_saturated`",
                          "--sustain", default=3.0)
    clear: float = _key("seconds below threshold − 0.05 before `link_cleared`", "--clear",
                        default=5.0)
    cooldown: float = _key(
        "seconds after a notified `link_saturated` within which a new saturation of that "
        "link (and the clear that ends it) is not notified: its events are recorded with "
        "`notify: false`, so a link that flaps notifies once per cooldown", default=60.0)
    down_after: float = _key("intervals without any probe reply before a link is `down`",
                             default=2.5)
    #: (agent/probe/pacing.py)
    probes_per_interval: int = _key(
        "probes per link per interval while the link is in question, 1..20 (one per "
        "interval at rest)", default=4)
    events: str | None = _key("also append events as JSON lines to FILE (`-`: stdout)",
                              "--events FILE|-", default=None)
    state_dir: str | None = _key("node id, control token, history database", "--state-dir",
                                 shown="the platform's user state dir", default=None)
    key_file: str | None = _key("the cluster key (at least 16 bytes)", "--key-file",
                                default=None)
    #: docs/design.md "Stream sharing"
    sharing: str = _key(
        '`"stream"` or `"poll"`: how peers\' snapshots are shared ([agent.md](agent.md)); '
        "the two interoperate", "--sharing", default="stream")
    exo_url: str = _key(
        "the local exo node's API, an `http://` or `https://` URL of at most 200 "
        'characters; `""`: do not look for exo', "--exo-url", default=DEFAULT_EXO_URL)
    history_days: float = _key(
        "days of history kept in the state dir's database, 0..3650 (0: none, the last hour "
        "in memory only)", "--history-days", default=30.0)
    notify_peers: bool = _key(
        "the tray app notifies when peers go down and come back (links always notify)",
        note="Preferences", default=True)
    units: str = _key(
        'the tray app shows rates in `"bytes"` (MB/s) or `"bits"` (Mbit/s)',
        note="Preferences", default="bytes")
    allow_capacity_tests: bool = _key("answer other agents' capacity tests", default=True)
    capacity_port: int = _key(
        "the TCP port a capacity test's responder listens on, only during a consented test "
        "(0: an ephemeral port, named in the consent)", default=0)
    capacity_warn_after: float = _key(
        "seconds after start within which a `capacity` interface must have appeared, else "
        "one warning in the log (a typo?)", default=60.0)

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


def _aliases() -> dict[str, tuple[str, Any]]:
    """Names a config key is mistaken for -> (the key, how a value given to the mistaken
    name becomes the key's). The keys themselves, and each option's name: `no_mdns` ->
    `mdns` with the value negated, `peer` -> `peers` with a text made a list."""
    out: dict[str, tuple[str, Any]] = {k: (k, None) for k in _KNOWN}
    for f in fields(Settings):
        option = f.metadata.get("option")
        if not option:
            continue
        name = option.split()[0].lstrip("-").replace("-", "_")
        if name == f.name:
            continue
        if name.startswith("no_") and _TYPES.get(f.name) is bool:
            out[name] = (f.name, lambda v: not v if isinstance(v, bool) else False)
        elif _TYPES.get(f.name) is tuple:
            out[name] = (f.name, lambda v: [v] if isinstance(v, str) else v)
        else:
            out[name] = (f.name, None)
    return out


def suggestion(name: str, value: Any) -> tuple[str, Any] | None:
    """The setting an unknown config key most likely means, and the value it then takes:
    an option's name as a key (`no_mdns = true`, `mdns-interface`, `--peer`) or a near
    miss (`treshold`); None when nothing is close."""
    aliases = _aliases()
    norm = name.strip().lstrip("-").lower().replace("-", "_").replace(" ", "_")
    if norm not in aliases:
        longer = [k for k in _KNOWN if k.startswith(norm + "_")]  # `history`, `key`
        close = longer if len(longer) == 1 else difflib.get_close_matches(
            norm, list(aliases), n=1, cutoff=0.8)
        if not close:
            return None
        norm = close[0]
    key, convert = aliases[norm]
    return key, (convert(value) if convert else value)


def toml_text(key: str, value: Any) -> str:
    """`key = value` as TOML says it (a table as its header: `[capacity]`), written by
    tomlkit, the library that writes the config file (quoting a key where TOML needs it)."""
    if isinstance(value, dict):
        return f"[{key}]"
    import tomlkit  # (here: the agent imports this module, and never needs it)

    return tomlkit.dumps({key: value}).strip()


def unknown_key(name: str, value: Any) -> str:
    """Why a config key is refused: "unknown setting no_mdns (did you mean `mdns = false`?)"."""
    return f"unknown setting {_unknown(name, value)}"


def _unknown(name: str, value: Any) -> str:
    guess = suggestion(name, value)
    return f"{name} (did you mean `{toml_text(*guess)}`?)" if guess else name


def problems(data: dict[str, Any]) -> dict[str, str]:
    """Each wrong key of a config mapping, with why (in the mapping's order): unknown keys
    with the key they most likely mean, values of the wrong type or out of range."""
    out: dict[str, str] = {}
    for key, value in data.items():
        if key not in _KNOWN:
            out[key] = unknown_key(key, value)
            continue
        try:
            from_mapping({key: value})
        except SettingsError as e:
            out[key] = str(e)
    return out


def from_mapping(data: dict[str, Any], base: Settings | None = None) -> Settings:
    """Settings from a config-file mapping (keys as the dataclass fields)."""
    unknown = [k for k in data if k not in _KNOWN]
    if unknown:
        raise SettingsError(f"unknown setting{'s' if len(unknown) > 1 else ''} "
                            + ", ".join(_unknown(k, data[k]) for k in unknown))
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

"""Colours and sizes shared by the exotray windows: a light, quiet palette and its dark
twin (``DARK``), chosen by ``use("light" | "dark")`` (exotray.ui.style.look follows the
system's colour scheme and tells the windows to restyle).

The colours are module globals read at drawing time (``theme.TEXT``), so that ``use``
rebinding them is all a redraw needs. Plain hex strings (``"#rrggbb"``), so this module
needs no Qt; pyqtgraph's ``mkColor`` / ``mkPen`` and ``QColor`` accept them as they are.
"""

from __future__ import annotations

from typing import Final

SCHEMES: Final = ("light", "dark")

#: utilization at or above which a link is drawn as hot (the agents' default threshold)
DEFAULT_THRESHOLD: Final = 0.90
#: below this utilization a link is drawn as calm
CALM_BELOW: Final = 0.50

# -- surfaces and text -------------------------------------------------------------------
BACKGROUND = "#ffffff"
PANEL = "#f6f7f9"
GRID = "#e5e7eb"
TEXT = "#1f2937"
TEXT_MUTED = "#6b7280"
TEXT_FAINT = "#9ca3af"
AXIS = "#9ca3af"
ACCENT = "#2563eb"
ACCENT_DARK = "#1e40af"
ACCENT_SOFT = "#93c5fd"
#: the selected link (halo, badge border): a magenta that no state, node or legend entry
#: uses, with a contrast of at least 3:1 on white and on a dark (#1f2937) background
SELECTION = "#c026d3"
#: a problem that stays until it is solved (the agent cannot start, ...): a banner
PROBLEM_BACKGROUND = "#fef2f2"
PROBLEM_BORDER = "#fca5a5"
PROBLEM_TEXT = "#991b1b"

# -- links -------------------------------------------------------------------------------
LINK_CALM = "#16a34a"  # green: utilization < CALM_BELOW
LINK_BUSY = "#d97706"  # amber: CALM_BELOW <= utilization < threshold
LINK_HOT = "#dc2626"  # red: utilization >= threshold, or saturated
LINK_UNKNOWN = "#94a3b8"  # blue-grey: capacity unknown, so no utilization
LINK_DOWN = "#b08d9a"  # muted mauve, drawn dashed: no replies

# -- chart series --------------------------------------------------------------------------
RTT_MEDIAN = "#2563eb"
RTT_BAND = "#93c5fd"
RTT_BASELINE = "#0f766e"  # the idle RTT under the median (teal, dashed)
RX = "#0891b2"  # cyan
TX = "#7c3aed"  # violet
CAPACITY = "#475569"
THRESHOLD = LINK_HOT

# -- nodes -------------------------------------------------------------------------------
NODE_SELF = ACCENT
NODE_SELF_RING = ACCENT_DARK
NODE_PEER = "#334155"
NODE_PEER_RING = "#0f172a"
NODE_UNREACHABLE = "#ffffff"
NODE_UNREACHABLE_RING = "#9ca3af"
NODE_UNKNOWN = "#f3f4f6"
NODE_UNKNOWN_RING = "#c0c4cc"

# -- health (status dots, state words) ---------------------------------------------------
HEALTH: dict[str, str] = {
    "ok": LINK_CALM,
    "warn": LINK_BUSY,
    "bad": LINK_HOT,
    "down": LINK_DOWN,
    "unknown": LINK_UNKNOWN,
}
#: a link state as reported by the agent -> health key
STATE_HEALTH: dict[str, str] = {"up": "ok", "saturated": "bad", "down": "down"}


def utilization_color(utilization: float | None, threshold: float = DEFAULT_THRESHOLD) -> str:
    """Green below CALM_BELOW, amber below `threshold`, red from it; grey when unknown."""
    if utilization is None:
        return LINK_UNKNOWN
    if utilization < min(CALM_BELOW, threshold):
        return LINK_CALM
    if utilization < threshold:
        return LINK_BUSY
    return LINK_HOT


def link_kind(
    state: str, utilization: float | None, threshold: float = DEFAULT_THRESHOLD
) -> str:
    """The drawing class of a link: "down", "hot", "busy", "calm" or "unknown".

    Down wins over everything; a link the agent reports saturated stays hot while its
    utilization is inside the hysteresis band below the threshold.
    """
    if state == "down":
        return "down"
    if state == "saturated":
        return "hot"
    if utilization is None:
        return "unknown"
    if utilization < min(CALM_BELOW, threshold):
        return "calm"
    return "busy" if utilization < threshold else "hot"


#: the casing of a link that carries exo's inference traffic (topology view)
EXO = "#0aa3c2"

KIND_COLOR: dict[str, str] = {
    "calm": LINK_CALM,
    "busy": LINK_BUSY,
    "hot": LINK_HOT,
    "unknown": LINK_UNKNOWN,
    "down": LINK_DOWN,
}


def state_color(state: str | None) -> str:
    """Colour of a link state word ("up", "saturated", "down"); grey for anything else."""
    return HEALTH[STATE_HEALTH.get(state or "", "unknown")]


def with_alpha(color: str, alpha: float) -> tuple[int, int, int, int]:
    """`color` as an (r, g, b, a) tuple with `alpha` in 0..1."""
    c = color.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16), round(alpha * 255)


#: the colours `use` rebinds, by name: this module's light values, taken at import
_COLOR_NAMES: Final = tuple(k for k, v in dict(globals()).items()
                            if k.isupper() and isinstance(v, str) and v.startswith("#"))
LIGHT: Final[dict[str, str]] = {k: globals()[k] for k in _COLOR_NAMES}

#: the dark twin: surfaces near black, text light, and every line and series colour a
#: step lighter, so that each keeps its contrast on the dark background (the tests check
#: text >= 4.5:1, lines and series >= 3:1)
DARK: Final[dict[str, str]] = {
    **LIGHT,
    "BACKGROUND": "#111827",
    "PANEL": "#1f2937",
    "GRID": "#374151",
    "TEXT": "#e5e7eb",
    "TEXT_MUTED": "#9ca3af",
    "TEXT_FAINT": "#7c8594",
    "AXIS": "#7c8594",
    "ACCENT": "#3b82f6",
    "ACCENT_DARK": "#93c5fd",
    "ACCENT_SOFT": "#1e40af",
    "SELECTION": "#e879f9",
    "PROBLEM_BACKGROUND": "#3f1212",
    "PROBLEM_BORDER": "#7f1d1d",
    "PROBLEM_TEXT": "#fecaca",
    "LINK_CALM": "#22c55e",
    "LINK_BUSY": "#f59e0b",
    "LINK_HOT": "#f87171",
    "LINK_UNKNOWN": "#94a3b8",
    "LINK_DOWN": "#c4a3b0",
    "RTT_MEDIAN": "#60a5fa",
    "RTT_BAND": "#1d4ed8",  # a quiet band under the bright median
    "RTT_BASELINE": "#2dd4bf",
    "RX": "#22d3ee",
    "TX": "#a78bfa",
    "CAPACITY": "#94a3b8",
    "THRESHOLD": "#f87171",
    "NODE_SELF": "#3b82f6",
    "NODE_SELF_RING": "#93c5fd",
    "NODE_PEER": "#64748b",
    "NODE_PEER_RING": "#e2e8f0",
    "NODE_UNREACHABLE": "#111827",
    "NODE_UNREACHABLE_RING": "#7c8594",
    "NODE_UNKNOWN": "#1f2937",
    "NODE_UNKNOWN_RING": "#4b5563",
    "EXO": "#22b8d6",
}
PALETTES: Final[dict[str, dict[str, str]]] = {"light": LIGHT, "dark": DARK}
_scheme = "light"


def use(scheme: str) -> bool:
    """Draw from now on with the `scheme` palette ("light" or "dark"); True when that
    changed anything (the windows then restyle what they drew)."""
    global _scheme
    if scheme not in PALETTES:
        raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, not {scheme!r}")
    if scheme == _scheme:
        return False
    _scheme = scheme
    palette = PALETTES[scheme]
    globals().update(palette)
    HEALTH.update(ok=palette["LINK_CALM"], warn=palette["LINK_BUSY"], bad=palette["LINK_HOT"],
                  down=palette["LINK_DOWN"], unknown=palette["LINK_UNKNOWN"])
    KIND_COLOR.update(calm=palette["LINK_CALM"], busy=palette["LINK_BUSY"],
                      hot=palette["LINK_HOT"], unknown=palette["LINK_UNKNOWN"],
                      down=palette["LINK_DOWN"])
    return True


def scheme() -> str:
    """The palette in use: "light" or "dark"."""
    return _scheme


def luminance(color: str) -> float:
    """Relative luminance of `color` (WCAG 2)."""
    c = color.lstrip("#")

    def lin(v: int) -> float:
        s = v / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(int(c[i:i + 2], 16)) for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours, 1 (none) to 21 (black on white)."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)

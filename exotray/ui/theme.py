"""Colours and sizes shared by the exotray windows: one light, quiet palette.

Plain hex strings (``"#rrggbb"``), so this module needs no Qt; pyqtgraph's ``mkColor`` /
``mkPen`` and ``QColor`` accept them as they are.
"""

from __future__ import annotations

from typing import Final

#: utilization at or above which a link is drawn as hot (the agents' default threshold)
DEFAULT_THRESHOLD: Final = 0.90
#: below this utilization a link is drawn as calm
CALM_BELOW: Final = 0.50

# -- surfaces and text -------------------------------------------------------------------
BACKGROUND: Final = "#ffffff"
PANEL: Final = "#f6f7f9"
GRID: Final = "#e5e7eb"
TEXT: Final = "#1f2937"
TEXT_MUTED: Final = "#6b7280"
TEXT_FAINT: Final = "#9ca3af"
AXIS: Final = "#9ca3af"
ACCENT: Final = "#2563eb"
ACCENT_DARK: Final = "#1e40af"
ACCENT_SOFT: Final = "#93c5fd"
#: the selected link (halo, badge border): a magenta that no state, node or legend entry
#: uses, with a contrast of at least 3:1 on white and on a dark (#1f2937) background
SELECTION: Final = "#c026d3"
#: a problem that stays until it is solved (the agent cannot start, ...): a banner
PROBLEM_BACKGROUND: Final = "#fef2f2"
PROBLEM_BORDER: Final = "#fca5a5"
PROBLEM_TEXT: Final = "#991b1b"

# -- links -------------------------------------------------------------------------------
LINK_CALM: Final = "#16a34a"  # green: utilization < CALM_BELOW
LINK_BUSY: Final = "#d97706"  # amber: CALM_BELOW <= utilization < threshold
LINK_HOT: Final = "#dc2626"  # red: utilization >= threshold, or saturated
LINK_UNKNOWN: Final = "#94a3b8"  # blue-grey: capacity unknown, so no utilization
LINK_DOWN: Final = "#b08d9a"  # muted mauve, drawn dashed: no replies

# -- chart series --------------------------------------------------------------------------
RTT_MEDIAN: Final = "#2563eb"
RTT_BAND: Final = "#93c5fd"
RTT_BASELINE: Final = "#0f766e"  # the idle RTT under the median (teal, dashed)
RX: Final = "#0891b2"  # cyan
TX: Final = "#7c3aed"  # violet
CAPACITY: Final = "#475569"
THRESHOLD: Final = LINK_HOT

# -- nodes -------------------------------------------------------------------------------
NODE_SELF: Final = ACCENT
NODE_SELF_RING: Final = ACCENT_DARK
NODE_PEER: Final = "#334155"
NODE_PEER_RING: Final = "#0f172a"
NODE_UNREACHABLE: Final = "#ffffff"
NODE_UNREACHABLE_RING: Final = "#9ca3af"
NODE_UNKNOWN: Final = "#f3f4f6"
NODE_UNKNOWN_RING: Final = "#c0c4cc"

# -- health (status dots, state words) ---------------------------------------------------
HEALTH: Final[dict[str, str]] = {
    "ok": LINK_CALM,
    "warn": LINK_BUSY,
    "bad": LINK_HOT,
    "down": LINK_DOWN,
    "unknown": LINK_UNKNOWN,
}
#: a link state as reported by the agent -> health key
STATE_HEALTH: Final[dict[str, str]] = {"up": "ok", "saturated": "bad", "down": "down"}


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
EXO: Final = "#0aa3c2"

KIND_COLOR: Final[dict[str, str]] = {
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

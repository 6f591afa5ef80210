"""The topology map's geometry and how a node reads, as pure functions of the graph (no
widgets): where each node sits, an edge's curve, whether two badges overlap, a node's
colours and its name's markup. `ui/topology/view.py` draws them and handles the mouse."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from PySide6.QtCore import Qt

from exotray.core.topology import Node
from exotray.ui.style import theme
from exotray.ui.topology.tips import esc


def layout(nodes: Sequence[Node]) -> dict[str, tuple[float, float]]:
    """Deterministic positions on the unit circle: self on top, the rest clockwise."""
    selfs = [n for n in nodes if n.is_self]
    others = sorted((n for n in nodes if not n.is_self), key=lambda n: (n.name, n.id))
    order = selfs[:1] + others + selfs[1:]
    count = len(order)
    if count == 1:
        return {order[0].id: (0.0, 0.0)}
    # two nodes read best side by side; otherwise the first one sits at the top
    start = math.pi if count == 2 else math.pi / 2
    out = {}
    for i, n in enumerate(order):
        angle = start - 2 * math.pi * i / count
        out[n.id] = (round(math.cos(angle), 12), round(math.sin(angle), 12))
    return out


def bezier(p0: np.ndarray, c: np.ndarray, p2: np.ndarray, t: np.ndarray) -> np.ndarray:
    t = t[:, None]
    return (1 - t) ** 2 * p0 + 2 * t * (1 - t) * c + t**2 * p2


def node_style(n: Node) -> tuple[str, str, float, Qt.PenStyle]:
    if not n.known:
        return theme.NODE_UNKNOWN, theme.NODE_UNKNOWN_RING, 1.5, Qt.PenStyle.DotLine
    if not n.reachable:
        return theme.NODE_UNREACHABLE, theme.NODE_UNREACHABLE_RING, 2.0, Qt.PenStyle.DashLine
    if n.is_self:
        return theme.NODE_SELF, theme.NODE_SELF_RING, 2.5, Qt.PenStyle.SolidLine
    return theme.NODE_PEER, theme.NODE_PEER_RING, 1.5, Qt.PenStyle.SolidLine

def label_markup(n: Node, compact: bool) -> str:
    name = esc(n.name)
    if n.is_self:
        head = f'<span style="color:{theme.ACCENT_DARK}; font-weight:600">{name}</span>'
    elif not n.known or not n.reachable:
        head = f'<span style="color:{theme.TEXT_MUTED}">{name}</span>'
    else:
        head = f'<span style="color:{theme.TEXT}; font-weight:600">{name}</span>'
    if compact:
        return head
    if not n.known:
        note = "not seen yet"
    elif not n.reachable:
        age = f" · {n.age_s:.0f} s ago" if n.age_s is not None else ""
        note = f"unreachable{age}"
    elif n.is_self:
        note = "this machine"
    else:
        return f'<div style="text-align:center">{head}</div>'
    return (
        f'<div style="text-align:center">{head}<br>'
        f'<span style="color:{theme.TEXT_FAINT}; font-size:8pt">{note}</span></div>'
    )


def label_geometry(
    xy: tuple[float, float], size: float, radial: bool, gap: float
) -> tuple[tuple[float, float], float, tuple[float, float], float]:
    """(position, angle in degrees, anchor, font size) of the name of a node at `xy`,
    `gap` view units outside the circle; `radial`: crowded circles, where names point
    outward along the radius."""
    x, y = xy
    if not (x or y):
        return (0.0, -gap), 0.0, (0.5, 0.0), size
    angle = math.atan2(y, x)
    g = 1 + gap / math.hypot(x, y)
    pos = (x * g, y * g)
    if radial:
        left = math.cos(angle) < -1e-9
        deg = math.degrees(angle) + (180 if left else 0)
        return pos, deg, ((1.0, 0.5) if left else (0.0, 0.5)), size
    anchor = ((1 - math.cos(angle)) / 2, (1 + math.sin(angle)) / 2)
    return pos, 0.0, anchor, size


def overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


__all__ = ["bezier", "label_geometry", "label_markup", "layout", "node_style", "overlap"]

"""What the mouse is over on the topology map: the node within its drawn circle, else the
edge within ``HIT_PX`` either side of its drawn polyline (topology_edges.edge_geometry's
segments), tested in pixels. No state: topology/view.py asks on each move and click,
after the edges' badges (topology_badges.EdgeBadges.hit), and shows topology/tips.py's
tooltip of what it found."""

from __future__ import annotations

from typing import Final

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF

#: half-width of the clickable band around an edge, in pixels
HIT_PX: Final = 6.0


def pixel_size(vb: pg.ViewBox) -> float | None:
    """Size of a screen pixel in view units, None before the view has a size."""
    if vb.width() < 10 or vb.height() < 10:
        return None
    px, py = vb.viewPixelSize()
    return max(px, py) if px > 0 and py > 0 else None


def node_at(vb: pg.ViewBox, scene_pos: QPointF, pos: dict[str, tuple[float, float]],
            radius_px: float) -> str | None:
    """The node whose centre (`pos`, view units) is nearest a scene point, if it is within
    `radius_px` pixels of it."""
    px = pixel_size(vb)
    if px is None or not pos:
        return None
    p = vb.mapSceneToView(scene_pos)
    ids = list(pos)
    xy = np.array([pos[i] for i in ids])
    d = np.hypot(xy[:, 0] - p.x(), xy[:, 1] - p.y())
    k = int(np.argmin(d))
    return ids[k] if d[k] <= radius_px * px else None


def edge_at(vb: pg.ViewBox, scene_pos: QPointF, seg0: np.ndarray, seg1: np.ndarray,
            seg_edge: np.ndarray) -> int | None:
    """The index of the edge whose drawn line (segments seg0 -> seg1, segment i of edge
    seg_edge[i]) passes within HIT_PX pixels of a scene point, the nearest one."""
    px = pixel_size(vb)
    if px is None or not len(seg_edge):
        return None
    p = vb.mapSceneToView(scene_pos)
    q = np.array([p.x(), p.y()])
    d = seg1 - seg0
    ll = np.einsum("ij,ij->i", d, d)
    t = np.clip(np.einsum("ij,ij->i", q - seg0, d) / np.where(ll > 0, ll, 1), 0, 1)
    dist = np.hypot(*(seg0 + t[:, None] * d - q).T)
    k = int(np.argmin(dist))
    return int(seg_edge[k]) if dist[k] <= HIT_PX * px else None

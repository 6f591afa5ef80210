"""The topology map's node names: one pre-rendered pixmap per name, drawn unscaled.

A name is rich text (the node's name, and under it "this machine", "unreachable · 12 s
ago" …), laid out once by a QTextDocument and painted into a pixmap already rotated to
its angle (past 12 nodes the names point outward along the radius) at the screen's pixel
ratio. The item ignores the view's transformations, so a repaint is one plain copy of
that pixmap per name: no text layout and no rotated (filtered) pixmap copy each time.
64 rotated names drawn by rich-text items, even from a pixmap cache, were about half of
a 64-node repaint.

`NodeLabels` keeps one `NodeLabel` per node id, re-renders a name only when its markup,
font, angle or anchor change, and removes the names of nodes that left.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFont, QPainter, QPixmap, QTextDocument, QTransform
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPixmapItem

#: (position in view units, angle in degrees counterclockwise, anchor, font size)
Geometry = tuple[tuple[float, float], float, tuple[float, float], float]
#: (font, its `toString()`, default text colour, the screen's pixel ratio)
Look = tuple[QFont, str, str, float]


class NodeLabel(QGraphicsPixmapItem):
    """One node's name. Its position is the anchor point, in view units; the pixmap is
    placed around it in screen pixels, whatever the zoom."""

    def __init__(self) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations, True)
        self.setShapeMode(QGraphicsPixmapItem.ShapeMode.BoundingRectShape)
        self._doc = QTextDocument()
        self._html: str | None = None
        self._key: tuple[Any, ...] | None = None
        self._pos: tuple[float, float] | None = None

    def toPlainText(self) -> str:  # the name QGraphicsTextItem uses
        return self._doc.toPlainText()

    def html(self) -> str | None:
        return self._html

    def text_size(self) -> tuple[float, float]:
        """The laid-out text's size in pixels, before rotation."""
        size = self._doc.size()
        return size.width(), size.height()

    def angle(self) -> float:
        return self._key[2] if self._key else 0.0

    def set_label(self, html: str, geom: Geometry, look: Look) -> bool:
        """Show `html` at `geom` in `look`; renders again only when something drawn
        changed. True when it did."""
        pos, angle, anchor, _size = geom
        font, font_key, color, dpr = look
        key = (html, font_key, angle, anchor, color, dpr)
        if key == self._key:
            if pos != self._pos:
                self._pos = pos
                self.setPos(*pos)
            return False
        self._pos = pos
        self.setPos(*pos)
        self._key = key
        self._html = html
        doc = self._doc
        doc.setDefaultFont(font)
        doc.setDefaultStyleSheet(f"body {{ color: {color}; }}")
        doc.setHtml(html)
        w, h = doc.size().width(), doc.size().height()
        # The text's frame: the anchor point at the origin, rotated like pg.TextItem
        # (a positive angle turns the text counterclockwise on screen).
        t = QTransform()
        t.rotate(-angle)
        t.translate(-w * anchor[0], -h * anchor[1])
        box = t.mapRect(QRectF(0, 0, w, h))
        x0, y0 = math.floor(box.left()) - 1, math.floor(box.top()) - 1
        pw, ph = math.ceil(box.right()) + 1 - x0, math.ceil(box.bottom()) + 1 - y0
        pix = QPixmap(max(1, math.ceil(pw * dpr)), max(1, math.ceil(ph * dpr)))
        pix.setDevicePixelRatio(dpr)
        pix.fill(Qt.GlobalColor.transparent)
        p = QPainter(pix)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, True)
        p.translate(-x0, -y0)
        p.setTransform(t, combine=True)
        doc.drawContents(p)
        p.end()
        self.setPixmap(pix)
        self.setOffset(QPointF(x0, y0))
        return True


class NodeLabels:
    """The names of a map's nodes, one `NodeLabel` each, kept by node id."""

    def __init__(self, add: Any, remove: Any, z: float) -> None:
        self._add, self._remove, self._z = add, remove, z
        self._items: dict[str, NodeLabel] = {}

    def __getitem__(self, node_id: str) -> NodeLabel:
        return self._items[node_id]

    def items(self) -> list[NodeLabel]:
        return list(self._items.values())

    def show(self, node_id: str, html: str, geom: Geometry, look: Look) -> None:
        item = self._items.get(node_id)
        if item is None:
            item = NodeLabel()
            item.setZValue(self._z)
            self._add(item)
            self._items[node_id] = item
        item.set_label(html, geom, look)

    def keep_only(self, node_ids: Iterable[str]) -> None:
        keep = set(node_ids)
        for nid in [n for n in self._items if n not in keep]:
            self._remove(self._items.pop(nid))


__all__ = ["Geometry", "Look", "NodeLabel", "NodeLabels"]

"""Names and labels from peers' snapshots are shown as plain text everywhere (issue 18, 5).

A peer named `<img src="/dev/zero">` made the link details' title (a QLabel in Qt's
automatic text format) allocate 2.2 GB and abort; `<img src="FIFO">` hung the GUI. Here
the hostile names point at a real 600 x 600 PNG instead, so that a regression shows as a
label 600 px tall (and a failed test) rather than as a crashed or hung test run. The
first test proves that this detector works: rich text does load that image.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip("pyqtgraph")
pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage, QTextDocument
from PySide6.QtWidgets import QLabel

from exotray.core import schema
from exotray.ui.link.model import COLUMNS
from exotray.ui.window.dashboard import MainWindow

SELF_ID = "c2f46f1384be"
STUDIO2 = "a4f99a915b13"
GPU3 = "e407eae12b94"
SAT = "0386def512a998f6"  # studio-1 -> studio-2 over xt1a
STUDIO2_TO_GPU3 = "0a8f7006d20a3968"  # measured by studio-2: its names, its interface
IMG = '<img src="big.png">'  # relative: the test runs in tmp_path, where big.png is
BOLD = "<b>x</b>"
AMP = "a & b"
LABEL = "<b>x</b> & <i>y</i>"
IFACE = '<img src="big.png">0'
HOSTILE = (IMG, BOLD, AMP, LABEL, IFACE)
BIG = 600  # px: the image a rich-text rendering would load


@pytest.fixture
def big_png(tmp_path, monkeypatch) -> None:
    img = QImage(BIG, BIG, QImage.Format.Format_RGB32)
    img.fill(QColor("red"))
    assert img.save(str(tmp_path / "big.png"))
    monkeypatch.chdir(tmp_path)


def hostile(cluster: dict[str, Any]) -> dict[str, Any]:
    """The recorded cluster with studio-2 named IMG, gpu-3 BOLD, this node AMP, and
    studio-2's interface xt2a called IFACE with the label LABEL."""
    c = copy.deepcopy(cluster)
    names = {"studio-2": IMG, "gpu-3": BOLD, "studio-1": AMP}
    for snap in c["nodes"]:
        snap["node"]["name"] = names[snap["node"]["name"]]
        for lk in snap["links"]:
            lk["peer_name"] = names.get(lk["peer_name"], lk["peer_name"])
            if snap["node"]["id"] == STUDIO2 and lk["local_interface"] == "xt2a":
                lk["local_interface"], lk["local_label"] = IFACE, LABEL
        for iface in snap["interfaces"]:
            if snap["node"]["id"] == STUDIO2 and iface["name"] == "xt2a":
                iface["name"], iface["label"] = IFACE, LABEL
    return c


def rendered(text: str) -> QTextDocument:
    """`text` laid out the way a tooltip or an auto-format label shows it: as rich text
    when Qt guesses it is, else as plain text."""
    from PySide6 import QtGui

    doc = QTextDocument()
    if QtGui.Qt.mightBeRichText(text):
        doc.setHtml(text)
    else:
        doc.setPlainText(text)
    doc.setTextWidth(400)
    return doc


def test_the_names_are_valid_and_rich_text_would_load_the_image(qtbot, big_png) -> None:
    """The hostile names pass validation (markup characters are ordinary text), and
    the detector works: an auto-format label with IMG is as tall as the image."""
    for name in HOSTILE:
        assert schema.unsafe_char(name) is None and len(name) <= 64
    auto = QLabel(f"→ {IMG}")
    qtbot.addWidget(auto)
    assert auto.sizeHint().height() >= BIG
    assert rendered(f"x {IMG}").size().height() >= BIG


@pytest.fixture
def window(qtbot: Any, cluster: dict, big_png) -> MainWindow:
    w = MainWindow(None)
    qtbot.addWidget(w)
    w.resize(1280, 820)
    w.show()
    qtbot.waitExposed(w)
    w.set_cluster(hostile(cluster))
    return w


def _shown_labels(w: MainWindow) -> list[QLabel]:
    return [lb for lb in w.findChildren(QLabel)
            if lb.isVisibleTo(w) and any(h in lb.text() for h in HOSTILE)]


def _assert_plain(w: MainWindow, qtbot: Any) -> None:
    labels = _shown_labels(w)
    assert labels
    for lb in labels:
        assert lb.textFormat() == Qt.TextFormat.PlainText, lb.text()
        lb.grab()  # painted: a rich-text label would load the image now
        assert lb.sizeHint().height() < 100, (lb.text(), lb.sizeHint())


def test_details_title_and_via_line_show_the_literal_names(qtbot, window: MainWindow) -> None:
    window.select_link(SAT)
    n = window.details.numbers()
    assert n["title"] == f"{AMP} → {IMG}"
    _assert_plain(window, qtbot)

    window.select_link(STUDIO2_TO_GPU3)  # studio-2's own link: its interface, its words
    n = window.details.numbers()
    assert n["title"] == f"{IMG} → {BOLD}"
    assert n["interface"] == f"via {LABEL} ({IFACE})"
    assert IFACE in n["note"]
    _assert_plain(window, qtbot)


def test_every_label_in_the_window_is_plain(window: MainWindow) -> None:
    """Not only those showing a peer's text today: any label can get some tomorrow."""
    window.select_link(STUDIO2_TO_GPU3)
    rich = [lb.text() for lb in window.findChildren(QLabel)
            if lb.textFormat() != Qt.TextFormat.PlainText and lb.text()]
    assert rich == []


def _row(w: MainWindow, link_id: str) -> dict[str, Any]:
    r = w.table.link_ids().index(link_id)
    return {name: w.table.proxy.index(r, c) for c, name in enumerate(COLUMNS)}


def test_table_cells_and_tooltips_show_the_literal_text(window: MainWindow) -> None:
    row = _row(window, STUDIO2_TO_GPU3)
    assert row["From"].data() == IMG
    assert row["To"].data().startswith(f"{BOLD} (")
    assert row["Via"].data() == f"{LABEL} ({IFACE})"
    for col in ("Iface RX", "Iface TX"):
        tip = row[col].data(Qt.ItemDataRole.ToolTipRole)
        doc = rendered(tip)
        assert doc.toPlainText() == (f"Traffic shown is all traffic of the local interface "
                                     f"{IFACE}, not only this link's.")
        assert doc.size().height() < 100


def test_topology_tooltips_labels_and_badges_are_plain(window: MainWindow) -> None:
    topo = window.topology
    for link_id in (SAT, STUDIO2_TO_GPU3):
        doc = rendered(topo.edge_tooltip(link_id))
        text = doc.toPlainText()
        assert doc.size().height() < 400
        ends = {AMP, IMG} if link_id == SAT else {IMG, BOLD}
        assert set(text.splitlines()[0].split("  ")[0].split(" ⇄ ")) == ends
        badge = topo.badge_item(link_id)
        assert badge is not None
        assert badge.textItem.toPlainText() == topo.badge_text(link_id)
    assert f"{LABEL} ({IFACE})" in rendered(topo.edge_tooltip(STUDIO2_TO_GPU3)).toPlainText()
    for node_id, name in ((STUDIO2, IMG), (GPU3, BOLD), (SELF_ID, AMP)):
        label = topo.label_item(node_id)
        assert label.toPlainText().splitlines()[0] == name
        assert label.boundingRect().height() < 100
        node_doc = rendered(topo._node_tooltip(node_id))
        assert node_doc.toPlainText().splitlines()[0].startswith(name)
        assert node_doc.size().height() < 200

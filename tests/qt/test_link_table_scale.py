"""The link table at a big cluster's size (issue 15): a new view tells Qt only about the
rows that changed, sorting and selection survive updates that reorder rows, columns fit
realistic names without a stretched column, and the row says whose traffic it shows.
Real widgets, offscreen."""

from __future__ import annotations

import copy
from typing import Any

from PySide6.QtCore import Qt

from exotray.core import fmt
from exotray.ui.link.model import COLUMNS, LINK_ID
from exotray.ui.link.table import LinkTable

OWNER, RX, UTIL = COLUMNS.index("Traffic of"), COLUMNS.index("Iface RX"), \
    COLUMNS.index("Utilization")


def _mesh(n: int) -> dict[str, Any]:
    """A full mesh of n nodes, one interface each (a /v1/cluster view's shape)."""
    ids = [f"n{i:03d}" for i in range(n)]
    nodes = []
    for i, nid in enumerate(ids):
        links = [{
            "id": f"{nid}-{other}", "peer_id": other, "peer_name": f"studio-{j}.local",
            "local_interface": "en0", "local_label": "Ethernet",
            "peer_address": f"10.213.1.{j}", "peer_port": 52480, "state": "up",
            "rtt_ms": 0.4 + j / 100, "rtt_min_ms": 0.3, "rtt_max_ms": 0.9, "jitter_ms": 0.02,
            "loss": 0.0, "rx_bytes_per_s": 1000.0 * (j + 1), "tx_bytes_per_s": 2000.0,
            "capacity_bytes_per_s": 1.25e9, "capacity_source": "nic",
            "utilization": 2000.0 / 1.25e9,
        } for j, other in enumerate(ids) if other != nid]
        nodes.append({"node": {"id": nid, "name": f"studio-{i}.local", "version": "0.1.0"},
                      "interfaces": [{"name": "en0", "kind": "ethernet", "label": "Ethernet",
                                      "addresses": [f"10.213.1.{i}"]}],
                      "links": links, "age_s": 0.1, "reachable": True})
    return {"self": ids[0], "nodes": nodes}


def _table(qtbot: Any) -> LinkTable:
    t = LinkTable()
    qtbot.addWidget(t)
    t.resize(1200, 400)
    t.show()
    qtbot.waitExposed(t)
    return t


def test_an_update_tells_qt_only_the_rows_that_changed(qtbot: Any) -> None:
    t = _table(qtbot)
    view = _mesh(16)  # 240 links
    t.set_cluster(view)
    rows: list[tuple[int, int]] = []
    t.links.dataChanged.connect(lambda a, b: rows.append((a.row(), b.row())))
    resets: list[int] = []
    t.links.modelReset.connect(lambda: resets.append(1))
    t.links.layoutChanged.connect(lambda: resets.append(2))
    t.set_cluster(copy.deepcopy(view))  # the same numbers: nothing to tell
    assert rows == [] and resets == []
    again = copy.deepcopy(view)
    link = again["nodes"][3]["links"][5]
    link["rtt_ms"] = 12.5
    t.set_cluster(again)
    r = t.link_ids().index(link["id"])
    assert rows == [(r, r)] and resets == []
    assert t.links.index(r, COLUMNS.index("RTT")).data() == "12.5 ms"


def test_sort_and_selection_survive_updates_that_reorder_rows(qtbot: Any) -> None:
    t = _table(qtbot)
    view = _mesh(8)
    t.set_cluster(view)
    t.sortByColumn(RX, Qt.SortOrder.DescendingOrder)
    chosen = view["nodes"][2]["links"][0]["id"]
    t.select_link(chosen)
    for step in range(3):  # the rates move: the order changes each time
        view = copy.deepcopy(view)
        for node in view["nodes"]:
            for i, lk in enumerate(node["links"]):
                lk["rx_bytes_per_s"] = 1000.0 * ((i * 7 + step * 3) % 11 + 1)
        t.set_cluster(view)
        keys = [t.links.index(r, RX).data(Qt.ItemDataRole.UserRole + 2)
                for r in range(t.links.rowCount())]
        assert keys == sorted(keys, reverse=True)
        assert t.selected_link() == chosen
        selected = t.selectionModel().selectedRows()[0]
        assert selected.data(LINK_ID) == chosen
    # a row that goes and comes back keeps the table sorted, the selection stays put
    fewer = copy.deepcopy(view)
    fewer["nodes"][5]["links"].pop()
    t.set_cluster(fewer)
    t.set_cluster(view)
    assert t.links.rowCount() == 56 and t.selected_link() == chosen


def test_columns_fit_realistic_names_without_a_stretched_column(qtbot: Any) -> None:
    t = _table(qtbot)
    view = _mesh(3)
    lk = view["nodes"][0]["links"][0]
    lk.update(local_interface="bridge0", local_label="Thunderbolt Bridge",
              member_interface="en3")
    view["nodes"][0]["interfaces"].append({"name": "en3", "kind": "thunderbolt",
                                           "label": "Thunderbolt 2", "members": []})
    t.set_cluster(view)
    for c, name in enumerate(COLUMNS):
        if not t.isColumnHidden(c):
            assert t.columnWidth(c) >= t.sizeHintForColumn(c), name
    via = COLUMNS.index("Via")
    assert t.links.index(t.link_ids().index(lk["id"]), via).data() == \
        "Thunderbolt Bridge (bridge0) via Thunderbolt 2 (en3)"
    state = COLUMNS.index("State")
    assert t.columnWidth(state) < 120  # "saturated" and some air, not the space left
    assert not t.horizontalHeader().stretchLastSection()


def test_the_row_says_whose_traffic_it_shows(qtbot: Any) -> None:
    t = _table(qtbot)
    view = _mesh(3)
    plain, member, total = view["nodes"][0]["links"][0], view["nodes"][0]["links"][1], \
        view["nodes"][1]["links"][0]
    member.update(local_interface="bridge0", member_interface="en3")
    total.update(local_interface="bridge1", capacity_bytes_per_s=None, utilization=0.0)
    view["nodes"][1]["interfaces"].append({"name": "bridge1", "members": ["en5", "en6"]})
    t.set_cluster(view)

    def cell(link: dict, c: int, role: Any = Qt.ItemDataRole.DisplayRole) -> Any:
        return t.links.index(t.link_ids().index(link["id"]), c).data(role)

    assert cell(plain, OWNER) == "en0 (interface)"
    assert cell(member, OWNER) == "en3 (bridge cable)"
    assert cell(total, OWNER) == "bridge1 (all ports)"
    tip = Qt.ItemDataRole.ToolTipRole
    assert "all traffic of the local interface en0" in cell(plain, OWNER, tip)
    assert "the cable of the bridge bridge0" in cell(member, RX, tip)
    # traffic, no capacity: no "0 %", the dash the tooltip shows
    assert cell(total, UTIL) == fmt.DASH
    assert cell(total, RX) == "1.0 kB/s"

import json
from pathlib import Path

from exotray.core.sd import file_sd

CLUSTER = json.loads((Path(__file__).parent.parent / "qt" / "fixtures" / "cluster.json")
                     .read_text())


def test_file_sd_from_recorded_cluster():
    groups = file_sd(CLUSTER, 52480)
    assert [g["labels"]["exotray_node"] for g in groups] == ["studio-1", "gpu-3", "studio-2"]
    # this node: the address of an interface that carries its links
    assert groups[0]["targets"] == ["10.213.0.1:52480"]
    # peers: the address they are reached at
    assert groups[1]["targets"] == ["10.213.0.3:52480"]
    assert groups[2]["targets"][0] in ("10.213.0.2:52480", "10.213.1.2:52480")
    assert all(set(g["labels"]) == {"exotray_node", "exotray_node_id"} for g in groups)


def test_empty_cluster():
    assert file_sd({"nodes": []}, 1) == []

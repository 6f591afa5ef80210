"""A wired NIC's supported maximum is asked (a child process in an agent: hw_ethtool)
only when the NIC appears, is re-created or renegotiates — not at every hardware read."""

from __future__ import annotations

from pathlib import Path

from exotray.agent.hw.read import LinuxReader


class CountingEthtool:
    """pyroute2.ethtool.Ethtool's get_link_mode, counting the questions."""

    def __init__(self, modes: list[str]) -> None:
        self.modes = modes
        self.asked: list[str] = []

    def __call__(self):
        return self

    def get_link_mode(self, name):
        self.asked.append(name)

        class Mode:
            supported_modes = self.modes
        return Mode()

    def close(self):
        pass


def _nic(root: Path, name: str, speed: str, ifindex: str) -> None:
    (root / name).mkdir(exist_ok=True)
    (root / name / "speed").write_text(speed + "\n")
    (root / name / "ifindex").write_text(ifindex + "\n")


def test_asked_when_new_recreated_or_renegotiated(tmp_path: Path):
    _nic(tmp_path, "enp1s0", "1000", "2")
    tool = CountingEthtool(["1000baseT/Full", "10000baseT/Full"])
    reader = LinuxReader(sys_net=tmp_path, ethtool_factory=tool)
    kinds = {"enp1s0": "ethernet"}
    for _ in range(3):
        assert reader.links(kinds)["enp1s0"].max_mbit == 10000.0
    assert tool.asked == ["enp1s0"]
    _nic(tmp_path, "enp1s0", "10000", "2")  # renegotiated
    assert reader.links(kinds)["enp1s0"].speed_mbit == 10000.0
    _nic(tmp_path, "enp1s0", "10000", "7")  # unplugged and plugged: a new interface
    reader.links(kinds)
    assert tool.asked == ["enp1s0"] * 3
    reader.links({})  # gone: forgotten
    reader.links(kinds)
    assert len(tool.asked) == 4

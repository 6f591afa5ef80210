"""mDNS records: what is accepted as a peer, and why everything else is ignored."""

from __future__ import annotations

import ipaddress

import pytest

from exotray.agent.peers.discovery import RecordRejected, parse_record

NETS = [ipaddress.IPv4Network("10.213.0.0/24"), ipaddress.IPv4Network("169.254.0.0/16")]
OWN = "aaaaaaaaaaaa"
GOOD_TXT = {b"id": b"bbbbbbbbbbbb", b"name": b"studio-2", b"version": b"0.1.0", b"proto": b"1"}


SERVICE = "studio-2-b._exotray._tcp.local."


def _parse(port=52480, txt=GOOD_TXT, addrs=("10.213.0.2",), service=SERVICE):
    return parse_record(service, port, txt, addrs, own_id=OWN,
                        own_service="me-a._exotray._tcp.local.", local_networks=NETS)


def test_good_record_with_several_addresses():
    rec = _parse(addrs=("169.254.10.2", "10.213.0.2", "10.213.0.2"))
    assert rec.id == "bbbbbbbbbbbb" and rec.name == "studio-2" and rec.port == 52480
    # Thunderbolt Bridge (link-local) and Ethernet: one link each, duplicates folded.
    assert rec.addresses == ("10.213.0.2", "169.254.10.2")


def test_addresses_outside_local_subnets_are_dropped_not_the_record():
    rec = _parse(addrs=("10.213.0.2", "192.0.2.7", "fe80::1", "127.0.0.1"))
    assert rec.addresses == ("10.213.0.2",)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        pytest.param({"service": "me-a._exotray._tcp.local."}, "own", id="our-own-record"),
        pytest.param({"port": 0}, "bad_port", id="port-0"),
        pytest.param({"port": 70000}, "bad_port", id="port-70000"),
        pytest.param({"port": None}, "bad_port", id="no-port"),
        pytest.param({"txt": {}}, "no_txt", id="no-txt"),
        pytest.param({"txt": {b"": None}}, "no_txt", id="empty-txt-string"),
        pytest.param({"txt": {**GOOD_TXT, b"pad": b"x" * 600}}, "txt_too_large", id="huge-txt"),
        pytest.param({"txt": {**GOOD_TXT, b"id": None}}, "bad_id", id="id-without-value"),
        pytest.param({"txt": {k: v for k, v in GOOD_TXT.items() if k != b"id"}}, "bad_id",
                     id="missing-id"),
        pytest.param({"txt": {**GOOD_TXT, b"id": b"x" * 65}}, "bad_id", id="id-too-long"),
        pytest.param({"txt": {**GOOD_TXT, b"id": b"../../etc"}}, "bad_id", id="id-bad-chars"),
        pytest.param({"txt": {**GOOD_TXT, b"id": OWN.encode()}}, "spoofed_id", id="our-id"),
        pytest.param({"txt": {**GOOD_TXT, b"name": b"\x1b[31mred"}}, "bad_txt", id="name-ctrl"),
        pytest.param({"txt": {**GOOD_TXT, b"name": b"\xff\xfe"}}, "bad_txt", id="name-not-utf8"),
        pytest.param({"txt": {k: v for k, v in GOOD_TXT.items() if k != b"name"}}, "bad_txt",
                     id="missing-name"),
        pytest.param({"txt": {**GOOD_TXT, b"proto": b"one"}}, "bad_txt", id="proto-not-int"),
        pytest.param({"txt": {**GOOD_TXT, b"proto": b"2"}}, "version_mismatch",
                     id="newer-protocol"),
        pytest.param({"addrs": ("192.0.2.7",)}, "no_address", id="address-on-no-subnet"),
        pytest.param({"addrs": ()}, "no_address", id="no-address"),
        pytest.param({"addrs": ("not-an-ip",)}, "no_address", id="garbage-address"),
    ],
)
def test_rejected(kwargs, reason):
    with pytest.raises(RecordRejected) as e:
        _parse(**kwargs)
    assert e.value.reason == reason

"""mDNS records: a TXT name is shown by every peer's UI, so it follows the snapshot's rule
(no control, format or separator characters) and ordinary Unicode names pass."""

from __future__ import annotations

import ipaddress

import pytest

from exotray.agent.peers.discovery import RecordRejected, parse_record

NETS = [ipaddress.IPv4Network("10.213.0.0/24")]
GOOD_TXT = {b"id": b"bbbbbbbbbbbb", b"version": b"0.1.0", b"proto": b"1"}


def _parse(name: str):
    return parse_record("x-b._exotray._tcp.local.", 52480,
                        {**GOOD_TXT, b"name": name.encode()}, ("10.213.0.2",),
                        own_id="aaaaaaaaaaaa", own_service=None, local_networks=NETS)


@pytest.mark.parametrize(("name", "why"), [
    ("studio-\u202eexe.gnp", "U+202E, a format character"),
    ("mbp\u200f", "U+200F, a format character"),
    ("\u2066lab\u2069", "U+2066, a format character"),
    ("a\u2028b", "U+2028, a line separator"),
    ("a\u2029b", "U+2029, a paragraph separator"),
    ("bell\x07", "U+0007, a control character"),
    ("csi\x9b31m", "U+009B, a control character"),
])
def test_names_with_unsafe_characters_are_refused_saying_which(name: str, why: str) -> None:
    with pytest.raises(RecordRejected) as e:
        _parse(name)
    assert e.value.reason == "bad_txt"
    assert why in e.value.detail


@pytest.mark.parametrize("name", ["studio-2", "Mac Studio de Zoë", "工作站", "<b>x</b> & y",
                                  "کامپیوتر\u200cمن"])
def test_ordinary_names_are_accepted(name: str) -> None:
    assert _parse(name).name == name


def test_name_length_still_bounded() -> None:
    assert _parse("x" * 64).name == "x" * 64
    with pytest.raises(RecordRejected):
        _parse("x" * 65)

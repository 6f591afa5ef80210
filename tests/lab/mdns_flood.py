"""An mDNS flood, as any host on a LAN can send it: unsolicited DNS-SD answers (PTR, SRV,
TXT, A) for many `_exotray._tcp` services, built with python-zeroconf's encoder and sent
to 224.0.0.251:5353. Run inside a lab namespace only (LAB.md); bounded in rounds.

    python mdns_flood.py SPEC.json
    SPEC: {"source": "10.213.x.y", "rounds": 3, "gap_s": 2.0,
           "services": [{"name": "...", "id": "...", "port": 41000,
                         "addresses": ["10.213.x.z", ...]}, ...],
           "unicast": {"to": "10.213.x.w", "services": [...]}}   (optional: these are
    sent, once a round, by unicast to port 5353 of that address)
"""

from __future__ import annotations

import json
import socket
import sys
import time

from zeroconf import DNSAddress, DNSOutgoing, DNSPointer, DNSService, DNSText
from zeroconf.const import (
    _CLASS_IN,
    _CLASS_UNIQUE,
    _FLAGS_AA,
    _FLAGS_QR_RESPONSE,
    _TYPE_A,
    _TYPE_PTR,
    _TYPE_SRV,
    _TYPE_TXT,
)

from exotray import PROTO

TYPE = "_exotray._tcp.local."
TTL = 120


def _txt(props: dict[str, str]) -> bytes:
    out = b""
    for k, v in props.items():
        item = f"{k}={v}".encode()
        out += bytes([len(item)]) + item
    return out


def packets(services: list[dict]) -> list[bytes]:
    out: list[bytes] = []
    for s in services:
        msg = DNSOutgoing(_FLAGS_QR_RESPONSE | _FLAGS_AA)
        name = f"{s['name']}.{TYPE}"
        server = f"{s['name']}.local."
        msg.add_answer_at_time(DNSPointer(TYPE, _TYPE_PTR, _CLASS_IN, TTL, name), 0)
        msg.add_answer_at_time(DNSService(name, _TYPE_SRV, _CLASS_IN | _CLASS_UNIQUE, TTL,
                                          0, 0, s["port"], server), 0)
        msg.add_answer_at_time(DNSText(name, _TYPE_TXT, _CLASS_IN | _CLASS_UNIQUE, TTL,
                                       _txt({"id": s["id"], "name": s["name"][:60],
                                             "version": "0", "proto": str(PROTO)})), 0)
        for a in s["addresses"]:
            msg.add_answer_at_time(DNSAddress(server, _TYPE_A, _CLASS_IN | _CLASS_UNIQUE, TTL,
                                              socket.inet_aton(a)), 0)
        out.extend(msg.packets())
    return out


def main() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(spec["source"]))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((spec["source"], 5353))  # responses come from the mDNS port
    pkts = packets(spec["services"])
    uni = spec.get("unicast") or {"to": None, "services": []}
    uni_pkts = packets(uni["services"])
    sent = 0
    for r in range(int(spec["rounds"])):  # bounded
        for i, p in enumerate(pkts):
            sock.sendto(p, ("224.0.0.251", 5353))
            sent += 1
            if i % 50 == 49:
                time.sleep(0.005)
        for p in uni_pkts:
            sock.sendto(p, (uni["to"], 5353))
            sent += 1
        if r + 1 < int(spec["rounds"]):
            time.sleep(float(spec["gap_s"]))
    print(json.dumps({"packets": sent, "per_round": len(pkts)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

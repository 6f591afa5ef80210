"""Prometheus file-based service discovery from a cluster view (`exotray prometheus-sd`).

One target group per agent: its address:port (the address its peers reach it at, or for
this node the address of an interface that carries one of its links) and labels naming
the node. Prometheus' `file_sd_configs` re-reads the file when it changes.
"""

from __future__ import annotations

import ipaddress
from typing import Any


def _own_address(snap: dict[str, Any]) -> str:
    by_name = {i["name"]: i for i in snap.get("interfaces", [])}
    for lk in snap.get("links", []):
        iface = by_name.get(lk.get("local_interface") or "")
        for a in (iface or {}).get("addresses", []):
            if ":" not in a:
                return a
    for i in snap.get("interfaces", []):
        for a in i.get("addresses", []):
            if ":" not in a and not ipaddress.ip_address(a).is_loopback:
                return a
    return "127.0.0.1"


def _host(addr: str) -> str:
    return f"[{addr}]" if ":" in addr else addr


def file_sd(cluster: dict[str, Any], port: int) -> list[dict[str, Any]]:
    nodes = cluster.get("nodes", [])
    if not nodes:
        return []
    groups: list[dict[str, Any]] = []
    own = nodes[0]
    groups.append({"targets": [f"{_host(_own_address(own))}:{port}"],
                   "labels": {"exotray_node": own["node"]["name"],
                              "exotray_node_id": own["node"]["id"]}})
    seen = {own["node"]["id"]}
    peers = {p.get("id"): p for p in cluster.get("peers", []) if p.get("id")}
    for snap in nodes[1:]:
        nid = snap["node"]["id"]
        if nid in seen:
            continue
        seen.add(nid)
        peer = peers.get(nid)
        addrs = (peer or {}).get("addresses") or []
        if not addrs:
            links = [lk for lk in own.get("links", []) if lk.get("peer_id") == nid]
            addrs = [f"{_host(lk['peer_address'])}:{lk['peer_port']}" for lk in links]
        if not addrs:
            continue
        groups.append({"targets": [addrs[0]],
                       "labels": {"exotray_node": snap["node"]["name"],
                                  "exotray_node_id": nid}})
    return groups

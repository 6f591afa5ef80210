"""Conditions of this node that the user must fix, found from what the agent sees, and
the words that tell them so (in `exotray status`, the menu and the window)."""

from __future__ import annotations

LOCAL_NETWORK_DENIED = (
    "Local Network access is not granted: macOS refuses every probe to the local network. "
    "Turn exotray on in System Settings › Privacy & Security › Local Network, then quit "
    "and reopen exotray."
)


def local_network_denied(platform: str, hostunreach_streak: int, links: int) -> bool:
    """macOS 15+ without the Local Network permission: sendto() to a local address fails
    at once with EHOSTUNREACH ("No route to host"), for every peer. One unreachable host
    fails only its own probes, so it takes every link's latest probe (and at least
    three in a row) failing that way. Linux gives EHOSTUNREACH for a neighbour that does
    not answer ARP, which is a peer that is down, so this is macOS only."""
    return platform == "darwin" and links > 0 and hostunreach_streak >= max(3, links)

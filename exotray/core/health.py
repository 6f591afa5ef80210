"""Conditions of this node that the user must fix, found from what the agent sees, and
the words that tell them so (in `exotray status`, the menu and the window)."""

from __future__ import annotations

LOCAL_NETWORK_DENIED = (
    "Local Network access is not granted: macOS refuses every probe to the local network. "
    "Turn exotray on in System Settings › Privacy & Security › Local Network, then quit "
    "and reopen exotray."
)


def local_network_denied(platform: str, streaks: list[int]) -> bool:
    """macOS 15+ without the Local Network permission: sendto() to a local address fails
    at once with EHOSTUNREACH ("No route to host"), for every peer on the local network.
    `streaks`: for each link to a peer on the local network (on-link; where none is, all
    links), its probes refused that way in a row. One unreachable host fails only its
    own probes, so it takes every such link refused, each at least three times running;
    a routed peer that answers (a VPN, another subnet) is not among them, so it cannot
    hide them (issue 35 point 3). Linux gives EHOSTUNREACH for a neighbour that does not
    answer ARP, which is a peer that is down, so this is macOS only."""
    return platform == "darwin" and bool(streaks) and min(streaks) >= 3

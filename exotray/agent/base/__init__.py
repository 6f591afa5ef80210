"""What every part of the agent shares, and nothing else.

- `limits`: every bound a LAN host runs into (connections, peers, sizes, rates);
- `fds`: the open-files limit raised at start, and the connection budget sized from it;
- `keys`: the cluster key, read once, and the HMAC signatures of what peers exchange;
- `throttle`: a recurring problem logged once, then at most once a minute;
- `loops`: the agent's named tasks and timers (no drift, no overlap);
- `trim`: giving the C allocator's free pages back to the system;
- `statedir`: this node's identity, its state dir and the lock on it;
- `bound_http`: an httpx transport whose connections leave through one interface.

May import: `exotray.core`. Must not import any other part of the agent: they all sit on
this one.
"""

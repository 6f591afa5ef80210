"""How this node learns its peers' snapshots, and what it serves of its own.

- `poll`: the `Sharing` interface the rest of the agent sees, and polling (every peer's
  full snapshot each interval);
- stream sharing, one long-lived connection per peer: `stream` (following peers), `serve`
  (this node's stream: a full snapshot, then deltas), `watch` (whether the state must be
  built this interval), `wire` (frames, deltas, signatures), `numbers` (each number's
  resolution and hysteresis), `hold` (followed streams read at the agent's ticks);
- `clients`: the outgoing HTTP clients, one bound to an interface where a link needs it;
- `views`, `cluster_view`: this node's snapshot and the cluster view, built from the
  parts' state without changing it, and /v1/cluster rendered once for many requests.

May import: `probe`, `exo`, `history`, `peers`, `hw`, `base`, `exotray.core`. Must not
import `http` or the agent's assembly.
"""

"""The local exo node (github exo-explore/exo) and its inference traffic.

- `state`: exo's `GET /state` read into what links need (pure);
- `instances`: its instances taken apart, in every shape exo has had (pure);
- `thunderbolt`: exo's Thunderbolt ports, bridge and bridge loops of this node (pure);
- `paths`: whether exo's traffic to a peer takes a slower link than one that is up (pure);
- `watch`: the poller that runs both, with RDMA traffic, and keeps what links show.

May import: `peers`, `hw`, `base`, `exotray.core`. Must not import `probe`, `history`,
`share`, `http` or the agent's assembly.
"""

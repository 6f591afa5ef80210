"""Who the peers are, and what is known of each link to them.

- `table`: the peer table: mDNS and manual peers merged, one link per address, liveness
  from probes; no I/O;
- `flaps`: a peer that flaps: its up/down events held, its state not;
- `links`: per-link statistics (RTT window, saturation and queueing, history ring, path);
- `discovery`, `records`, `mdns_sockets`: DNS-SD with python-zeroconf's asyncio API,
  each record validated, sockets tied to one interface;
- `resolver`: host names given to `--peer` turned into addresses.

May import: `hw`, `base`, `exotray.core`. Must not import `probe`, `exo`, `history`,
`share`, `http` or the agent's assembly.
"""

"""RTT probes (the TWAMP-light idea).

- `udp`: the UDP socket on the agent's port that sends probes and reflects peers' ones;
- `datagram`: the fixed 40-byte probe datagram and its HMAC tag;
- `budget`: how many requests the reflector answers per source address;
- `pressure`: whether the socket may be read only at the agent's ticks;
- `pacing`: how often each link is probed and judged;
- `prober`: a tick's probes, replies into links' RTT windows and liveness, and which
  local interface carries each link.

May import: `peers`, `hw`, `base`, `exotray.core`. Must not import `exo`, `history`,
`share`, `http` or the agent's assembly.
"""

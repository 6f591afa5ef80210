"""The interface monitor and the hardware it reads: what each local interface is (kind,
label, bridge members), what it carries (byte counters, rates) and what it can carry
(capacity).

- `monitor`: the interface list, counters, rates and each interface's capacity;
- `sampler`, `carriers`, `macos_counters`: the OS's byte counters (psutil; Linux sysfs
  between full ticks; macOS 64-bit sysctl counters);
- `kinds`, `kinds_other`: an interface's kind and human name (Linux sysfs, macOS
  `networksetup`, name rules elsewhere);
- `read` and its platform readers `linux`, `ethtool`, `macos`, `macos_bridge`,
  `macos_wifi`: negotiated and maximum speeds, Wi-Fi rates, Thunderbolt, bridge members;
  they block, so `hardware` runs them off the loop and keeps their answers;
- `capstore`: measured capacities kept in the state dir;
- `rdma`: RDMA bytes, which bypass the IP interface counters;
- `onlink`: which local interface reaches a peer that is on-link;
- `flows` and its readers, `sockdiag` (Linux) and `nettop_source` with its parser
  `nettop` (macOS): each link's own TCP bytes on a carrier that several links share,
  from the kernel's per-connection counters.

May import: `base`, `exotray.core`. Must not import `peers`, `probe`, `exo`, `history`,
`share`, `http` or the agent's assembly: links are handed to it, never looked up.
"""

"""What any host on the LAN can make the agent hold or do, bounded (issue 18).

Every number here is a ceiling a hostile or broken host runs into, never one a cluster of
real agents reaches; docs/reference.md ("Limits") lists them with their defaults. Kept in one
place so a reviewer can see them together and tests can name them.
"""

from __future__ import annotations

# -- discovery and the peer table ----------------------------------------------------------
#: peers in the table (mDNS and manual together); a new mDNS peer beyond this is refused,
#: unless it can take the place of one that has never answered a probe
MAX_PEERS = 128
#: IPv4 addresses taken from one mDNS record (each is a link); the rest are ignored
MAX_ADDRESSES_PER_RECORD = 8
#: links per peer, whatever their source (manual addresses + mDNS ones)
MAX_LINKS_PER_PEER = 8
#: mDNS peers sharing one address: more are announcements aimed at a bystander (a scan)
MAX_MDNS_PEERS_PER_ADDRESS = 4
#: an mDNS peer that has never answered a probe is forgotten after this long (a real one
#: answers within a second or two; its next announcement brings it back)
NEVER_UP_FORGET_S = 30.0
#: ...and may be replaced by a new peer, when the table is full, this long after its
#: first probe (a real peer answers in milliseconds)
NEVER_UP_EVICT_S = 3.0
#: mDNS peers refused for want of room, kept to be let in as others go (oldest dropped)
MAX_WAITING_PEERS = 2048
#: mDNS services waiting to be resolved; beyond this the oldest waiting one is dropped
MAX_RESOLVE_QUEUE = 1024
#: mDNS services resolved at the same time
MAX_RESOLVING = 8
#: service names remembered (for goodbyes and duplicate ids)
MAX_KNOWN_SERVICES = 4 * MAX_PEERS

#: probes per second, in all, to addresses that have never answered one (a new peer is
#: probed within MAX_PEERS / this many seconds even with the table full of fakes)
UNANSWERED_PROBES_PER_S = 32

# -- events of a peer that flaps (issue 33 point 9) ----------------------------------------
#: a peer that changes state (up/down) more than FLAP_CHANGES times within FLAP_WINDOW_S
#: is held for FLAP_HOLD_S: its state stays live, but of its peer_up/peer_down events at
#: most one of each is said per hold, and at the hold's end the state if it differs from
#: the last one said (peers/flaps.py). A peer answering 0.8 s of every 4 s made 60 events
#: in 2 minutes; held, it makes at most 2 per hold. A reboot is 2 changes, a cable
#: replugged twice 4.
FLAP_CHANGES = 6
FLAP_WINDOW_S = 120.0
FLAP_HOLD_S = 300.0
#: events of one peer (or of this node's own, without a peer) the history database keeps
#: per UTC day; beyond it they are not stored (still served from memory, logged and in
#: the --events file), counted, and logged once (history/store.py)
MAX_EVENTS_PER_PEER_PER_DAY = 1000
#: events waiting for a history database that cannot take them (a full disk, a file that
#: cannot be opened): written when it can; beyond this the oldest are not stored (still
#: logged and in the --events file), counted, and logged (history/backlog.py). Its samples
#: wait in the rings (an hour) and need no limit of their own
MAX_UNSTORED_EVENTS = 1000

# -- fetching peers' snapshots -------------------------------------------------------------
#: snapshot fetches and stream connections being opened at the same time (all peers); the
#: HTTP client's pool never sees more waiting requests than this
MAX_FETCHES = 16
#: the HTTP client's connections (shared client); idle ones kept alive
MAX_CLIENT_CONNECTIONS = 64
MAX_CLIENT_KEEPALIVE = 32

#: frames a second a followed stream may bring on average, in bursts of at most
#: STREAM_FRAMES_BURST: an agent sends one per full tick at most (20 a second at the
#: shortest interval, 0.05 s); a stream over it is cut, counted (`too_fast`) and followed
#: again after the back-off of refused streams (up to 5 s)
MAX_STREAM_FRAMES_PER_S = 50
STREAM_FRAMES_BURST = 100

# -- the HTTP server -----------------------------------------------------------------------
#: TCP connections open at once from one non-loopback address
MAX_CONNECTIONS_PER_SOURCE = 16
#: TCP connections open at once from all non-loopback addresses together
MAX_LAN_CONNECTIONS = 256
#: TCP connections open at once from loopback (the tray, the CLI, local scripts): a local
#: process holding a thousand followers must not take the descriptors LAN peers need
MAX_LOOPBACK_CONNECTIONS = 1024
# (the three are ceilings: base/fds.py lowers them to fit the open-files limit)

#: a connection must have sent a whole request head within this long of opening
HEADER_TIMEOUT_S = 5.0
#: an idle keep-alive connection is closed after this long
KEEPALIVE_S = 15.0
#: a response not taken by the client within this long ends its connection
SEND_TIMEOUT_S = 10.0

# -- reads of the past (/v1/history, /v1/events?since=; http/readers.py) -----------------
#: history reads running at once from LAN clients (all of them together); after one, LAN
#: reads wait as long as it took
MAX_LAN_HISTORY_READS = 1
#: rows in one /v1/history answer to a LAN client (loopback: up to 50,000)
MAX_LAN_HISTORY_POINTS = 2000
#: history reads running at once from loopback clients (the tray, the CLI)
MAX_LOCAL_HISTORY_READS = 4

# -- capacity tests -----------------------------------------------------------------------
#: sessions granted to one address per window (a finished test frees the slot at once;
#: this stops finish-and-ask-again from keeping an agent sending)
CAPTEST_SESSIONS_PER_SOURCE = 3
CAPTEST_WINDOW_S = 60.0

# -- views -------------------------------------------------------------------------------
#: links of one peer shown in /v1/cluster (a peer's snapshot may carry up to 1024)
MAX_CLUSTER_LINKS_PER_NODE = 64
#: interfaces of one peer shown in /v1/cluster
MAX_CLUSTER_IFACES_PER_NODE = 32
#: renderings of /v1/cluster in memory at once (one serves all requests of a quarter
#: second; slow readers keep theirs until the send timeout cuts them off); beyond this a
#: new request gets the latest rendering, however old
MAX_VIEWS_HELD = 4

# -- files -------------------------------------------------------------------------------
#: the --events file is rotated (to FILE.1, replacing an older one) beyond this size
EVENTS_FILE_MAX_BYTES = 16 << 20

# -- the local exo node (exo/state.py) -----------------------------------------------------
# Whatever listens on exo's port answers the agent's poll: any local process can.
#: of exo's /state (up to 16 MiB) the parts links need (instances, nodeNetwork,
#: nodeRdmaCtl, and the Thunderbolt parts: nodeThunderbolt, nodeThunderboltBridge,
#: thunderboltBridgeCycles) are decoded, at most this much of them in all (as Python
#: objects JSON takes up to ~25 times its size, for the moment of a poll); over it exo is
#: "unreadable"
MAX_EXO_READ_BYTES = 2 << 20
#: ring neighbours (or RDMA devices) kept per exo instance: exo's ring sends to two
MAX_EXO_PEERS_PER_INSTANCE = 16
#: this node's Thunderbolt receptacles kept from exo's nodeThunderbolt (a Mac has up to 8)
MAX_EXO_TB_PORTS = 16
#: Thunderbolt Bridge loops exo lists (thunderboltBridgeCycles) looked through for this
#: node's; the one kept is cut to MAX_EXO_PEERS_PER_INSTANCE node ids
MAX_EXO_TB_CYCLES = 64

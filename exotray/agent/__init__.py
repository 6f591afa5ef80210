"""The agent: one asyncio program with no Qt that does all measuring and sharing.

Its parts, lowest first (each package's docstring says what it owns and may import; the
table is in docs/design.md): `base` (what all share), `hw` (interfaces and hardware),
`peers` (peer table, links, discovery), `probe` (RTT probes), `exo`, `history`, `share`
(sharing and views) and `http` (API, control, metrics, capacity test). At the top,
`runtime.Agent` assembles them, `ticking` runs what shares the agent's tick, and `main`
runs one agent until a signal.

httpx imports its command-line client (`httpx._main`) when it is imported, and that
imports click, pygments and rich wherever they are installed: pygments' 5 modules and
0.45 MiB in a venv that has pytest, rich as well where it is installed. The agent never
runs that client, so the name is taken before anything here imports httpx; httpx then
defines its `main` as the message that its CLI's dependencies are missing. (The short
`exotray status`-like commands import httpx without the agent and keep the client.)
"""

import sys

sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

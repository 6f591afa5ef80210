"""The agent's HTTP side.

- `api`: the Starlette app: its middleware and the route table;
- `services`: the narrow `Services` protocol (what the API may ask of the agent), which
  every handler is written over, and what handlers share (JSON body, error answer);
- `routes_views`, `routes_history`, `routes_control`, `routes_captest`: the handlers, one
  module-level function per path, by resource (the agent now and /metrics; history and
  events; local control; the capacity test);
- `serve`: the listening sockets (TCP and UDP on one port) and uvicorn on the TCP one;
- `guard`: what is refused before a request reaches the API;
- `control`: local control, loopback only, with the token from the state dir;
- `metrics`: `GET /metrics` in the Prometheus text format;
- `captest`, `measuring`: the active capacity test between two agents, and which link,
  interface and source address it runs over.

May import: `share`, `history`, `probe`, `exo`, `peers`, `hw`, `base`, `exotray.core`.
Must not import the agent's assembly (`runtime`, `ticking`): the API knows the agent only
through `Services`.
"""

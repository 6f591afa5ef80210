"""The commands that ask the local agent over its HTTP API: `exotray status`,
`interfaces`, `export`, `measure` and `prometheus-sd` (cli/main.py dispatches to them)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from exotray.cli.args import units_preference
from exotray.core import fmt, paths
from exotray.core.status import status_lines


def _show(args: argparse.Namespace, path: str, lines) -> int:
    """GET `path` from the local agent: as JSON with --json, else as `lines` renders it.
    A reader that stops early (`| head`) ends the output quietly, not with a traceback."""
    answer = _get(args, path)
    try:
        if args.json:
            json.dump(answer, sys.stdout, indent=2)
            print()
        else:
            print("\n".join(lines(answer)))
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
    return 0


def _use_units(args: argparse.Namespace) -> None:
    """Every rate, speed and capacity of the output in one unit system, the user's."""
    fmt.set_units(args.units or units_preference())


def cmd_status(args: argparse.Namespace) -> int:
    _use_units(args)
    return _show(args, "/v1/cluster", status_lines)


def cmd_interfaces(args: argparse.Namespace) -> int:
    from exotray.core.status import interface_lines

    _use_units(args)
    return _show(args, "/v1/interfaces", interface_lines)


#: answers of 503 (the agent busy with other reads) waited out before giving up
BUSY_TRIES = 3


class AgentUnavailable(Exception):
    """The local agent did not answer a read: the message says why and what to do."""


def fetch(args: argparse.Namespace, path: str, tries: int = BUSY_TRIES,
          **params: object) -> Any:
    """GET from the local agent (AgentUnavailable when it cannot). An agent busy with
    other reads (503, or connected and silent for 5 s) is told apart from no agent at
    all; a 503 is tried again after its Retry-After, `tries` times in all."""
    import time

    import httpx

    where = f"{args.host}:{args.port}"
    url = f"http://{where}{path}"
    for attempt in range(tries):
        try:
            r = httpx.get(url, params=params, timeout=5.0, trust_env=False)
        except httpx.TimeoutException as e:
            raise AgentUnavailable(
                f"exotray {args.command}: the exotray agent at {where} is busy: it took the "
                f"request but did not answer in 5 s ({e or 'timeout'}). Try again in a "
                "minute.") from None
        except httpx.HTTPError as e:
            raise AgentUnavailable(
                f"exotray {args.command}: no exotray agent answered at {where} ({e}).\n"
                "Start one with `exotray agent` (or the tray app), or give --port.") from None
        if r.status_code == 503 and attempt + 1 < tries:
            try:
                wait = min(10.0, max(0.0, float(r.headers.get("retry-after", "1"))))
            except ValueError:
                wait = 1.0
            time.sleep(wait)
            continue
        break
    if r.status_code != 200:
        try:
            detail = r.json().get("error", r.text)
        except ValueError:
            detail = r.text
        if r.status_code == 503:
            raise AgentUnavailable(f"exotray {args.command}: the exotray agent at {where} is "
                                   f"busy ({detail}). Try again in a minute.")
        raise AgentUnavailable(f"exotray: {path}: {detail}")
    return r.json()


def _get(args: argparse.Namespace, path: str, **params: object) -> dict:
    """`fetch`, or exit with its message."""
    try:
        return fetch(args, path, **params)
    except AgentUnavailable as e:
        raise SystemExit(str(e)) from None


def _find_link(cluster: dict, wanted: str) -> dict:
    """A link of this node by id, peer name or peer address."""
    links = cluster["nodes"][0]["links"]
    hits = [lk for lk in links if wanted in (lk["id"], lk.get("peer_name"),
                                             lk["peer_address"])]
    if len(hits) == 1:
        return hits[0]
    what = "is ambiguous" if hits else "matches no link of this node"
    raise SystemExit(f"exotray export: {wanted!r} {what}; links: {_choices(links)}")


def _choices(links: list[dict]) -> str:
    """This node's links as a user can name them: "ID (PEER via IFACE), …"."""
    return ", ".join(f"{lk['id']} ({lk.get('peer_name') or lk['peer_address']}"
                     + (f" via {lk['local_interface']})" if lk.get("local_interface") else ")")
                     for lk in links) or "none"


#: rows an export asks the agent for at most (its /v1/history bound)
EXPORT_POINTS = 50_000
#: one request's stretch: its 1-minute rows (and the finer tiers' newest minutes) fit in
#: EXPORT_POINTS, so a retention over ~34 days comes in several answers, never averaged
EXPORT_WINDOW_S = (EXPORT_POINTS - 1000) * 60.0


def _export_history(args: argparse.Namespace, link_id: str, seconds: float) -> dict:
    """The link's history of the last `seconds`, every row of its tier: one answer per
    EXPORT_WINDOW_S, newest first (the agent's clock ends the newest), joined oldest
    first."""
    newest = _get(args, "/v1/history", link=link_id, seconds=min(seconds, EXPORT_WINDOW_S),
                  points=EXPORT_POINTS)
    parts, start, end = [newest], newest["until"] - seconds, newest["since"]
    while end > start:
        since = max(start, end - EXPORT_WINDOW_S)
        part = _get(args, "/v1/history", link=link_id, since=since, until=end - 0.001,
                    points=EXPORT_POINTS)
        if part["t"]:
            parts.append(part)
        end = since
    hist = dict(newest, since=newest["until"] - seconds)
    for key, values in newest.items():
        if isinstance(values, list):
            hist[key] = [v for part in reversed(parts) for v in part.get(key, [])]
    return hist


def cmd_export(args: argparse.Namespace) -> int:
    from exotray.core import export

    try:
        seconds = export.parse_since(args.since)
    except ValueError as e:
        print(f"exotray export: {e}", file=sys.stderr)
        return 2
    link = _find_link(_get(args, "/v1/cluster"), args.link)
    # Every row of the range's tier (e.g. 30 days at 1 min: 43200), in as few answers
    # as fit the agent's bound.
    hist = _export_history(args, link["id"], seconds)
    fmt_ = args.format or ("json" if args.output and args.output.endswith(".json") else "csv")
    text = export.to_json(hist, link) if fmt_ == "json" else export.to_csv(hist)
    if args.output and args.output != "-":
        try:
            Path(args.output).write_text(text)
        except OSError as e:
            print(f"exotray export: cannot write {args.output}: {e.strerror or e}",
                  file=sys.stderr)
            return 1
        print(f"wrote {len(hist['t'])} rows of {link.get('peer_name') or link['peer_address']}"
              f" via {link.get('local_interface')} to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _names_a_peer(cluster: dict, wanted: str) -> bool:
    """Whether `wanted` names any peer or link the local agent knows: by name, id,
    address, address:port or the HOST:PORT given to --peer. A superset of what its
    measure endpoint accepts (agent/http/measuring.py pick_link), so that a name it
    would take is never refused here; it says why when the link is down or ambiguous."""
    names: set[str] = set()
    for lk in (cluster.get("nodes") or [{}])[0].get("links", []):
        names |= {lk.get("peer_name"), lk.get("peer_id"), lk.get("peer_address"),
                  f"{lk.get('peer_address')}:{lk.get('peer_port')}"}
    for peer in cluster.get("peers", []):
        names |= {peer.get("key"), peer.get("id"), peer.get("name")}
        for address in peer.get("addresses") or []:
            names |= {address, address.rsplit(":", 1)[0]}
    return wanted in names


def _control_refused(args: argparse.Namespace, token: str) -> tuple[int, str] | None:
    """The agent's status and error when its control endpoints refuse us (a token from
    another agent's state dir: 401), else None. Asked before "measuring…", which
    would otherwise come first."""
    import httpx

    try:
        r = httpx.get(f"http://{args.host}:{args.port}/v1/control/settings",
                      headers={"authorization": f"Bearer {token}"}, timeout=5.0,
                      trust_env=False)
    except httpx.HTTPError:
        return None  # the measurement's own request says what went wrong
    if r.status_code not in (401, 403):
        return None
    try:
        return r.status_code, str(r.json().get("error", r.text))
    except ValueError:
        return r.status_code, r.text


class NoToken(Exception):
    """The agent's control token was not found, or the agent refused it (the message
    says which, where it was looked for, and what to do)."""


def control_token(args: argparse.Namespace) -> str:
    """The agent's control token from `--state-dir` (else the default state dir), once
    the agent has taken it (NoToken if not): what `exotray measure` and `exotray doctor
    --active` need before a capacity test."""
    state = Path(args.state_dir) if args.state_dir else paths.state_dir()
    given = "given with --state-dir" if args.state_dir else "the default"
    token = paths.read_token(state)
    if token is None:
        raise NoToken(f"no control token in {state} ({given}; the agent writes "
                      f"{paths.TOKEN_FILE} there when it starts): give the agent's own "
                      "state dir with --state-dir DIR, and run this as the agent's user")
    refused = _control_refused(args, token)
    if refused is not None:
        status, error = refused
        raise NoToken(f"the agent at {args.host}:{args.port} refused the control token in "
                      f"{state} ({given}): {error}."
                      + ("\nThat is another agent's state dir: give this agent's, the one "
                         "it was started with, as --state-dir DIR." if status == 401 else ""))
    return token


def post_measure(args: argparse.Namespace, token: str, body: dict, seconds: float) -> Any:
    """POST a capacity test to the agent (httpx.Response; httpx.HTTPError, and
    KeyboardInterrupt, which the agent sees as the connection closing and stops the
    test on both ends)."""
    import httpx

    return httpx.post(f"http://{args.host}:{args.port}/v1/control/measure", json=body,
                      headers={"authorization": f"Bearer {token}"},
                      timeout=2 * seconds + 30, trust_env=False)


def cmd_measure(args: argparse.Namespace) -> int:
    import httpx

    _use_units(args)
    # An agent answers (or exit saying so), knows the peer and takes our token, all
    # before "measuring…".
    cluster = _get(args, "/v1/cluster")
    try:
        token = control_token(args)
    except NoToken as e:
        print(f"exotray measure: {e}", file=sys.stderr)
        return 1
    if not _names_a_peer(cluster, args.peer):
        links = (cluster.get("nodes") or [{}])[0].get("links", [])
        print(f"exotray measure: no link to {args.peer!r}; this node's links: "
              f"{_choices(links)}", file=sys.stderr)
        return 1
    body = {"peer": args.peer, "seconds": args.seconds, "streams": args.streams}
    if args.interface:
        body["interface"] = args.interface
    print(f"measuring the link to {args.peer} for about {2 * args.seconds:g} s…",
          file=sys.stderr)
    try:
        r = post_measure(args, token, body, args.seconds)
    except httpx.HTTPError as e:
        print(f"exotray measure: no exotray agent answered at {args.host}:{args.port} ({e})",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # the agent sees the connection close and stops the test
        print("exotray measure: interrupted; the test is cancelled", file=sys.stderr)
        return 130
    data = r.json()
    if r.status_code != 200:
        print(f"exotray measure: {data.get('error', r.text)}", file=sys.stderr)
        return 1
    print(measured_line(data))
    return 0


def measured_line(data: dict) -> str:
    """What a capacity test (`/v1/control/measure`'s answer) found and where it went:
    "b via lo: 1.2 GB/s up, 1.1 GB/s down (4 streams, 5 s each way); now the capacity
    of lo" (`exotray measure`, `exotray doctor --active`)."""
    kept = data.get("capacity_of", data["interface"])  # (an agent from before it said)
    up, down = (fmt.speed(m) if m else fmt.rate(0)
                for m in (data["up_mbit_s"], data["down_mbit_s"]))
    return (f"{data.get('peer_name') or data['peer']} via {data['interface']}: "
            f"{up} up, {down} down "
            f"({data['streams']} streams, {data['seconds']:g} s each way); "
            + (_kept(kept, data.get("override_mbit")) if kept else "nothing came through"
               if not (data["up_mbit_s"] or data["down_mbit_s"]) else
               f"not kept: which cable of {data['interface']} reaches the peer is not known"
               " yet"))


def _kept(iface: str, override_mbit: float | None) -> str:
    """Where a measured capacity went: the interface's capacity, or kept behind the
    user's own setting for it, which stays in force (core/capacity.py's order)."""
    if not override_mbit:
        return f"now the capacity of {iface}"
    return (f"kept for {iface}, but your setting for {iface} ({fmt.speed(override_mbit)}) "
            f"stays in force: remove it (capacity = {{...}} in the config, --capacity, or "
            f"Preferences) to use the measured one")


def cmd_prometheus_sd(args: argparse.Namespace) -> int:
    import time

    from exotray.core.sd import file_sd

    while True:
        groups = file_sd(_get(args, "/v1/cluster"), args.port)
        text = json.dumps(groups, indent=1) + "\n"
        if args.output in (None, "-"):
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            out = Path(args.output)
            tmp = out.with_name(out.name + ".tmp")
            try:
                tmp.write_text(text)
                tmp.replace(out)  # Prometheus never reads a half-written file
            except OSError as e:
                tmp.unlink(missing_ok=True)
                print(f"exotray prometheus-sd: cannot write {out}: {e.strerror or e}",
                      file=sys.stderr)
                return 1
        if args.once:
            return 0
        try:
            time.sleep(args.refresh)
        except KeyboardInterrupt:
            return 0

"""The topology's tooltips, as rich text built from a cluster view's edges and nodes
(every name a peer controls is escaped). Pure: topology/view.py shows them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from exotray.core import fmt, queueing
from exotray.core.topology import Edge, Node
from exotray.ui.link import words as linkwords
from exotray.ui.style import theme


def esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def edge_tooltip(edge: Edge, name: Callable[[str], str], ifaces: dict[str, linkwords.Ifaces],
                 ) -> str:
    """An edge's tooltip: its numbers from the end that reports it, the other end's
    interface, exo and RDMA, and "+170 ms queueing" in the heading when it matters."""
    p = edge.primary
    state = edge.state
    rows = [
        ("RTT", f"{fmt.ms(p.get('rtt_ms'))} median · {fmt.ms(p.get('rtt_min_ms'))} min"
                f" · {fmt.ms(p.get('rtt_max_ms'))} max"),
        ("Queueing", queueing_text(p)),
        ("Jitter", fmt.ms(p.get("jitter_ms"))),
        ("Loss", fmt.percent(p.get("loss"))),
        ("rx / tx", f"{fmt.rate(p.get('rx_bytes_per_s'))} / "
                    f"{fmt.rate(p.get('tx_bytes_per_s'))}"),
        ("Utilization", utilization_text(edge, name)),
        ("Capacity", capacity_text(p, ifaces.get(edge.a, {}))),
        ("Interface", linkwords.via(p, ifaces.get(edge.a, {}))),
    ]
    if edge_exo(edge):
        rows.append(("exo", ", ".join(edge_exo(edge))))
    # the RDMA of the end that reports the numbers, else of the other end (its own
    # rx / tx are not shown here, so only its state)
    r = p if p.get("rdma") else (edge.reverse or {})
    rdma = {"counted": "counted in rx / tx",
            "not_counted": "not counted (no RDMA counters readable there)"}.get(r.get("rdma") or "")
    if rdma:
        if r is p and r.get("rdma") == "not_counted":  # the rx / tx above are IP only
            rows[4] = ("rx / tx", rows[4][1] + " (IP only)")
        rows.append(("RDMA", rdma))
        if state := linkwords.rdma_state(r):
            rows.append(("RDMA state", state))
    if edge.reverse is not None:
        r = edge.reverse
        rows.append((
            f"{esc(name(edge.b))} end",
            f"{r.get('local_label') or '?'} ({r.get('local_interface') or '?'}),"
            f" {fmt.ms(r.get('rtt_ms'))}",
        ))
    body = "".join(
        f'<tr><td style="color:{theme.TEXT_MUTED}; padding-right:10px">{k}</td>'
        f"<td>{esc(v)}</td></tr>"
        for k, v in rows
    )
    head = (
        f"<b>{esc(name(edge.a))} ⇄ {esc(name(edge.b))}</b>"
        f' &nbsp;<span style="color:{theme.state_color(state)}">{esc(state)}</span>'
    )
    if (note := queueing.note(p)) is not None:  # "+170 ms queueing", when it matters
        head += f" · {esc(note)}"
    return f"{head}<table>{body}</table>"


def node_tooltip(n: Node | None) -> str:
    if n is None:
        return ""
    if not n.known:
        status = "no snapshot yet"
    elif not n.reachable:
        status = "unreachable" + (f", data {n.age_s:.1f} s old" if n.age_s is not None else "")
    else:
        status = "reachable"
    me = " (this machine)" if n.is_self else ""
    return f"<b>{esc(n.name)}</b>{me}<br>{status}<br>id {esc(n.id)}"


def edge_exo(edge: Edge) -> list[str]:
    """"Llama-3.3-70B-Instruct-4bit (ring)" for each exo instance either end of the edge
    sends over it."""
    out: list[str] = []
    for lk in (edge.primary, edge.reverse):
        for inst in (lk or {}).get("exo_instances") or []:
            model = str(inst.get("model") or "?")
            text = f"{model.rsplit('/', 1)[-1] or model} ({inst.get('backend')})"
            if text not in out:
                out.append(text)
    return out


def utilization_text(edge: Edge, name: Callable[[str], str]) -> str:
    """The reporting end's utilization, beside its rx / tx and capacity; the other end's
    too when the edge is coloured by it ("1 % · 95 % at gpu-b's end": there, a whole
    interface that may also carry other peers' traffic)."""
    p = edge.primary
    own = None if p.get("rdma") == "not_counted" else p.get("utilization")
    text = fmt.percent(own)
    if edge.utilization is not None and edge.utilization != own:
        text += f" · {fmt.percent(edge.utilization)} at {name(edge.b)}'s end"
    return text


def capacity_text(link: dict[str, Any], ifaces: linkwords.Ifaces) -> str:
    """ "6.25 MB/s (50 Mbit/s), your setting": in the rates' unit (fmt.units), the other
    one beside it, 3 significant digits, and where the number came from."""
    cap = link.get("capacity_bytes_per_s")
    if not cap or cap <= 0:
        return "unknown"
    return (f"{fmt.capacity_rate(cap)} ({fmt.capacity_other(cap)}),"
            f" {linkwords.capacity_words(link, ifaces)}")


def queueing_text(link: dict[str, Any]) -> str:
    """ "+170 ms over a 0.06 ms idle RTT"; unknown (too few probes, loss) says so."""
    base, qd = link.get("rtt_baseline_ms"), link.get("queue_delay_ms")
    if base is None:
        return "unknown (no idle RTT learned yet)"
    if qd is None:
        return f"unknown (idle RTT {fmt.ms(base)})"
    return f"+{fmt.ms(qd)} over a {fmt.ms(base)} idle RTT"

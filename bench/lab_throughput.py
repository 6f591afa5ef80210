"""Reported rates against on-wire bytes on a 2-host lab link (UDP at fixed rates, TCP shaped).

What it measures (root, iperf3, ethtool; network namespaces, see bench/README.md)
    A 2-host lab (tests/lab/netlab.py): h1 and h2 on a bridge, an exotray agent in each
    (`--no-mdns`, each other as `--peer`, interval 1 s). netlab turns GSO and TSO off on
    the hosts' veths (ethtool -K … tso off gso off), so frames are counted as a physical
    NIC would count them: one 1514-byte frame per full TCP segment, not one 64 KB
    super-packet. Rows, one after another:

    * UDP at --rates (10,100,500 Mbit/s), no shaper: `iperf3 -u -b RATE -l 1400 -t 10
      --get-server-output -J` h1 -> h2. On-wire bytes from iperf3's JSON: datagrams x
      (1400 payload + 8 UDP + 20 IP + 14 Ethernet) = 1442 B, the sender's datagram count
      for both h1 tx and h2 rx. (At high rates the receiving iperf3 loses datagrams
      after the interface has counted them: socket buffer overflow. The receiver's
      count is in the JSON and the footnote; the kernel counters show where the loss is.)
    * TCP through a `tbf rate 50mbit` on the bridge port that delivers to h2:
      `iperf3 -C cubic -t 15 --get-server-output -J`. On-wire at h2 from the receiver's
      goodput x 1514/1448 (1448-byte segments with timestamps carry 66 bytes of
      Ethernet/IP/TCP headers), as tests/lab/test_lab.py does; at h1 the same plus the
      retransmitted segments (tbf drops them after h1 sent them) x 1514.

    exotray's number is the median of the link's per-second history (/v1/history,
    rx/tx_bytes_per_s, each a sliding 1 s average of the carrying interface) over the
    steady middle of each transfer (seconds 3-9 of UDP, 4-13 of TCP); iperf3's on-wire
    rate covers the same seconds (its per-second intervals), and the interfaces' kernel
    counters (/sys/class/net/*/statistics, read inside the namespaces at the window's
    edges) are shown as a third reference. The agents' own traffic (probes and snapshot
    fetches), measured idle before the rows, is in every counter and exotray figure but
    not in iperf3's. It measures and prints; it asserts nothing.

How to run (as root, from the repository root, with exotray installed in the venv)
    flock /tmp/exotray-bench.lock .venv/bin/python bench/lab_throughput.py
    flock /tmp/exotray-bench.lock .venv/bin/python bench/lab_throughput.py --rates 10,1000

Output: Markdown on stdout, bench/results/lab_throughput.json.
Runtime with the defaults: about 3 x 13 s + 18 s + ~15 s setup, i.e. ~75 s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import machine_info, machine_line, md_table, write_json
from _labnet import link_to, median, tool_versions, two_hosts, why_not_available

UDP_LEN = 1400
UDP_WIRE = UDP_LEN + 8 + 20 + 14
TCP_MSS, TCP_FRAME = 1448, 1514


def read_counters(host) -> tuple[float, int, int]:
    """(wall time at the middle of the read, rx_bytes, tx_bytes) of the host's lab veth."""
    base = f"/sys/class/net/{host.veth}/statistics"
    a = time.time()
    out = host.exec("cat", f"{base}/rx_bytes", f"{base}/tx_bytes").split()
    b = time.time()
    return (a + b) / 2, int(out[0]), int(out[1])


def sleep_until(t: float) -> None:
    time.sleep(max(0.0, t - time.time()))


def history_rates(agent, peer_addr: str, t_lo: float, t_hi: float) -> dict:
    lk = link_to(agent, peer_addr)
    h = agent.get("/v1/history", link=lk["id"], seconds=120)
    rows = [(t, rx, tx) for t, rx, tx in zip(h["t"], h["rx_bytes_per_s"],
                                             h["tx_bytes_per_s"], strict=True)
            if t_lo <= t <= t_hi and rx is not None and tx is not None]
    return {"t": [r[0] for r in rows], "rx": [r[1] for r in rows], "tx": [r[2] for r in rows],
            "interface": lk["local_interface"]}


def window_intervals(intervals: list[dict], w0: float, w1: float) -> list[dict]:
    return [iv["sum"] for iv in intervals
            if iv["sum"]["start"] >= w0 - 0.05 and iv["sum"]["end"] <= w1 + 0.05]


def transfer(lab, h1, h2, a1, a2, tmp: Path, label: str, iperf_args: list[str],
             seconds: int, w0: float, w1: float) -> dict:
    """One iperf3 run h1 -> h2; counters at the window's edges, history afterwards."""
    # a one-off server with -J, so --get-server-output hands back its per-second JSON
    h2.popen("iperf3", "-s", "-1", "-J", "-B", h2.addr, stdout=subprocess.DEVNULL,
             stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    log = tmp / f"iperf-{label}.json"
    with open(log, "w") as out:
        t0 = time.time()
        client = h1.popen("iperf3", "-c", h2.addr, "-t", str(seconds), "-J",
                          "--get-server-output", *iperf_args, stdout=out,
                          stderr=subprocess.STDOUT)
        sleep_until(t0 + w0)
        c1a, c2a = read_counters(h1), read_counters(h2)
        sleep_until(t0 + w1)
        c1b, c2b = read_counters(h1), read_counters(h2)
        client.wait(seconds + 30)
    time.sleep(1.5)  # the history row covering the window's last second is written
    rep = json.loads(log.read_text())
    if "error" in rep:
        raise RuntimeError(f"iperf3 ({label}): {rep['error']}")
    hist1 = history_rates(a1, h2.addr, t0 + w0 + 1.0, t0 + w1 + 0.25)
    hist2 = history_rates(a2, h1.addr, t0 + w0 + 1.0, t0 + w1 + 0.25)
    return {
        "label": label,
        "t0": t0,
        "window_s": [w0, w1],
        "iperf": rep,
        "counters": {
            "h1_tx_bytes_per_s": (c1b[2] - c1a[2]) / (c1b[0] - c1a[0]),
            "h2_rx_bytes_per_s": (c2b[1] - c2a[1]) / (c2b[0] - c2a[0]),
        },
        "exotray": {"h1": hist1, "h2": hist2,
                    "h1_tx_median": median(hist1["tx"]), "h2_rx_median": median(hist2["rx"]),
                    "h1_tx_mean": sum(hist1["tx"]) / len(hist1["tx"]) if hist1["tx"] else None,
                    "h2_rx_mean": sum(hist2["rx"]) / len(hist2["rx"]) if hist2["rx"] else None},
    }


def udp_wire(run: dict) -> tuple[float, float, dict]:
    """(h1 tx, h2 rx) on-wire bytes/s over the window, from iperf3's per-second intervals."""
    rep = run["iperf"]
    w0, w1 = run["window_s"]
    snd = window_intervals(rep["intervals"], w0, w1)
    rcv = window_intervals(rep["server_output_json"]["intervals"], w0, w1)
    secs_s = sum(iv["seconds"] for iv in snd)
    secs_r = sum(iv["seconds"] for iv in rcv)
    sent = sum(iv["packets"] for iv in snd)
    got = sum(iv["packets"] - iv.get("lost_packets", 0) for iv in rcv)
    end = rep["end"]["sum"]
    info = {"sender_intervals": len(snd), "receiver_intervals": len(rcv),
            "datagrams_sent_window": sent, "datagrams_received_window": got,
            "lost_percent_total": end.get("lost_percent"),
            "sender_mbit_s_total": rep["end"]["sum"].get("bits_per_second", 0) / 1e6}
    info["receiver_wire_bytes_per_s"] = got * UDP_WIRE / secs_r
    rate = sent * UDP_WIRE / secs_s
    return rate, rate, info


def tcp_wire(run: dict) -> tuple[float, float, dict]:
    rep = run["iperf"]
    w0, w1 = run["window_s"]
    snd = window_intervals(rep["intervals"], w0, w1)
    rcv = window_intervals(rep["server_output_json"]["intervals"], w0, w1)
    goodput = sum(iv["bytes"] for iv in rcv) / sum(iv["seconds"] for iv in rcv)
    retr = sum(iv.get("retransmits", 0) for iv in snd)
    retr_rate = retr / sum(iv["seconds"] for iv in snd)
    h2 = goodput * TCP_FRAME / TCP_MSS
    h1 = h2 + retr_rate * TCP_FRAME
    info = {"goodput_mbit_s_window": goodput * 8 / 1e6, "retransmits_window": retr,
            "retransmits_total": rep["end"]["sum_sent"].get("retransmits"),
            "received_mbit_s_total": rep["end"]["sum_received"]["bits_per_second"] / 1e6}
    return h1, h2, info


def run(args, tmp: Path) -> dict:
    out: dict = {"runs": []}
    with two_hosts(tmp) as (lab, h1, h2, a1, a2):
        out["offloads"] = {
            h.veth: [ln.strip() for ln in h.exec("ethtool", "-k", h.veth, check=False).splitlines()
                     if "segmentation-offload" in ln]
            for h in (h1, h2)
        }
        time.sleep(args.settle)
        # the agents' own traffic on the link interfaces, with nothing else running
        c1a, c2a = read_counters(h1), read_counters(h2)
        time.sleep(args.baseline)
        c1b, c2b = read_counters(h1), read_counters(h2)
        out["baseline"] = {"h1_tx_bytes_per_s": (c1b[2] - c1a[2]) / (c1b[0] - c1a[0]),
                           "h2_rx_bytes_per_s": (c2b[1] - c2a[1]) / (c2b[0] - c2a[0])}
        for rate in args.rates:
            print(f"[lab_throughput] UDP {rate:g} Mbit/s", file=sys.stderr)
            r = transfer(lab, h1, h2, a1, a2, tmp, f"udp{rate:g}",
                         ["-u", "-b", f"{rate:g}M", "-l", str(UDP_LEN)],
                         args.udp_seconds, 3.0, args.udp_seconds - 1.0)
            r["kind"], r["rate_mbit"] = "udp", rate
            out["runs"].append(r)
            time.sleep(1.0)
        print("[lab_throughput] TCP through tbf 50mbit", file=sys.stderr)
        lab.shape(h2, "50mbit")
        r = transfer(lab, h1, h2, a1, a2, tmp, "tcp-tbf50", ["-C", "cubic"],
                     args.tcp_seconds, 4.0, args.tcp_seconds - 2.0)
        r["kind"], r["rate_mbit"] = "tcp", 50
        out["runs"].append(r)
    return out


def table(res: dict) -> tuple[list[list[str]], list[dict]]:
    rows, summary = [], []
    for r in res["runs"]:
        if r["kind"] == "udp":
            w1, w2, info = udp_wire(r)
            what = f"UDP {r['rate_mbit']:g} Mbit/s (-l {UDP_LEN})"
        else:
            w1, w2, info = tcp_wire(r)
            what = "TCP cubic via tbf 50mbit"
        r["wire"] = {"h1_tx_bytes_per_s": w1, "h2_rx_bytes_per_s": w2, **info}
        for side, wire, cnt, ours, n in (
            ("h1 tx", w1, r["counters"]["h1_tx_bytes_per_s"], r["exotray"]["h1_tx_median"],
             len(r["exotray"]["h1"]["tx"])),
            ("h2 rx", w2, r["counters"]["h2_rx_bytes_per_s"], r["exotray"]["h2_rx_median"],
             len(r["exotray"]["h2"]["rx"])),
        ):
            err_w = (ours - wire) / wire * 100 if ours is not None else None
            err_c = (ours - cnt) / cnt * 100 if ours is not None else None
            summary.append({"traffic": what, "side": side, "wire_mbit_s": wire * 8 / 1e6,
                            "counters_mbit_s": cnt * 8 / 1e6,
                            "exotray_mbit_s": None if ours is None else ours * 8 / 1e6,
                            "exotray_samples": n, "error_vs_wire_pct": err_w,
                            "error_vs_counters_pct": err_c})
            rows.append([
                what, side, f"{wire * 8 / 1e6:.2f}", f"{cnt * 8 / 1e6:.2f}",
                "–" if ours is None else f"{ours * 8 / 1e6:.2f}", str(n),
                "–" if err_w is None else f"{err_w:+.2f}",
                "–" if err_c is None else f"{err_c:+.2f}",
            ])
    return rows, summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rates", default="10,100,500",
                    help="UDP rates in Mbit/s, comma-separated (10,100,500)")
    ap.add_argument("--udp-seconds", type=int, default=10, help="iperf3 -t for UDP (10)")
    ap.add_argument("--tcp-seconds", type=int, default=15, help="iperf3 -t for TCP (15)")
    ap.add_argument("--baseline", type=float, default=5.0,
                    help="idle seconds measuring the agents' own traffic (5)")
    ap.add_argument("--settle", type=float, default=3.0,
                    help="seconds after the link is up before measuring (3)")
    ap.add_argument("--name", default="lab_throughput", help="results file name")
    args = ap.parse_args(argv)
    try:
        args.rates = [float(x) for x in args.rates.split(",")]
        assert args.rates and all(0 < x <= 10000 for x in args.rates)
    except (ValueError, AssertionError):
        ap.error("--rates takes Mbit/s values in (0, 10000], comma-separated")
    if not 6 <= args.udp_seconds <= 60 or not 8 <= args.tcp_seconds <= 60:
        ap.error("--udp-seconds in 6..60, --tcp-seconds in 8..60")
    reason = why_not_available()
    if reason:
        print(f"[lab_throughput] cannot run: {reason}", file=sys.stderr)
        return 2

    info = {**machine_info(), **tool_versions()}
    with tempfile.TemporaryDirectory(prefix="exotray-labtp-") as d:
        res = run(args, Path(d))
    try:
        rows, summary = table(res)
    except Exception:
        write_json(args.name, {"benchmark": "lab_throughput", "machine": info,
                               "params": vars(args), "incomplete": True, **res})
        raise

    print("## Reported rates vs on-wire bytes on a 2-host lab link (GSO/TSO off on the "
          "host veths)\n")
    print(machine_line(info) + f", {info.get('iperf3')}\n")
    print(md_table(["traffic", "side", "on-wire (iperf3) Mbit/s", "kernel counters Mbit/s",
                    "exotray Mbit/s", "n", "error vs on-wire %", "error vs counters %"], rows))
    b = res["baseline"]
    lost = [f"{r['rate_mbit']:g}M: {r['wire']['lost_percent_total']:.3g} %"
            for r in res["runs"] if r["kind"] == "udp"]
    tx_mean = [f"{r['rate_mbit']:g}M {r['exotray']['h1_tx_mean'] * 8 / 1e6:.2f}"
               for r in res["runs"] if r["exotray"]["h1_tx_mean"] is not None]
    tcp = next((r for r in res["runs"] if r["kind"] == "tcp"), None)
    print(f"\nexotray: median of n per-second history rows (1 s sliding averages) in the "
          f"steady window; on-wire and counters over the same window. The agents' own "
          f"traffic when idle: h1 tx {b['h1_tx_bytes_per_s'] * 8 / 1e3:.1f} kbit/s, h2 rx "
          f"{b['h2_rx_bytes_per_s'] * 8 / 1e3:.1f} kbit/s (in counters and exotray, not in "
          f"iperf3). UDP loss reported by the receiving iperf3 (after the interface): "
          f"{', '.join(lost)}. Mean instead of median of exotray's h1 tx rows (Mbit/s): "
          f"{', '.join(tx_mean)}."
          + (f" TCP: goodput {tcp['wire']['goodput_mbit_s_window']:.2f} Mbit/s, "
             f"{tcp['wire']['retransmits_window']} retransmits in the window."
             if tcp else ""))
    for r in res["runs"]:  # keep the JSON small: the per-stream detail is not needed
        for iv in r["iperf"].get("intervals", []):
            iv.pop("streams", None)
        srv = r["iperf"].get("server_output_json", {})
        for iv in srv.get("intervals", []):
            iv.pop("streams", None)
    path = write_json(args.name, {
        "benchmark": "lab_throughput",
        "machine": info,
        "params": vars(args),
        "summary": summary,
        **res,
    })
    print(f"\nJSON: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

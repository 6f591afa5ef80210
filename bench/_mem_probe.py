"""Run `exotray ARGS` (e.g. `agent …`) with a thread that writes, every XT_MEM_EVERY
seconds, one JSON line to XT_MEM_OUT about where the process's memory is; used by
soak.py --split to tell what grows. Bench code only: nothing of it is in exotray.

Each line: RSS and its parts from /proc/self/smaps (the main heap, anonymous maps —
other threads' malloc arenas and large blocks —, files), glibc's mallinfo2 (bytes in use,
free inside arenas, mmapped), SQLite's own memory counter, Python's allocator (blocks,
arenas), gc object counts by type (the types that grew most since the base), zeroconf's
containers (cache records, expiry heap, question history, listeners), Python's own
allocator (obmalloc arenas and blocks), open fds, the 25 longest containers the gc
tracks (by id, so one that keeps growing shows), and with
XT_MEM_TRACE=N tracemalloc (N frames) started XT_MEM_BASE seconds after start, once the
agent has imported and settled: its traced total is what was allocated since then and is
still held, listed by traceback, and what grew since its first snapshot (tracing from the start costs a snapshot of every import's
allocations: ~17 s of CPU and +60 MiB each time on this machine). XT_MEM_TRIM=1 calls
malloc_trim(0) after each line (so the next line shows what trimming gives back).
XT_MEM_RING_S=S makes the agent's history rings hold S seconds instead of an hour
(`core.history.ring_size`'s span), so that "after the rings fill" comes within a short run.
"""

from __future__ import annotations

import asyncio
import collections
import ctypes
import ctypes.util
import functools
import gc
import json
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path

OUT = os.environ["XT_MEM_OUT"]
EVERY = float(os.environ.get("XT_MEM_EVERY", "60"))
BASE = float(os.environ.get("XT_MEM_BASE", "600"))
TRACE = int(os.environ.get("XT_MEM_TRACE", "0"))
TRIM = os.environ.get("XT_MEM_TRIM") == "1"

libc = ctypes.CDLL(None)


class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]


libc.mallinfo2.restype = Mallinfo2


_sqlite_fn: list = []


def _sqlite_used() -> int | None:
    """sqlite3_memory_used() of the SQLite that _sqlite3 uses (the one mapped already).
    The library is opened once: a ctypes.CDLL per line would itself grow the process (a
    new function-pointer type each time, which a soak's gc counts then show)."""
    try:
        if not _sqlite_fn:
            import _sqlite3  # noqa: F401  (maps libsqlite3 into the process)
            path = next((ln.split()[-1] for ln in
                         Path("/proc/self/maps").read_text().splitlines()
                         if "libsqlite3" in ln), None)
            if path is None:
                return None
            fn = ctypes.CDLL(path).sqlite3_memory_used
            fn.restype = ctypes.c_int64
            _sqlite_fn.append(fn)
        return _sqlite_fn[0]()
    except Exception:
        return None


def _smaps() -> dict[str, float]:
    parts = collections.Counter()
    kind = "other"
    for ln in Path("/proc/self/smaps").read_text().splitlines():
        f = ln.split()
        if not f:
            continue
        if "-" in f[0] and len(f) >= 5 and not f[0].endswith(":"):
            name = f[5] if len(f) > 5 else ""
            kind = ("heap" if name == "[heap]" else "stack" if name.startswith("[stack")
                    else "anon" if name == "" else "file" if name.startswith("/")
                    else "other")
        elif f[0] == "Rss:":
            parts[kind] += int(f[1])
    return {k: round(v / 1024, 3) for k, v in parts.items()}


def _rss_mib() -> float:
    for ln in Path("/proc/self/status").read_text().splitlines():
        if ln.startswith("VmRSS"):
            return int(ln.split()[1]) / 1024
    return 0.0


def _zeroconf() -> list[dict]:
    out = []
    try:
        from zeroconf import Zeroconf
    except ImportError:
        return out
    for o in gc.get_objects():
        if isinstance(o, Zeroconf):
            c = o.cache
            out.append({
                "cache_keys": len(c.cache), "cache_records": sum(len(v) for v in c.cache.values()),
                "service_cache": sum(len(v) for v in c.service_cache.values()),
                "expire_heap": len(getattr(c, "_expire_heap", ())),
                "expirations": len(getattr(c, "_expirations", ())),
                "question_history": len(getattr(o.question_history, "_history", ())),
                "listeners": len(getattr(o.record_manager, "listeners", ())),
                "browsers": len(o.browsers), "registry": len(o.registry.async_get_service_infos()),
                "out_queue": len(getattr(o.out_queue, "queue", ())),
                "out_delay_queue": len(getattr(o.out_delay_queue, "queue", ())),
            })
    return out


def _obmalloc() -> dict[str, float]:
    """Python's own allocator (sys._debugmallocstats, which prints to the C stderr):
    arenas (1 MiB mmaps, in RSS's anonymous maps, not in mallinfo) and the bytes in
    blocks handed out, in MiB."""
    import tempfile
    keys = {"# arenas allocated current": "arenas", "# arenas highwater mark": "arenas_high",
            "# bytes in allocated blocks": "blocks_mib",
            "# bytes in available blocks": "free_blocks_mib"}
    saved = os.dup(2)
    with tempfile.TemporaryFile() as t:
        os.dup2(t.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        t.seek(0)
        text = t.read().decode(errors="replace")
    out: dict[str, float] = {}
    for ln in text.splitlines():
        k, _, v = ln.partition("=")
        name = keys.get(k.strip())
        if name and name not in out:
            n = int(v.strip().replace(",", ""))
            out[name] = round(n / 2**20, 3) if name.endswith("_mib") else n
    return out


#: containers whose length a line records (the longest few, by id across lines)
CONTAINERS = (dict, list, set, collections.deque, collections.OrderedDict)


def _scan(own: tuple = ()) -> tuple[collections.Counter, list[dict], list[dict]]:
    """gc object counts by type, and the 25 longest containers the gc tracks (id, type,
    length, a short hint of what they hold) — a container that keeps growing shows up
    as the same id with a rising length. `own`: the probe's containers, left out."""
    types: collections.Counter = collections.Counter()
    longest: list[tuple[int, int, object]] = []
    skip = {id(types), *(id(o) for o in own)}
    loops: list[dict] = []
    for o in gc.get_objects():
        types[type(o).__qualname__] += 1
        if isinstance(o, asyncio.BaseEventLoop):  # its timer heap keeps cancelled handles
            loops.append({"scheduled": len(o._scheduled), "ready": len(o._ready),
                          "tasks": len(asyncio.all_tasks(o)) if o.is_running() else 0,
                          "selector": len((getattr(o, "_selector", None) and
                                          o._selector.get_map()) or ())})
        if isinstance(o, CONTAINERS) and id(o) not in skip:
            n = len(o)
            if n >= 200:
                longest.append((n, id(o), o))
    longest.sort(key=lambda x: x[0], reverse=True)
    rows = []
    for n, ident, o in longest[:25]:
        try:
            first = next(iter(o), None)
            hint = repr(first)[:60] + (f" -> {repr(o[first])[:60]}" if isinstance(o, dict)
                                       and first is not None else "")
        except Exception as e:  # a container changed while read
            hint = f"? {type(e).__name__}"
        rows.append({"id": ident, "type": type(o).__qualname__, "len": n, "hint": hint})
    del longest
    return types, rows, loops


@functools.cache
def _main_line() -> int:
    src = Path(__file__).read_text().splitlines()
    return 1 + next(i for i, ln in enumerate(src) if ln.startswith("sys.exit(main("))


def _without_probe(snap: tracemalloc.Snapshot) -> tracemalloc.Snapshot:
    """The snapshot without the probe's own allocations: tracemalloc's (most recent frame
    there), and any with a frame on a line of this file but the one that runs the agent
    (which is under every agent allocation whose traceback reaches that far). One pass in
    Python: Snapshot.filter_traces with a Filter per line took seconds."""
    me, tm, main_line = __file__, tracemalloc.__file__, _main_line()
    keep = []
    for tr in snap.traces._traces:  # (domain, size, frames most recent first, nframes)
        frames = tr[2]
        if frames and frames[0][0] == tm:
            continue
        if any(fn == me and ln != main_line for fn, ln in frames):
            continue
        keep.append(tr)
    return tracemalloc.Snapshot(tuple(keep), snap.traceback_limit)


def run() -> None:
    t0 = time.monotonic()
    base_types = None
    base_t = None
    rss_at_trace = 0.0
    first_snap = None
    with open(OUT, "a") as f:
        while True:
            time.sleep(EVERY)
            t = time.monotonic() - t0
            mi = libc.mallinfo2()
            row: dict = {
                "t": round(t, 1), "rss_mib": _rss_mib(), "smaps_mib": _smaps(),
                "malloc": {k: round(getattr(mi, k) / 2**20, 3)
                           for k in ("arena", "hblkhd", "uordblks", "fordblks", "keepcost")},
                "sqlite_mib": (lambda u: None if u is None else round(u / 2**20, 3))(
                    _sqlite_used()),
                "py_blocks": sys.getallocatedblocks(), "gc_counts": gc.get_count(),
                "threads": threading.active_count(), "zeroconf": _zeroconf(),
            }
            row["fds"] = len(os.listdir("/proc/self/fd"))
            row["obmalloc"] = _obmalloc()
            types, row["containers"], row["loops"] = _scan((base_types, row) if base_types else (row,))
            row["objects"] = sum(types.values())
            if base_types is None and t >= BASE:
                base_types, base_t = types, row["t"]
            if base_types is not None:
                grew = types.copy()
                grew.subtract(base_types)
                row["base_t"] = base_t
                row["types_grew"] = [(k, v) for k, v in grew.most_common(20) if v > 0]
            if TRACE and tracemalloc.is_tracing():
                cur, _peak = tracemalloc.get_traced_memory()
                row["traced_mib"] = round(cur / 2**20, 3)
                row["tracemalloc_own_mib"] = round(tracemalloc.get_tracemalloc_memory() / 2**20, 3)
                row["rss_since_trace_mib"] = round(row["rss_mib"] - rss_at_trace, 3)
                snap = _without_probe(tracemalloc.take_snapshot())
                # the process's own, without the probe's (its kept first snapshot)
                row["traced_app_mib"] = round(sum(tr.size for tr in snap.traces) / 2**20, 3)
                row["traced_by_site"] = [
                    {"kib": round(s.size / 1024, 1), "count": s.count,
                     "where": [f"{fr.filename.split('site-packages/')[-1]}:{fr.lineno}"
                               for fr in reversed(s.traceback)]}
                    for s in snap.statistics("traceback")[:12]]
                if first_snap is None:
                    first_snap, row["trace_compare_base"] = snap, True
                else:  # what grew since the first snapshot, by traceback
                    row["traced_grew"] = [
                        {"kib": round(d.size_diff / 1024, 1), "count": d.count_diff,
                         "where": [f"{fr.filename.split('site-packages/')[-1]}:{fr.lineno}"
                                   for fr in reversed(d.traceback)]}
                        for d in snap.compare_to(first_snap, "traceback")[:12]
                        if d.size_diff > 0]
                del snap
            elif TRACE and t >= BASE:
                tracemalloc.start(TRACE)
                rss_at_trace = row["rss_mib"]
            row["probe_s"] = round(time.monotonic() - t0 - t, 3)  # this line's cost
            f.write(json.dumps(row) + "\n")
            f.flush()
            if TRIM:
                libc.malloc_trim(0)


if os.environ.get("XT_MEM_RING_S"):
    from exotray.core import history

    history.ring_size.__defaults__ = (float(os.environ["XT_MEM_RING_S"]),)

threading.Thread(target=run, name="xt-mem-probe", daemon=True).start()

from exotray.cli.main import main  # noqa: E402

sys.exit(main(sys.argv[1:]))

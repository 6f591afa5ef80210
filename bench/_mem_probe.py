"""Run `exotray ARGS` (e.g. `agent …`) with a thread that writes, every XT_MEM_EVERY
seconds, one JSON line to XT_MEM_OUT about where the process's memory is; used by
soak.py --split to tell what grows. Bench code only: nothing of it is in exotray.

Each line: RSS and its parts from /proc/self/smaps (the main heap, anonymous maps —
other threads' malloc arenas and large blocks —, files), glibc's mallinfo2 (bytes in use,
free inside arenas, mmapped), SQLite's own memory counter, Python's allocator (blocks,
arenas), gc object counts by type (the types that grew most since the base), zeroconf's
containers (cache records, expiry heap, question history, listeners), and with
XT_MEM_TRACE=N tracemalloc (N frames) started XT_MEM_BASE seconds after start, once the
agent has imported and settled: its traced total is what was allocated since then and is
still held, listed by traceback (tracing from the start costs a snapshot of every import's
allocations: ~17 s of CPU and +60 MiB each time on this machine). XT_MEM_TRIM=1 calls
malloc_trim(0) after each line (so the next line shows what trimming gives back).
XT_MEM_RING_S=S makes the agent's history rings hold S seconds instead of an hour
(`core.history.ring_size`'s span), so that "after the rings fill" comes within a short run.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
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


def _sqlite_used() -> int | None:
    """sqlite3_memory_used() of the SQLite that _sqlite3 uses (the one mapped already)."""
    try:
        import _sqlite3  # noqa: F401  (maps libsqlite3 into the process)
        path = next((ln.split()[-1] for ln in Path("/proc/self/maps").read_text().splitlines()
                     if "libsqlite3" in ln), None)
        if path is None:
            return None
        lib = ctypes.CDLL(path)
        lib.sqlite3_memory_used.restype = ctypes.c_int64
        return lib.sqlite3_memory_used()
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


def _types() -> collections.Counter:
    return collections.Counter(type(o).__qualname__ for o in gc.get_objects())


def run() -> None:
    t0 = time.monotonic()
    base_types = None
    rss_at_trace = 0.0
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
            types = _types()
            row["objects"] = sum(types.values())
            if base_types is None and t >= BASE:
                base_types = types
            if base_types is not None:
                grew = types.copy()
                grew.subtract(base_types)
                row["types_grew"] = [(k, v) for k, v in grew.most_common(12) if v > 0]
            if TRACE and tracemalloc.is_tracing():
                cur, _peak = tracemalloc.get_traced_memory()
                row["traced_mib"] = round(cur / 2**20, 3)
                row["tracemalloc_own_mib"] = round(tracemalloc.get_tracemalloc_memory() / 2**20, 3)
                row["rss_since_trace_mib"] = round(row["rss_mib"] - rss_at_trace, 3)
                snap = tracemalloc.take_snapshot().filter_traces(
                    [tracemalloc.Filter(False, tracemalloc.__file__),
                     tracemalloc.Filter(False, __file__, all_frames=True)])
                row["traced_by_site"] = [
                    {"kib": round(s.size / 1024, 1), "count": s.count,
                     "where": [f"{fr.filename.split('site-packages/')[-1]}:{fr.lineno}"
                               for fr in s.traceback]}
                    for s in snap.statistics("traceback")[:12]]
                del snap
            elif TRACE and t >= BASE:
                tracemalloc.start(TRACE)
                rss_at_trace = row["rss_mib"]
            f.write(json.dumps(row) + "\n")
            f.flush()
            if TRIM:
                libc.malloc_trim(0)


if os.environ.get("XT_MEM_RING_S"):
    from exotray.core import history

    history.ring_size.__defaults__ = (float(os.environ["XT_MEM_RING_S"]),)

threading.Thread(target=run, name="xt-mem-probe", daemon=True).start()

from exotray.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))

"""Giving the C allocator's free pages back to the system once a minute (glibc only).

Once the history rings and SQLite's page cache are full, the agent's live allocations
stay flat, but glibc's main arena keeps the pages of memory freed between them: in the
lab soak (docs/benchmarks.md, "After the rings fill") RSS still crept 0.02–0.05 MiB a
minute with glibc's bytes in use flat, and an agent whose process called
`malloc_trim(0)` each minute stayed level (+0.003 MiB a minute over minutes 20–30) and
1.0–1.3 MiB below its twins at 30 minutes. `malloc_trim` hands free pages inside every
arena back with madvise; the blocks in use do not move. Where the C library has no
`malloc_trim` (macOS, musl) there is nothing to do and no loop runs.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable

#: seconds between trims
TRIM_EVERY_S = 60.0

_FIND = object()


def libc_malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim from the process's own C library, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    fn = getattr(libc, "malloc_trim", None)
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


class Trimmer:
    """Call to trim (a loop calls it every TRIM_EVERY_S); `available` is False where the
    C library cannot, and a call then does nothing."""

    def __init__(self, trim: Callable[[int], int] | object | None = _FIND) -> None:
        self._trim = libc_malloc_trim() if trim is _FIND else trim
        self.calls = 0
        #: how many calls gave memory back (malloc_trim's own answer)
        self.released = 0

    @property
    def available(self) -> bool:
        return self._trim is not None

    def __call__(self) -> bool:
        if self._trim is None:
            return False
        self.calls += 1
        if self._trim(0):
            self.released += 1
        return True

"""Memory the tray app does not need to keep.

PySide6 reads the whole source of every module imported after it (shibokensupport's
feature check, `inspect.getsource`, looks for ``from __feature__ import``), and
`linecache` keeps every file it read: pyqtgraph's and numpy's ~270 files cost the tray
about 12 MiB of RSS that nothing uses (tracebacks read the lines again when they need
them). `forget_module_sources()` drops each file's lines right after PySide6 looked.
"""

from __future__ import annotations

import linecache
import logging
import sys
from types import ModuleType

log = logging.getLogger(__name__)


def forget_module_sources() -> bool:
    """Install the wrapper (once; after PySide6 is imported). False when this PySide6
    has no such check (nothing to do)."""
    feature = sys.modules.get("shibokensupport.feature")
    check = getattr(feature, "_mod_uses_pyside", None)
    if feature is None or check is None:
        return False
    if getattr(check, "_exotray_wrapped", False):
        return True

    def uses_pyside(module: ModuleType) -> bool:
        try:
            return check(module)
        finally:
            path = getattr(module, "__file__", None)
            if path:
                linecache.cache.pop(path, None)

    uses_pyside._exotray_wrapped = True  # type: ignore[attr-defined]
    feature._mod_uses_pyside = uses_pyside  # type: ignore[union-attr]
    linecache.clearcache()  # what it read before now
    return True

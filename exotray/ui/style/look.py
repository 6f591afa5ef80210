"""How the windows look: the colour scheme (following the system's light or dark) and
the unit rates are shown in (bytes/s or bits/s, from Preferences).

One ``Look`` per application (``instance()``). It sets style/theme.py's palette and Qt's
application palette (so the native widgets — the link table, the tool and status bars —
match the drawn ones), and emits ``changed`` whenever the scheme or the units change:
the main window then restyles and redraws at once.

The scheme follows ``QStyleHints.colorScheme`` and its ``colorSchemeChanged`` signal
(Qt 6.5+); where the platform does not say (``Unknown``: the offscreen platform, older
desktops) the application palette's window colour decides. ``set_scheme`` overrides the
system (screenshots, tests); ``set_scheme(None)`` follows it again.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette

from exotray.core import fmt
from exotray.ui.style import theme

log = logging.getLogger(__name__)

_instance: Look | None = None


def instance() -> Look:
    """The application's Look (created on first use; needs a QGuiApplication)."""
    global _instance
    if _instance is None:
        _instance = Look(QGuiApplication.instance())
    return _instance


class Look(QObject):
    #: the scheme or the units changed: restyle and redraw
    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._forced: str | None = None
        hints = QGuiApplication.styleHints()
        self._system = _scheme_name(hints.colorScheme())
        hints.colorSchemeChanged.connect(self._system_changed)
        self._apply(self.wanted_scheme(), force=True)

    # -- scheme ---------------------------------------------------------------------------
    def scheme(self) -> str:
        """The scheme drawn now: "light" or "dark"."""
        return theme.scheme()

    def wanted_scheme(self) -> str:
        """The forced scheme, else the system's, else the one its palette suggests."""
        if self._forced is not None:
            return self._forced
        if self._system is not None:
            return self._system
        return "dark" if _is_dark(_platform_palette()) else "light"

    def set_scheme(self, scheme: str | None) -> None:
        """Draw in `scheme` whatever the system says; None: follow the system again."""
        if scheme is not None and scheme not in theme.SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(theme.SCHEMES)}, not {scheme!r}")
        self._forced = scheme
        self._apply(self.wanted_scheme())

    def _system_changed(self, scheme: Qt.ColorScheme) -> None:
        self._system = _scheme_name(scheme)
        log.debug("the system's colour scheme is now %s", self._system or "unknown")
        self._apply(self.wanted_scheme())

    def _apply(self, scheme: str, force: bool = False) -> None:
        changed = theme.use(scheme)
        if changed or force:
            app = QGuiApplication.instance()
            if isinstance(app, QGuiApplication):
                # The platform's own palette when it is of the scheme (native look), ours
                # when it is not (the system is light and we draw dark, or the reverse).
                own = _platform_palette()
                app.setPalette(own if _is_dark(own) == (scheme == "dark") else qt_palette())
        if changed:
            self.changed.emit()

    # -- units ----------------------------------------------------------------------------
    def units(self) -> str:
        return fmt.units()

    def set_units(self, units: str | None) -> None:
        """Show rates in "bytes" or "bits" (None or anything else: bytes, logged)."""
        if units not in fmt.UNITS:
            if units is not None:
                log.warning("unknown units %r in the settings; showing bytes/s", units)
            units = "bytes"
        if units != fmt.units():
            fmt.set_units(units)
            self.changed.emit()


def _scheme_name(scheme: Qt.ColorScheme) -> str | None:
    return {Qt.ColorScheme.Dark: "dark", Qt.ColorScheme.Light: "light"}.get(scheme)


def _platform_palette() -> QPalette:
    """The platform theme's palette (not one we set)."""
    app = QGuiApplication.instance()
    if isinstance(app, QGuiApplication):
        app.setPalette(QPalette())  # an empty palette resolves to the platform's
        return QPalette(app.palette())
    return QPalette()


def _is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def qt_palette() -> QPalette:
    """A Qt palette from style/theme.py's current colours, for the native widgets."""
    t = theme
    p = QPalette()
    roles = {
        QPalette.ColorRole.Window: t.PANEL,
        QPalette.ColorRole.WindowText: t.TEXT,
        QPalette.ColorRole.Base: t.BACKGROUND,
        QPalette.ColorRole.AlternateBase: t.PANEL,
        QPalette.ColorRole.Text: t.TEXT,
        QPalette.ColorRole.Button: t.PANEL,
        QPalette.ColorRole.ButtonText: t.TEXT,
        QPalette.ColorRole.BrightText: t.LINK_HOT,
        QPalette.ColorRole.Highlight: t.ACCENT,
        QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.ToolTipBase: t.PANEL,
        QPalette.ColorRole.ToolTipText: t.TEXT,
        QPalette.ColorRole.PlaceholderText: t.TEXT_MUTED,
        QPalette.ColorRole.Link: t.ACCENT_DARK,
        QPalette.ColorRole.Light: t.GRID,
        QPalette.ColorRole.Midlight: t.GRID,
        QPalette.ColorRole.Mid: t.TEXT_FAINT,
        QPalette.ColorRole.Dark: t.TEXT_FAINT,
        QPalette.ColorRole.Shadow: t.BACKGROUND if t.scheme() == "dark" else t.TEXT,
    }
    for role, color in roles.items():
        p.setColor(role, QColor(color))
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text,
                 QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor(t.TEXT_FAINT))
    return p

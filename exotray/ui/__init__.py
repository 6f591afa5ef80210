"""The tray app (PySide6): a client of its local agent that shows, notifies and edits
settings; it never measures.

Its rooms, lowest first: `style` (colours, units), `client` (the agent over HTTP on
loopback, starting or attaching to it), `link` (a link's details, charts and the table),
`topology` (the cluster map), `tray` (icon, menu, notifications) and `window` (the
dashboard, timeline, Preferences). At the top, `app` assembles them, `demo` runs three
agents and the window on loopback, and `lean` drops memory the app does not need.

May import: its rooms, `exotray.core`; never `exotray.agent` (docs/design.md).
"""

"""How the windows look: the palette and sizes, light and dark (`theme`), and following
the system's scheme and the user's units for rates (`look`).

May import: `exotray.core`. The bottom of the UI's layers: every other UI package may use it.
"""

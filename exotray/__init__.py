"""exotray: see the network of a small compute cluster."""

__version__ = "0.1.0"
PROTO = 1

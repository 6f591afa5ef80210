"""The cluster key: read once, never logged; HMAC signatures of what peers exchange."""

from __future__ import annotations

import hashlib
import hmac
import logging
from pathlib import Path

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "x-exotray-signature"


class ClusterKeyError(ValueError):
    """The cluster key file cannot be read or is too short."""


def load_key(path: Path) -> bytes:
    """The cluster key (its bytes, surrounding whitespace removed); never logged."""
    try:
        key = path.read_bytes().strip()
        mode = path.stat().st_mode
    except OSError as e:
        raise ClusterKeyError(f"cannot read the cluster key file {path}: {e.strerror}") from None
    if len(key) < 16:
        raise ClusterKeyError(f"the cluster key in {path} is too short: use at least 16 bytes "
                        "(e.g. `head -c 32 /dev/urandom | base64 > key`)")
    if mode & 0o077:
        log.warning("the cluster key file %s is readable by other users", path)
    return key


def sign(key: bytes, body: bytes) -> str:
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def signed_by(key: bytes, body: bytes, signature: str) -> bool:
    return hmac.compare_digest(signature, sign(key, body))

"""Local control: the tray app changes settings and pauses monitoring through these.

Only requests from a loopback address that carry the token from the state dir
(`control_token`, mode 0600, created on first start) are accepted. Changes are
validated like the config file, applied without a restart, and merged into the config
file (TOML) so they survive one.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from exotray.core import paths
from exotray.core.paths import TOKEN_FILE
from exotray.core.settings import Settings, SettingsError, from_mapping

log = logging.getLogger(__name__)

#: what Preferences may change at run time
EDITABLE = ("interval", "threshold", "sustain", "clear", "capacity", "notify_peers",
            "key_file", "units")


def load_or_create_token(state_dir: Path) -> str:
    """The control token; created 0600 on first use, and its mode repaired if loosened."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / TOKEN_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.stat().st_mode & 0o077:
            log.warning("%s was readable by others; restricting it to its owner", path)
            path.chmod(0o600)
        token = path.read_text().strip()
        if len(token) >= 32:
            return token
        path.unlink()
        return load_or_create_token(state_dir)
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def editable(settings: Settings) -> dict[str, Any]:
    return {k: getattr(settings, k) for k in EDITABLE}


def validate_changes(current: Settings, changes: Any) -> Settings:
    if not isinstance(changes, dict):
        raise SettingsError("expected a JSON object of settings")
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise SettingsError(f"not changeable at run time: {', '.join(sorted(unknown))}")
    return from_mapping(changes, base=current)


def save(config_path: Path, new: Settings) -> None:
    """Merge the editable settings into the TOML config file, atomically and durably:
    written to a temporary file beside it, flushed and fsynced, renamed over it, and the
    directory fsynced, so that a crash or a power cut leaves the old file or the new one,
    never an empty or a half-written one. A failure (a full disk, a read-only dir) is a
    SettingsError naming the file, and leaves no temporary file behind. A symlinked
    config file (dotfiles) stays a symlink: its target is replaced."""
    data: dict[str, Any] = {}
    try:
        with open(config_path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        pass
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SettingsError(f"cannot update {config_path}: {e}") from None
    for k, v in editable(new).items():
        if v is None:  # TOML has no null: an unset setting is an absent key
            data.pop(k, None)
        else:
            data[k] = v
    write_atomically(Path(os.path.realpath(config_path)), tomli_w.dumps(data).encode())


def write_atomically(path: Path, content: bytes) -> None:
    """paths.write_atomically, its failure said as a settings error naming the file."""
    try:
        paths.write_atomically(path, content)
    except OSError as e:
        raise SettingsError(f"cannot save {path}: {e.strerror or e}") from None


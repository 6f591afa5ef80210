"""Local control: the tray app changes settings and pauses monitoring through these.

Only requests from a loopback address that carry the token from the state dir
(`control_token`, mode 0600, created on first start) are accepted. Changes are
validated like the config file, applied without a restart, and written into the config
file (TOML) so they survive one: only the keys that changed, the rest of the file kept
as the user wrote it.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
from pathlib import Path
from typing import Any

from exotray.core import configfile
from exotray.core.paths import TOKEN_FILE
from exotray.core.settings import (
    EDITABLE,
    Settings,
    SettingsError,
    from_mapping,
    load_file,
    problems,
)

log = logging.getLogger(__name__)



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


def save(config_path: Path, new: Settings, old: Settings | None = None) -> bool:
    """Write into the config file the editable settings that changed from `old` (the
    settings before the change; without it, what the file says, defaults for what it
    does not), and nothing else: comments, order and the other keys stay as the user wrote
    them, no default is added (core/configfile.update). The file is replaced atomically
    and durably (a temporary file beside it, fsynced, renamed over it, the directory
    fsynced), keeping its mode; a symlinked file (dotfiles) stays a symlink, its target
    replaced. A failure (a full disk, a read-only dir, a file that is no longer TOML) is a
    SettingsError naming the file, and leaves no temporary file behind. Returns whether
    the file changed."""
    if old is None:
        try:
            data = load_file(config_path) if config_path.exists() else {}
        except SettingsError:
            data = {}
        wrong = problems(data)
        old = from_mapping({k: v for k, v in data.items() if k not in wrong})
    return configfile.update(config_path, editable(old), editable(new))

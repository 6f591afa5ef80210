"""Where exotray keeps its files (platformdirs), shared by the agent, the CLI and the UI."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import platformdirs

APP = "exotray"
#: the local control token's file name in the state dir (mode 0600)
TOKEN_FILE = "control_token"
#: held (flock) by the agent that uses the state dir, for its whole life
LOCK_FILE = "lock"


def config_file() -> Path:
    return Path(platformdirs.user_config_dir(APP)) / "config.toml"


def state_dir() -> Path:
    return Path(platformdirs.user_state_dir(APP))


def read_token(state: Path) -> str | None:
    try:
        return (state / TOKEN_FILE).read_text().strip() or None
    except OSError:
        return None


def write_atomically(path: Path, content: bytes, mode: int | None = None) -> None:
    """Replace `path` with `content` so that, also after a crash or a full disk, it is the
    old file or the new one: a temporary file in the same folder, fsync, rename, fsync of
    the folder. Keeps the file's permission bits (or `mode` for a new file, else 0644).
    On failure the temporary file is removed and the OSError raised as it came."""
    tmp = path.with_name(path.name + ".tmp")
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except OSError:
            mode = 0o644
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
        try:
            os.fchmod(fd, mode)  # a leftover temporary file keeps its own mode otherwise
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    # The rename on disk too. Best effort: not every file system fsyncs a folder, and the
    # file is in place either way.
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

"""This node's identity and state dir: the lock that keeps one agent per state dir, and
the node id peers know it by. Also the errors that stop an agent from starting."""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import secrets
import stat
import time
from pathlib import Path

from exotray.core import paths

log = logging.getLogger("exotray.agent.runtime")


class StartError(RuntimeError):
    """The agent cannot start; the message says why, in the user's terms."""


class StateDirError(StartError):
    """The state dir cannot be used (not a directory, not writable, or held by another
    agent)."""


#: files set aside (a database or a file that could not be read) kept, the newest
KEEP_ASIDE = 3


def set_aside(path: Path, why: str, companions: tuple[str, ...] = ("-wal", "-shm")) -> Path:
    """Move a state file that cannot be used (and its companions, a database's -wal and
    -shm) out of the way as NAME.WHY-STAMP, for the user to look at; keep the newest
    KEEP_ASIDE such files of that name."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside = path.with_name(f"{path.name}.{why}-{stamp}")
    for suffix in ("", *companions):
        src = Path(str(path) + suffix)
        if src.exists():
            src.replace(Path(str(aside) + suffix))
    old = sorted((p for p in path.parent.glob(f"{path.name}.*-*")
                  if not (companions and p.name.endswith(companions))),
                 key=lambda p: p.stat().st_mtime)
    for p in old[:-KEEP_ASIDE]:
        for suffix in ("", *companions):
            Path(str(p) + suffix).unlink(missing_ok=True)
    return aside


def make_private(state_dir: Path) -> None:
    """The state dir and its files are this user's alone (0700, 0600), whatever the umask
    they were made under: the history says what this node talked to, and when. Modes
    that let others in are put right at start, with one log line."""
    fixed = []
    for p in (state_dir, *state_dir.iterdir()):
        try:
            st = p.lstat()
        except OSError:  # (gone meanwhile)
            continue
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) or not st.st_mode & 0o077:
            continue
        want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        try:
            os.chmod(p, want)
            fixed.append(f"{p.name} {stat.S_IMODE(st.st_mode):o}")
        except OSError as e:
            log.warning("cannot make %s private (mode %o): %s", p,
                        stat.S_IMODE(st.st_mode), e.strerror or e)
    if fixed:
        log.info("state dir %s: made private to this user (was: %s)", state_dir,
                 ", ".join(fixed))


def lock_state_dir(state_dir: Path) -> int:
    """Hold the state dir for this agent's life: an exclusive flock on its `lock` file
    (released by the kernel when the process ends, however it ends). Two agents with one
    state dir would share one node id and drop each other's snapshots as their own, so a
    second one is refused. Returns the lock's file descriptor."""
    if state_dir.exists() and not state_dir.is_dir():  # mkdir would say "File exists"
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(state_dir))
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    make_private(state_dir)
    path = state_dir / paths.LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip()
        os.close(fd)
        who = f" (pid {holder})" if holder.isdigit() else ""
        raise StateDirError(
            f"cannot use state dir {state_dir}: another exotray agent{who} is using it, and "
            "two agents with one state dir would share one node id. Give this one its own: "
            "--state-dir DIR."
        ) from None
    except OSError:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def load_node_id(state_dir: Path) -> str:
    """This node's stable id, created once in the state dir.

    Peers know a node by its id, so a node_id file that holds no id is refused, never
    replaced behind the user's back (moving it aside gives a new identity). A new id is
    written to node_id.tmp, flushed and fsynced, renamed into place and the directory
    fsynced; on failure (a full disk, a read-only dir) no node_id.tmp is left behind.
    Failures are OSErrors whose text names the file and what to do (the caller adds
    "cannot use state dir …" and releases the state dir's lock)."""
    path = state_dir / "node_id"
    aside = f"move it aside (mv {path} {path}.bad) and start again"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raw = None
    except IsADirectoryError:
        raise OSError(errno.EISDIR, f"{path} is a directory, not this node's id file: "
                      f"{aside}; this node then gets a new id") from None
    except OSError as e:
        raise OSError(e.errno, f"cannot read this node's id from {path}: {e.strerror}") from None
    if raw is not None:
        text = raw.decode("utf-8", errors="replace").strip()
        if re.fullmatch(r"[0-9a-z]{1,64}", text):
            return text
        if text:
            raise OSError(errno.EINVAL, (
                f"{path} does not hold a node id (it holds {text[:24]!r}): it was edited or "
                f"damaged. Peers know this node by that id; to give it a new one, {aside}."))
        log.warning("%s is empty (written by a crash while it was created); making a new "
                    "node id", path)
    node_id = secrets.token_hex(6)
    try:
        paths.write_atomically(path, f"{node_id}\n".encode(), mode=0o600)
    except OSError as e:
        raise OSError(e.errno, f"cannot write a new node id to {path}: {e.strerror}") from None
    return node_id

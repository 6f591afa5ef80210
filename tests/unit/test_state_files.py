"""The node id and the config file on disk (issue 18, point 9): a damaged node_id is
refused with words that say what to do, never silently replaced; writes are atomic and
durable and leave no temporary file behind when they fail. Real files in tmp_path."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from exotray.agent import runtime as rt
from exotray.agent.http import control
from exotray.core.settings import Settings, SettingsError

ROOT = os.geteuid() == 0
#: chmod cannot make a directory read-only for root
not_root = pytest.mark.skipif(ROOT, reason="root ignores file permissions")


def _fsyncs(monkeypatch) -> list[int]:
    """What got fsynced, by inode (files and directories)."""
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def _on_tmpfs(tmp_path: Path, opts: str, code: str, fill: bool = False) -> dict:
    """Run `code` (Python that sets `out`) with tmp_path/mnt a fresh tmpfs mounted with
    `opts` (filled up first when `fill`), in a private mount namespace that vanishes with
    the process: a real read-only or full file system. Needs root and unshare(1)."""
    if not ROOT or shutil.which("unshare") is None or not sys.platform.startswith("linux"):
        pytest.skip("needs root and unshare (Linux; Debian/Ubuntu: apt install util-linux) "
                    "to mount a tmpfs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = ('mount -t tmpfs -o "$2" tmpfs "$1" || exit 90\n'
              + ('head -c 1048576 /dev/zero > "$1/fill" 2>/dev/null\n' if fill else "")
              + 'exec "$3" -c "$4" "$1"')
    prog = ("import json, os, sys\nfrom pathlib import Path\nmnt = Path(sys.argv[1])\n"
            + code + "\nprint(json.dumps(out))")
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(mnt), opts,
                        sys.executable, prog], capture_output=True, text=True, timeout=60)
    if r.returncode == 90:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


_LOAD_ID = """
from exotray.agent.runtime import load_node_id
try:
    out = {"id": load_node_id(mnt)}
except OSError as e:
    out = {"errno": e.errno, "error": e.strerror}
out["files"] = sorted(p.name for p in mnt.iterdir() if p.name != "fill")
"""


# -- node_id --------------------------------------------------------------------------
def test_a_new_id_is_written_durably_and_kept(tmp_path: Path, monkeypatch) -> None:
    state = tmp_path / "state"
    synced = _fsyncs(monkeypatch)
    node_id = rt.load_node_id(state)
    assert (state / "node_id").read_text() == node_id + "\n"
    assert sorted(p.name for p in state.iterdir()) == ["node_id"]  # no node_id.tmp
    # the data, then the rename
    assert synced == [(state / "node_id").stat().st_ino, state.stat().st_ino]
    assert rt.load_node_id(state) == node_id  # the same identity on every start


@pytest.mark.parametrize("garbage", [b"hello world", b"<script>", b"ABC-123", b"\xff\xfe\x00",
                                     b"a" * 65])
def test_a_garbage_id_is_refused_not_replaced(tmp_path: Path, garbage: bytes) -> None:
    (tmp_path / "node_id").write_bytes(garbage)
    with pytest.raises(OSError) as e:
        rt.load_node_id(tmp_path)
    msg = e.value.strerror
    assert str(tmp_path / "node_id") in msg and "does not hold a node id" in msg
    assert f"mv {tmp_path / 'node_id'} {tmp_path / 'node_id'}.bad" in msg
    assert (tmp_path / "node_id").read_bytes() == garbage  # left as it was, for the user
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node_id"]


def test_an_empty_id_file_left_by_a_crash_gets_a_new_id(tmp_path: Path, caplog) -> None:
    (tmp_path / "node_id").write_bytes(b"")
    node_id = rt.load_node_id(tmp_path)
    assert (tmp_path / "node_id").read_text() == node_id + "\n"
    assert "is empty" in caplog.text


def test_node_id_that_is_a_directory_is_named(tmp_path: Path) -> None:
    (tmp_path / "node_id").mkdir()
    with pytest.raises(OSError) as e:
        rt.load_node_id(tmp_path)
    assert e.value.errno == errno.EISDIR
    assert f"{tmp_path / 'node_id'} is a directory" in e.value.strerror
    assert "move it aside" in e.value.strerror


@not_root
def test_read_only_state_dir_names_the_file_and_leaves_nothing(tmp_path: Path) -> None:
    state = tmp_path / "ro"
    state.mkdir()
    state.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(OSError) as e:
            rt.load_node_id(state)
        assert e.value.errno == errno.EACCES
        assert e.value.strerror == (f"cannot write a new node id to {state / 'node_id'}: "
                                    "Permission denied")
        assert list(state.iterdir()) == []
    finally:
        state.chmod(0o700)


def test_a_read_only_file_system_names_the_file(tmp_path: Path) -> None:
    out = _on_tmpfs(tmp_path, "ro,size=64k", _LOAD_ID)
    assert out["errno"] == errno.EROFS
    assert out["error"].startswith("cannot write a new node id to ")
    assert out["error"].endswith("/mnt/node_id: Read-only file system")
    assert out["files"] == []


def test_a_real_full_disk_leaves_no_empty_tmp_file(tmp_path: Path) -> None:
    """The lab's finding: a full state dir left an empty node_id.tmp."""
    out = _on_tmpfs(tmp_path, "size=16k", _LOAD_ID, fill=True)
    assert out["errno"] == errno.ENOSPC, out
    assert out["error"].endswith("/mnt/node_id: No space left on device")
    assert out["files"] == []


def test_a_full_disk_leaves_no_empty_tmp_file(tmp_path: Path, monkeypatch) -> None:
    """ENOSPC on write, simulated (runs everywhere; the test above is the real thing)."""
    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError) as e:
        rt.load_node_id(tmp_path)
    assert "No space left on device" in e.value.strerror
    assert str(tmp_path / "node_id") in e.value.strerror
    assert list(tmp_path.iterdir()) == []


def test_a_leftover_tmp_file_does_not_matter(tmp_path: Path) -> None:
    (tmp_path / "node_id.tmp").write_text("")
    node_id = rt.load_node_id(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node_id"]
    assert (tmp_path / "node_id").read_text().strip() == node_id


def test_the_agent_refuses_to_start_saying_so(tmp_path: Path) -> None:
    """Through the Agent: a StartError (the CLI prints it) naming node_id, not the port;
    the state dir's lock is released, so fixing the file and starting again works."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "node_id").write_text("not an id\n")
    settings = Settings(state_dir=str(state), mdns=False, bind="127.0.0.1", port=0)
    with pytest.raises(rt.StateDirError) as e:
        rt.Agent(settings)
    assert f"{state / 'node_id'} does not hold a node id" in str(e.value)
    (state / "node_id").rename(state / "node_id.bad")
    agent = rt.Agent(settings)  # not "another exotray agent is using it"
    try:
        assert (state / "node_id").read_text().strip() == agent.node_id
    finally:
        agent._unlock()


# -- the config file --------------------------------------------------------------------
def test_config_is_replaced_durably_keeping_other_keys_and_mode(tmp_path: Path,
                                                                monkeypatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text('peers = ["10.0.0.2:52600"]\nthreshold = 0.8\n')
    config.chmod(0o600)
    synced = _fsyncs(monkeypatch)
    control.save(config, Settings(threshold=0.7))
    text = config.read_text()
    assert 'peers = [\n    "10.0.0.2:52600",\n]' in text or '"10.0.0.2:52600"' in text
    assert "threshold = 0.7" in text
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert synced == [config.stat().st_ino, tmp_path.stat().st_ino]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]


def test_config_save_failing_on_a_full_disk_keeps_the_old_file(tmp_path: Path,
                                                               monkeypatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text("threshold = 0.8\n")

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(SettingsError) as e:
        control.save(config, Settings(threshold=0.7))
    assert str(e.value) == f"cannot save {config}: No space left on device"
    assert config.read_text() == "threshold = 0.8\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]


@not_root
def test_config_in_a_read_only_dir_is_a_settings_error(tmp_path: Path) -> None:
    d = tmp_path / "etc"
    d.mkdir()
    (d / "config.toml").write_text("threshold = 0.8\n")
    d.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(SettingsError) as e:
            control.save(d / "config.toml", Settings(threshold=0.7))
        assert str(e.value) == f"cannot save {d / 'config.toml'}: Permission denied"
        assert (d / "config.toml").read_text() == "threshold = 0.8\n"
    finally:
        d.chmod(0o700)


def test_a_symlinked_config_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "exotray.toml"
    real.parent.mkdir()
    real.write_text("threshold = 0.8\n")
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    control.save(link, Settings(threshold=0.7))
    assert link.is_symlink()
    assert "threshold = 0.7" in real.read_text()


def test_config_on_a_real_full_disk_keeps_the_old_file(tmp_path: Path) -> None:
    code = """
from exotray.agent.http import control
from exotray.core.settings import Settings, SettingsError
(mnt / "config.toml").write_text("threshold = 0.8\\n")
try:  # fill the file system up
    with open(mnt / "fill", "ab") as f:
        while True:
            f.write(b"x" * 4096)
            f.flush()
except OSError:
    pass
try:
    control.save(mnt / "config.toml", Settings(threshold=0.7))
    out = {"error": None}
except SettingsError as e:
    out = {"error": str(e)}
out["config"] = (mnt / "config.toml").read_text()
out["files"] = sorted(p.name for p in mnt.iterdir())
"""
    out = _on_tmpfs(tmp_path, "size=16k", code)
    assert out["error"] is not None and out["error"].endswith(
        "/mnt/config.toml: No space left on device")
    assert out["config"] == "threshold = 0.8\n"
    assert out["files"] == ["config.toml", "fill"]

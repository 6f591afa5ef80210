"""A followed stream's frames wait in the kernel for the agent's tick (share/hold.py):
on a real TCP connection over loopback watched by the real event loop (epoll), a small
frame is not seen until a tick lets it through, a large one at once, and a connection
let go is read as data arrives again. Linux only (SO_RCVLOWAT's epoll behaviour); the
agent's followers using it are tested in tests/integration/test_stream_sharing.py."""

from __future__ import annotations

import asyncio
import socket
import sys
import time

import pytest

from exotray.agent.share import hold as H

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="SO_RCVLOWAT holds epoll's readiness on Linux")


def _pair() -> tuple[socket.socket, socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        a = socket.create_connection(srv.getsockname())
        b, _ = srv.accept()
    b.setblocking(False)
    return a, b


def _held(receiver: socket.socket) -> H.StreamHold:
    """A hold (the agent's ticks short enough) holding `receiver`."""
    hold = H.StreamHold()
    hold.tick(0.25)
    hold.add("peer", receiver)
    return hold


def _mark(sock: socket.socket) -> int:
    return sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT)


def test_a_small_frame_waits_for_the_tick_a_large_one_does_not():
    async def main() -> None:
        loop = asyncio.get_running_loop()
        sender, receiver = _pair()
        got: list[int] = []

        def readable() -> None:
            try:
                got.append(len(receiver.recv(1 << 20)))
            except BlockingIOError:
                return
            hold.rearm("peer")  # as the follower does after each read

        hold = H.StreamHold()
        assert hold.enabled
        hold.tick(0.25)  # (the agent's ticks are short enough: it holds)
        hold.add("peer", receiver)
        loop.add_reader(receiver.fileno(), readable)
        try:
            sender.send(b"f" * 300)
            await asyncio.sleep(0.2)
            assert got == []  # held in the kernel
            hold.tick(0.25)
            for _ in range(3):  # (read in the loop's next pass)
                await asyncio.sleep(0)
            assert got == [300]
            sender.send(b"g" * 100)
            await asyncio.sleep(0.2)
            assert got == [300]  # held again
            sender.send(b"h" * H.HOLD_BYTES)  # a large frame: read at once
            await asyncio.sleep(0.2)
            assert sum(got) == 300 + 100 + H.HOLD_BYTES
            hold.tick(0.25)  # nothing queued: the mark stays
            assert _mark(receiver) == H.HOLD_BYTES
            hold.remove("peer")  # let go (e.g. back to a pool): read as data arrives
            assert _mark(receiver) == 1
            assert len(hold) == 0
            sender.send(b"i" * 10)
            await asyncio.sleep(0.2)
            assert got[-1] == 10
        finally:
            loop.remove_reader(receiver.fileno())
            sender.close()
            receiver.close()

    asyncio.run(main())


def test_a_read_right_after_the_tick_leaves_what_is_queued_readable():
    sender, receiver = _pair()
    try:
        hold = _held(receiver)
        sender.send(b"a" * 100)
        hold.tick(0.25)  # let through
        hold.rearm("peer")  # (a follower's step for an earlier chunk, before the read)
        assert _mark(receiver) == 1
        for _ in range(50):
            try:
                receiver.recv(4096)
                break
            except BlockingIOError:
                time.sleep(0.01)
        hold.rearm("peer")  # nothing queued now: held again
        assert _mark(receiver) == H.HOLD_BYTES
    finally:
        sender.close()
        receiver.close()


def test_a_closed_socket_is_dropped_at_the_tick():
    sender, receiver = _pair()
    hold = _held(receiver)
    assert len(hold) == 1
    receiver.close()
    sender.close()
    hold.tick(0.25)  # (fileno() is -1 now: no error escapes)
    assert len(hold) == 0
    hold.close()


def test_ticks_too_far_apart_hold_nothing():
    sender, receiver = _pair()
    try:
        hold = _held(receiver)
        assert _mark(receiver) == H.HOLD_BYTES
        hold.tick(0.5)  # an interval of 2 s: a frame would wait half a second
        assert not hold.holding and len(hold) == 0
        assert _mark(receiver) == 1
        hold.add("peer", receiver)
        assert len(hold) == 0
    finally:
        sender.close()
        receiver.close()


@pytest.mark.parametrize(("platform", "release", "holds"), [
    ("linux", "6.18.44-fc-v1147", True), ("linux", "4.18.0-553.el8_10.x86_64", True),
    ("linux", "4.15.0-213-generic", False), ("linux", "3.10.0-1160.el7.x86_64", False),
    ("linux", "weird", False), ("darwin", "24.1.0", False)])
def test_only_a_kernel_that_signals_a_lowered_mark_holds(platform, release, holds):
    hold = H.StreamHold(platform=platform, release=release)
    hold.tick(0.25)
    assert hold.enabled is holds and hold.holding is holds


def test_elsewhere_frames_are_read_as_they_arrive():
    sender, receiver = _pair()
    try:
        hold = H.StreamHold(platform="darwin")
        hold.tick(0.25)
        hold.add("peer", receiver)
        assert not hold.enabled and len(hold) == 0
        assert _mark(receiver) == 1
    finally:
        sender.close()
        receiver.close()

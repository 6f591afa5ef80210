"""A followed stream's frames wait in the kernel for the agent's tick (stream_hold.py):
on a real TCP connection over loopback watched by the real event loop (epoll), a small
frame is not seen until a tick lets it through, a large one at once, and a connection
let go is read as data arrives again. Linux only (SO_RCVLOWAT's epoll behaviour); the
agent's followers using it are tested in tests/integration/test_stream_sharing.py."""

from __future__ import annotations

import asyncio
import socket
import sys

import pytest

from exotray.agent import stream_hold as H

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="SO_RCVLOWAT holds epoll's readiness on Linux")


def _pair() -> tuple[socket.socket, socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        a = socket.create_connection(srv.getsockname())
        b, _ = srv.accept()
    b.setblocking(False)
    return a, b


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
        hold.add("peer", receiver)
        loop.add_reader(receiver.fileno(), readable)
        try:
            sender.send(b"f" * 300)
            await asyncio.sleep(0.2)
            assert got == []  # held in the kernel
            hold.tick()
            for _ in range(3):  # (read in the loop's next pass)
                await asyncio.sleep(0)
            assert got == [300]
            sender.send(b"g" * 100)
            await asyncio.sleep(0.2)
            assert got == [300]  # held again
            sender.send(b"h" * H.HOLD_BYTES)  # a large frame: read at once
            await asyncio.sleep(0.2)
            assert sum(got) == 300 + 100 + H.HOLD_BYTES
            hold.tick()  # nothing queued: the mark stays
            assert receiver.getsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT) == H.HOLD_BYTES
            hold.remove("peer")  # let go (e.g. back to a pool): read as data arrives
            assert receiver.getsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT) == 1
            assert len(hold) == 0
            sender.send(b"i" * 10)
            await asyncio.sleep(0.2)
            assert got[-1] == 10
        finally:
            loop.remove_reader(receiver.fileno())
            sender.close()
            receiver.close()

    asyncio.run(main())


def test_a_closed_socket_is_dropped_at_the_tick():
    sender, receiver = _pair()
    hold = H.StreamHold()
    hold.add("peer", receiver)
    assert len(hold) == 1
    receiver.close()
    sender.close()
    hold.tick()  # (fileno() is -1 now: no error escapes)
    assert len(hold) == 0
    hold.close()


def test_elsewhere_frames_are_read_as_they_arrive():
    sender, receiver = _pair()
    try:
        hold = H.StreamHold(platform="darwin")
        hold.add("peer", receiver)
        assert not hold.enabled and len(hold) == 0
        assert receiver.getsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT) == 1
    finally:
        sender.close()
        receiver.close()

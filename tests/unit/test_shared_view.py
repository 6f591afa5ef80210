"""/v1/cluster's rendering is shared by the requests of a quarter second and sent in
pieces; renderings held by slow readers are bounded (issue 18 finding 4)."""

from __future__ import annotations

import asyncio
import json

from exotray.agent.base import limits as L
from exotray.agent.share.cluster_view import PIECE, SharedView


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _view(made: list) -> SharedView:
    clock = Clock()

    def make(local: bool) -> dict:
        made.append(local)
        return {"n": len(made), "local": local, "pad": "x" * (3 * PIECE)}

    v = SharedView(make, clock)
    v.clock = clock  # type: ignore[attr-defined]
    return v


async def _read(resp) -> bytes:
    return b"".join([bytes(p) async for p in resp.body_iterator])


def test_one_rendering_serves_the_requests_of_a_moment_and_is_sent_whole_in_pieces():
    async def main():
        made: list = []
        v = _view(made)
        first = v.response(False)
        assert int(first.headers["content-length"]) == len(v.body(False))
        bodies = [await _read(v.response(False)) for _ in range(3)]
        assert made == [False] and len(set(bodies)) == 1
        assert json.loads(bodies[0])["n"] == 1
        v.response(True)  # loopback clients get their own view (errors shown)
        assert made == [False, True]
        v.clock.t += 0.3
        assert json.loads(await _read(v.response(False)))["n"] == 3
        pieces = [p async for p in v.response(False).body_iterator]
        assert len(pieces) == 4 and all(len(p) <= PIECE for p in pieces)

    asyncio.run(main())


def test_renderings_held_by_readers_that_do_not_read_are_bounded():
    async def main():
        made: list = []
        v = _view(made)
        stuck = []
        for _ in range(L.MAX_VIEWS_HELD + 3):  # each takes one piece, then reads no more
            it = v.response(False).body_iterator
            await it.__anext__()
            stuck.append(it)
            v.clock.t += 1.0
        assert v.held() == L.MAX_VIEWS_HELD
        assert len(made) == L.MAX_VIEWS_HELD  # later ones got the latest rendering
        for it in stuck:  # cut off (the send timeout): their renderings go
            await it.aclose()
        assert v.held() == 1  # the cached one
        v.response(False)
        assert len(made) == L.MAX_VIEWS_HELD + 1  # fresh again

    asyncio.run(main())

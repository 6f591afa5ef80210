"""http/guard.py's connection limits on uvicorn's own h11 protocol class, driven through the
asyncio Protocol interface with a transport that records what is done to it (the lab
test in tests/lab/test_lan_attacks.py does the same with real sockets; the send timeout
is shown only here: a real slow reader needs a response bigger than socket buffers)."""

from __future__ import annotations

import asyncio

import uvicorn
from uvicorn.server import ServerState

from exotray.agent.base import limits as L
from exotray.agent.base.fds import Budget
from exotray.agent.http.guard import guarded_protocol


class Transport(asyncio.Transport):
    def __init__(self, host: str) -> None:
        super().__init__()
        self.peer = (host, 40000)
        self.aborted = self.closed = False

    def get_extra_info(self, name, default=None):
        return {"peername": self.peer, "sockname": ("10.213.0.1", 52480)}.get(name, default)

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.aborted or self.closed

    def write(self, data) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _noop(scope, receive, send) -> None:
    pass


def _factory(budget: Budget | None = None):
    cls = guarded_protocol(budget)
    cfg = uvicorn.Config(_noop, http=cls, lifespan="off", log_config=None)
    cfg.load()
    state = ServerState()
    return cls, lambda: cfg.http_protocol_class(config=cfg, server_state=state, app_state={})


def _connect(make, host: str):
    p, t = make(), Transport(host)
    p.connection_made(t)
    return p, t


def test_connections_per_lan_source_are_capped_and_loopback_has_its_own_count():
    async def run() -> None:
        cls, make = _factory()
        lan = [_connect(make, "10.213.0.9") for _ in range(L.MAX_CONNECTIONS_PER_SOURCE + 4)]
        assert sum(t.aborted for _, t in lan) == 4
        other = _connect(make, "10.213.0.8")[1]
        local = [_connect(make, "127.0.0.1")[1] for _ in range(200)]
        assert not other.aborted and not any(t.aborted for t in local)
        for p, _ in lan:
            p.connection_lost(None)
        assert cls.counts.by_source == {"10.213.0.8": 1} and cls.counts.total == 1
        assert cls.counts.loopback == 200
        assert not _connect(make, "10.213.0.9")[1].aborted  # room again

    asyncio.run(run())


def test_a_budget_caps_the_lan_and_loopback_apart():
    """Loopback connections beyond their budget are refused without touching the LAN's,
    and the LAN's total holds however many addresses share it."""
    async def run() -> None:
        cls, make = _factory(Budget(files=256, lan=12, per_source=4, loopback=6))
        local = [_connect(make, "127.0.0.1") for _ in range(50)]
        assert sum(not t.aborted for _, t in local) == 6
        lan = [_connect(make, f"10.213.0.{i}")[1] for i in range(1, 6) for _ in range(5)]
        assert sum(not t.aborted for t in lan) == 12  # 4 + 4 + 4, then the total refuses
        assert sum(not t.aborted for t in lan[:5]) == 4  # per source
        for p, t in local:
            if not t.aborted:
                p.connection_lost(None)
        assert cls.counts.loopback == 0
        assert not _connect(make, "::1")[1].aborted

    asyncio.run(run())


def test_a_connection_without_a_request_head_and_a_reader_that_stalls_are_closed(
        monkeypatch):
    monkeypatch.setattr(L, "HEADER_TIMEOUT_S", 0.05)
    monkeypatch.setattr(L, "SEND_TIMEOUT_S", 0.05)

    async def run() -> None:
        _cls, make = _factory()
        _, silent = _connect(make, "10.213.0.9")
        p, slow = _connect(make, "10.213.0.7")
        p.cycle = object()  # it sent a request...
        p.pause_writing()  # ...and does not read the answer
        p2, fine = _connect(make, "10.213.0.6")
        p2.cycle = object()
        p2.pause_writing()
        p2.resume_writing()  # this one reads
        await asyncio.sleep(0.2)
        assert silent.aborted and slow.aborted and not fine.aborted

    asyncio.run(run())

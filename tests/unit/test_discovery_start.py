"""mDNS start on interfaces that refuse their multicast socket (a VPN's utun, an address
that just vanished, EADDRINUSE): the agent starts anyway, uses the interfaces that work,
and says which were refused and why. The socket error is the edge that cannot be made
real here, so zeroconf's constructor is replaced; nothing is sent anywhere."""

from __future__ import annotations

import asyncio
import errno
from typing import ClassVar

import pytest

from exotray.agent.peers import discovery as D


class FakeZeroconf:
    refuse: ClassVar[dict[str, int]] = {}
    opened: ClassVar[list[list[str]]] = []

    def __init__(self, interfaces, ip_version=None) -> None:
        for a in interfaces:
            if a in self.refuse:
                raise OSError(self.refuse[a], f"{errno.errorcode[self.refuse[a]]} on {a}")
        self.interfaces = list(interfaces)
        FakeZeroconf.opened.append(self.interfaces)
        self.zeroconf = object()

    async def async_close(self) -> None:
        pass

    async def async_register_service(self, info, **kw) -> None:
        pass


@pytest.fixture
def fake(monkeypatch):
    FakeZeroconf.opened = []
    monkeypatch.setattr(D, "AsyncZeroconf", FakeZeroconf)
    monkeypatch.setattr(D, "AsyncServiceBrowser", lambda *a, **k: None)
    monkeypatch.setattr(D.mdns_sockets, "tie", lambda zc, ifname: None)
    return FakeZeroconf


def _discovery() -> D.Discovery:
    return D.Discovery(node_id="abc123", name="studio-1", port=52480,
                       on_found=lambda r: None, on_removed=lambda k: None,
                       local_networks=lambda addrs: [],
                       interface_of=lambda a: f"if-{a}")  # one interface each


def test_one_refusing_interface_does_not_stop_the_others(fake):
    fake.refuse = {"100.64.0.2": errno.EADDRNOTAVAIL}

    async def main():
        d = _discovery()
        await d.start(["192.168.1.20", "100.64.0.2", "169.254.3.4"])
        assert d.running
        # one zeroconf per interface; the refusing one is left out
        assert sorted(fake.opened) == [["169.254.3.4"], ["192.168.1.20"]]
        assert d.problem == "mDNS cannot use 100.64.0.2 (EADDRNOTAVAIL on 100.64.0.2)"
        # The same set again is not retried on every interface check.
        n = len(fake.opened)
        await d.restart(["192.168.1.20", "100.64.0.2", "169.254.3.4"])
        assert len(fake.opened) == n
        await d.stop()

    asyncio.run(main())


def test_no_usable_interface_leaves_discovery_off_and_says_why(fake):
    fake.refuse = {"10.8.0.2": errno.EADDRINUSE}

    async def main():
        d = _discovery()
        await d.start(["10.8.0.2"])  # must not raise: the agent keeps measuring
        assert not d.running
        assert d.problem.startswith("mDNS cannot use 10.8.0.2")
        await d.stop()

    asyncio.run(main())


def test_mdns_sends_the_system_refuses_are_a_problem_that_names_local_network():
    """Issue 35 point 3: with Local Network denied, python-zeroconf logs a refused send
    once and moves on, and a first run with no peer showed only the "peers appear
    when..." hint. What zeroconf logs is heard, and discovery's problem says it, with
    the System Settings path (the menu and the window show discovery's problem)."""
    import errno
    import logging

    from zeroconf._logger import QuietLogger

    from exotray.ui.tray.summary import empty_hints

    d = _discovery()
    logging.getLogger("zeroconf").addHandler(d._hears)  # (what start() does)
    try:
        QuietLogger.log_exception_once(
            OSError(errno.EHOSTUNREACH, "No route to host"),
            "Error with socket 9 (('192.168.1.5', 5353))): %s",
            OSError(errno.EHOSTUNREACH, "No route to host"))
    finally:
        logging.getLogger("zeroconf").removeHandler(d._hears)
    assert d.sends_refused == "No route to host"
    assert "Privacy & Security › Local Network" in d.problem
    cluster = {"nodes": [{"links": []}], "discovery": {"mdns": True, "problem": d.problem}}
    assert any("Local Network" in h for h in empty_hints(cluster))


def test_a_refused_send_logged_from_another_thread_is_said_on_the_loops(fake, monkeypatch):
    """zeroconf may log from a thread of its own: discovery's problem, built from state
    the loop changes, is made on the loop's thread."""
    import logging
    import threading

    from zeroconf._logger import QuietLogger

    fake.refuse = {}
    seen: list[int] = []

    async def main():
        d = _discovery()
        await d.start(["192.168.1.20"])
        say = d._say_problems
        monkeypatch.setattr(d, "_say_problems", lambda: (seen.append(threading.get_ident()),
                                                         say()))
        err = OSError(errno.EHOSTUNREACH, "No route to host")
        t = threading.Thread(target=QuietLogger.log_exception_once,
                             args=(err, "Error with socket 9: %s", err))
        t.start()
        t.join()
        for _ in range(10):
            await asyncio.sleep(0)
        assert d.sends_refused == "No route to host"
        await d.stop()
        return threading.get_ident()

    logging.getLogger("zeroconf").setLevel(logging.WARNING)
    loop_thread = asyncio.run(main())
    assert seen and set(seen) == {loop_thread}

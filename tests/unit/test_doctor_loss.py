"""The `loss` check (core/doctor_loss.py) on this node's history of the last day, as the
agent's database answers /v1/history for it: a past stretch of loss warns with when and
how long, one still on fails, a glitch or a short burst does not count, an outage is not
loss."""

from __future__ import annotations

import time

import doctor_views as dv

from exotray.agent.history.db import HistoryDB
from exotray.core import doctor
from exotray.core.doctor_loss import HISTORY_POINTS, SUSTAINED_LOSS, episodes
from exotray.core.history import LINK_COLUMNS

HOUR = 3600.0
NOW = dv.NOW


def _rows(start: float, seconds: int, loss: float, state: str = "up") -> list[tuple]:
    """1 s samples of link "ab" (as the agent writes them) at `loss`."""
    out = []
    for i in range(seconds):
        values = dict.fromkeys(LINK_COLUMNS, None)
        values.update(t=start + i, rtt_ms=0.2, state=state, loss=loss)
        out.append(("link", "ab", LINK_COLUMNS, tuple(values[c] for c in LINK_COLUMNS)))
    return out


def recorded(tmp_path, *stretches: tuple[float, int, float] | tuple[float, int, float, str],
             ) -> dict:
    """The last day of link "ab" as `exotray doctor` reads it (cli/doctor_history.py: one
    /v1/history of 24 h in 1 min buckets, its columns) from a database holding `stretches`
    of 1 s samples (start, seconds, loss[, state]), the newest two minutes lossless."""
    db = HistoryDB(tmp_path / f"history-{len(list(tmp_path.iterdir()))}.db", 30 * 86400.0)
    try:
        rows = [r for s in stretches for r in _rows(*s)] + _rows(NOW - 120, 120, 0.0)
        taken = {r[3][0] for r in rows}
        # the rest of the day lossless, a sample a second as the agent writes them
        rows += [r for t in range(int(NOW - 86400), int(NOW - 120)) if t not in taken
                 for r in _rows(float(t), 1, 0.0)]
        db.write(NOW, sorted(rows, key=lambda r: r[3][0]), [])
        got = db.query("link", "ab", NOW - 86400, NOW, HISTORY_POINTS, NOW, ("loss", "state"))
    finally:
        db.close()
    assert got is not None and got["tier"] == "10s" and got["step_s"] == 60.0
    assert {k for k, v in got.items() if isinstance(v, list)} == {
        "t", "loss", "loss_min", "loss_max", "state"}
    return {"links": {"ab": {**got, "interval_s": 1.0}}, "unread": []}


def check(history: dict | None, **now_link):
    cluster = dv.healthy()
    if history is not None:
        cluster[doctor.LOSS_HISTORY] = history
    next(lk for lk in cluster["nodes"][0]["links"] if lk["id"] == "ab").update(now_link)
    return {c.id: c for c in doctor.run(cluster, [], NOW, "linux")}["loss"]


def hhmm(t: float) -> str:
    return time.strftime("%H:%M", time.localtime(t))


def test_a_past_stretch_of_loss_warns_with_when_and_how_long(tmp_path):
    start = NOW - 5 * HOUR
    c = check(recorded(tmp_path, (start, 240, 0.12)))
    assert c.status == "warn" and c.links == ("ab",) and c.nodes == ("a", "b")
    assert c.summary == f"a → b via eth0 lost 12 % of probes for 4 min at {hhmm(start)}."
    assert "Check the cable" in c.fix


def test_a_glitch_a_short_burst_and_light_loss_pass(tmp_path):
    # one probe lost (10 % for the window's 10 s), 20 s at 10 % (2 probes), 10 min at 3 %:
    # none is 5 % of a minute's probes
    c = check(recorded(tmp_path, (NOW - 9 * HOUR, 10, 0.1), (NOW - 7 * HOUR, 20, 0.1),
                       (NOW - 3 * HOUR, 600, 0.03)))
    assert c.status == "pass", c.summary
    assert c.summary == ("no link loses probes now, none lost 5 % for 60 s or more in the "
                         "last 24 h")


def test_a_burst_counts_by_the_share_of_its_minutes_probes(tmp_path):
    """The day is read in 1 min buckets: 40 s at 30 % is 20 % of that minute's probes."""
    c = check(recorded(tmp_path, (NOW - 7 * HOUR, 40, 0.3)))
    assert c.status == "warn"
    assert f"lost 20 % of probes for 60 s at {hhmm(NOW - 7 * HOUR)}" in c.summary


def _ten_minutes_at_20_percent_read_at(tmp_path, read_at: float) -> dict:
    """The reading of link "ab", read at `read_at`: its last 10 min lost 20 %."""
    db = HistoryDB(tmp_path / "history.db", 30 * 86400.0)
    try:
        db.write(read_at, _rows(read_at - 600, 600, 0.2), [])
        got = db.query("link", "ab", read_at - 86400, read_at, HISTORY_POINTS, read_at)
    finally:
        db.close()
    return {"links": {"ab": {**got, "interval_s": 1.0, "until": read_at}}, "unread": []}


def test_loss_that_goes_on_fails_and_says_since_when(tmp_path):
    history = _ten_minutes_at_20_percent_read_at(tmp_path, NOW)
    c = check(history)
    assert c.status == "fail"
    assert c.summary == (f"a → b via eth0 lost 20 % of probes since {hhmm(NOW - 600)} "
                         "(10 min, still on).")
    # lost now too: one sentence, the now and the since
    c = check(history, loss=0.2)
    assert c.status == "fail"
    assert c.summary == (f"a → b via eth0 loses 20 % of probes now, 20 % since "
                         f"{hhmm(NOW - 600)} (10 min).")


def test_loss_still_on_when_read_stays_on_until_read_again(tmp_path):
    """The tray reads a link's day every few minutes: a stretch going on when the day was
    read (its answer's `until`) is still on for the checks run until the next read, not
    taken for ended when its newest row grows older than two buckets."""
    c = check(_ten_minutes_at_20_percent_read_at(tmp_path, NOW - 200))
    assert c.status == "fail" and "still on" in c.summary, c.summary


def test_an_outage_is_not_loss_and_ends_a_stretch(tmp_path):
    c = check(recorded(tmp_path, (NOW - 4 * HOUR, 600, 1.0, "down")))
    assert c.status == "pass", c.summary
    # 5 min at 20 %, then down 10 min: the loss is the 5 minutes before
    start = NOW - 4 * HOUR
    c = check(recorded(tmp_path, (start, 300, 0.2), (start + 300, 600, 1.0, "down")))
    assert c.status == "warn"
    assert c.summary == f"a → b via eth0 lost 20 % of probes for 5 min at {hhmm(start)}."


def test_without_the_history_the_check_says_so():
    assert check(None).summary == "no link loses probes now (the last 24 h not read)"
    c = check({"links": {}, "unread": ["ab", "ac"]})
    assert c.status == "pass" and "(2 links' history not read)" in c.summary
    assert check(None, loss=0.2).status == "warn"


def test_episodes_of_rows_by_hand():
    """Rows of 60 s buckets, a gap (the agent was off), and the newest second's rows."""
    t = [NOW - 600, NOW - 540, NOW - 480, NOW - 300, NOW - 240, NOW - 2, NOW - 1]
    loss = [0.06, 0.08, 0.0, 0.5, 0.5, 0.2, 0.2]
    got = episodes({"t": t, "loss": loss, "loss_max": [0.1, 0.3, 0, 1, 1, 0.2, 0.2],
                    "step_s": 60.0, "interval_s": 1.0}, NOW)
    assert [(e.start, e.seconds, e.peak, e.on) for e in got] == [
        (NOW - 600, 120.0, 0.3, False), (NOW - 300, 120.0, 1.0, False)]
    assert abs(got[0].loss - 0.07) < 1e-9
    assert all(e.loss >= SUSTAINED_LOSS for e in got)
    assert episodes({"t": t, "step_s": 60.0}, NOW) == []  # an agent without the column

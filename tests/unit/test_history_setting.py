"""The `history_days` setting (issue 15): 30 by default, 0 turns the database off,
checked, and set from the config file or `exotray agent --history-days`; an agent with
0 keeps its hour in memory and opens no database."""

from __future__ import annotations

import asyncio
import logging

import pytest

from exotray.agent.base.throttle import Throttled
from exotray.agent.history.store import HistoryStore
from exotray.cli.args import build_parser, settings_from_args
from exotray.core.settings import Settings, SettingsError, from_mapping


def test_default_is_thirty_days():
    assert Settings().history_days == 30


@pytest.mark.parametrize("value", [0, 1, 7.5, 365, 3650])
def test_config_and_option(value, tmp_path):
    assert from_mapping({"history_days": value}).history_days == value
    config = tmp_path / "agent.toml"
    config.write_text(f"history_days = {value}\n")
    args = build_parser().parse_args(["agent", "--config", str(config)])
    assert settings_from_args(args).history_days == value
    args = build_parser().parse_args(["agent", "--history-days", str(value), "--config",
                                      str(tmp_path / "empty.toml")])
    (tmp_path / "empty.toml").write_text("")
    assert settings_from_args(args).history_days == value


@pytest.mark.parametrize("value", [-1, 3651, float("nan"), "30", True])
def test_out_of_range_or_wrong_type_is_refused(value):
    with pytest.raises(SettingsError, match="history_days"):
        from_mapping({"history_days": value})


def test_out_of_range_option_is_refused():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["agent", "--history-days", "-3"])


def test_zero_days_opens_no_database(tmp_path, caplog):
    store = HistoryStore(tmp_path, 0, Throttled(lambda: 0.0))

    async def run():
        with caplog.at_level(logging.INFO):
            assert await store.open() == 0
        store.event({"seq": 1, "at": "2026-12-03T00:00:00.000Z", "type": "peer_up"})
        got = await store.event_range(0, 2e9, 10, [{"seq": 1, "at": "2026-12-03T00:00:00.000Z",
                                                     "type": "peer_up"}])
        await store.close()
        return got

    got = asyncio.run(run())
    assert not store.enabled and not list(tmp_path.iterdir())
    assert [e["seq"] for e in got["events"]] == [1]  # the in-memory ring answers
    assert "history database off" in caplog.text

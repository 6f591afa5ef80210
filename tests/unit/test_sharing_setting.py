"""The `sharing` setting: stream by default (poll, the previous protocol, when asked),
checked, and set from the config file or `exotray agent --sharing`."""

from __future__ import annotations

import pytest

from exotray.cli.args import build_parser, settings_from_args
from exotray.core.settings import Settings, SettingsError, from_mapping


def test_default_is_poll():
    assert Settings().sharing == "stream"


@pytest.mark.parametrize("value", ["stream", "poll"])
def test_config_and_option(value, tmp_path):
    assert from_mapping({"sharing": value}).sharing == value
    args = build_parser().parse_args(["agent", "--sharing", value, "--config",
                                      str(tmp_path / "none.toml")])
    (tmp_path / "none.toml").write_text("")
    assert settings_from_args(args).sharing == value


@pytest.mark.parametrize("value", ["push", "", 1, None])
def test_unknown_protocol_is_refused(value):
    with pytest.raises(SettingsError, match="sharing"):
        from_mapping({"sharing": value})


def test_unknown_option_value_is_refused():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["agent", "--sharing", "push"])

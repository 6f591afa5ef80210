"""The config file as its user wrote it (exotray.core.configfile): Save changes only the
keys that changed, in place, keeping comments, order and the rest; a wrong key is named
with its line and the key it most likely means; the reference's table of keys is the
settings model's (issue 34 points 4 and 6)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from exotray.cli.args import build_parser
from exotray.core import configfile
from exotray.core.settings import EDITABLE, Settings, SettingsError, from_mapping, suggestion

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference.md"

#: a config file as a person writes one
WRITTEN = """\
# exotray on studio-1 (hand-written)
name = "studio-1"    # as the others know it
threshold   = 0.8    # saturated at 80 %
peers = [
    "10.0.0.2:52480",  # studio-2, Thunderbolt
]

[capacity]
# the switch's uplink is slower than the port
en0 = 1000           # Mbit/s
en1 = 2500
"""


def _editable(s: Settings) -> dict:
    return {k: getattr(s, k) for k in EDITABLE}


def _as_loaded(text: str) -> Settings:
    import tomllib

    return from_mapping(tomllib.loads(text))


# -- point 4: only what changed, in place -------------------------------------------------

def test_save_changes_only_the_changed_keys_and_keeps_the_rest_as_written(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(WRITTEN)
    config.chmod(0o640)
    old = _as_loaded(WRITTEN)
    new = Settings(**{**old.__dict__, "threshold": 0.7, "capacity": {"en0": 1000, "en1": 5000}})
    assert configfile.update(config, _editable(old), _editable(new))
    assert config.read_text() == WRITTEN.replace(
        "threshold   = 0.8    # saturated", "threshold   = 0.7    # saturated").replace(
        "en1 = 2500", "en1 = 5000")
    # the file's mode kept; nothing left beside it (no temporary file, no backup)
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]


def test_windows_line_ends_stay(tmp_path):
    config = tmp_path / "config.toml"
    config.write_bytes(b"# mine\r\nthreshold = 0.8\r\nsustain = 2\r\n")
    configfile.update(config, {"threshold": 0.8}, {"threshold": 0.7})
    assert config.read_bytes() == b"# mine\r\nthreshold = 0.7\r\nsustain = 2\r\n"


def test_nothing_changed_writes_nothing(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(WRITTEN)
    before = config.stat().st_ino
    s = _editable(_as_loaded(WRITTEN))
    assert not configfile.update(config, s, dict(s))
    assert config.read_text() == WRITTEN and config.stat().st_ino == before


def test_no_default_is_written_out(tmp_path):
    """Preferences sends every field: those at their defaults, absent from the file, stay
    absent; a new key goes before the tables, a removed one goes."""
    config = tmp_path / "config.toml"
    config.write_text('key_file = "/k"  # the cluster key\n\n[capacity]\nen0 = 1000\n')
    old = Settings(key_file="/k", capacity={"en0": 1000}, units="bits", sustain=2.0)
    new = Settings(capacity={"en0": 1000}, notify_peers=False)  # units, sustain back
    configfile.update(config, _editable(old), _editable(new))
    assert config.read_text() == "notify_peers = false\n\n[capacity]\nen0 = 1000\n"


def test_table_entries_change_one_by_one(tmp_path):
    """Entries the file does not have (a `--capacity` on the command line) are not added
    unless they changed; a new entry is written as a whole number where it is one."""
    config = tmp_path / "config.toml"
    config.write_text("[capacity]\nen0 = 1000  # uplink\n")
    old = Settings(capacity={"en0": 1000, "from_cli": 40})
    new = Settings(capacity={"en0": 1000, "from_cli": 40, "lo": 10000.0})
    configfile.update(config, _editable(old), _editable(new))
    assert config.read_text() == "[capacity]\nen0 = 1000  # uplink\nlo = 10000\n"
    configfile.update(config, _editable(new), _editable(Settings(capacity={"lo": 10000})))
    assert config.read_text() == "[capacity]\nlo = 10000\n"


def test_a_new_file_gets_only_the_changes(tmp_path):
    config = tmp_path / "new" / "config.toml"
    configfile.update(config, _editable(Settings()), _editable(Settings(threshold=0.75)))
    assert config.read_text() == "threshold = 0.75\n"


def test_a_file_that_is_no_longer_toml_is_not_overwritten(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("threshold = [broken\n")
    with pytest.raises(SettingsError, match=f"cannot update {config}: it is not valid TOML"):
        configfile.update(config, _editable(Settings()), _editable(Settings(threshold=0.7)))
    assert config.read_text() == "threshold = [broken\n"


def test_a_symlinked_file_keeps_its_link(tmp_path):
    real = tmp_path / "dotfiles" / "exotray.toml"
    real.parent.mkdir()
    real.write_text("# mine\nthreshold = 0.8\n")
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    configfile.update(link, {"threshold": 0.8}, {"threshold": 0.7})
    assert link.is_symlink() and real.read_text() == "# mine\nthreshold = 0.7\n"
    assert sorted(os.listdir(real.parent)) == ["exotray.toml"]


def test_wrong_keys_are_replaced_or_removed_where_asked(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("# mine\nno_mdns = true\ncolour = 'blue'\nthreshold = 2\n")
    # `threshold` is missing from `old`: wrong in the file, so written whatever it is
    configfile.update(config, {}, {"threshold": 0.9}, remove=["colour"],
                      renames={"no_mdns": ("mdns", False)})
    assert config.read_text() == "# mine\nthreshold = 0.9\nmdns = false\n"


# -- point 6: which key is wrong, and what was meant -----------------------------------------

@pytest.mark.parametrize(("name", "value", "meant"), [
    ("no_mdns", True, ("mdns", False)),
    ("no-mdns", False, ("mdns", True)),
    ("--no-mdns", True, ("mdns", False)),
    ("mdns-interface", "10.0.0.1", ("mdns_interfaces", ["10.0.0.1"])),
    ("mdns_interface", ["10.0.0.1"], ("mdns_interfaces", ["10.0.0.1"])),
    ("peer", "10.0.0.2:52480", ("peers", ["10.0.0.2:52480"])),
    ("--key-file", "/k", ("key_file", "/k")),
    ("state-dir", "/s", ("state_dir", "/s")),
    ("history", 7, ("history_days", 7)),
    ("treshold", 0.8, ("threshold", 0.8)),
    ("Interval", 2, ("interval", 2)),
    ("notify_peer", False, ("notify_peers", False)),
    ("capacty", {"en0": 1}, ("capacity", {"en0": 1})),
    ("colour", "blue", None),
])
def test_a_wrong_key_suggests_the_setting_meant(name, value, meant):
    assert suggestion(name, value) == meant


def test_the_error_says_which_key_and_what_was_meant():
    with pytest.raises(SettingsError) as e:
        from_mapping({"no_mdns": True})
    assert str(e.value) == "unknown setting no_mdns (did you mean `mdns = false`?)"
    with pytest.raises(SettingsError) as e:
        from_mapping({"peer": "a:1", "colour": "blue"})
    assert str(e.value) == ('unknown settings peer (did you mean `peers = ["a:1"]`?), '
                            "colour")


def test_check_names_each_wrong_key_with_its_line(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('# mine\nname = "x"\n\nno_mdns = true\nthreshold = 2\n'
                      "[capacity]\nen0 = -1\n")
    data, found = configfile.check(config)
    assert data["no_mdns"] is True
    assert [(p.key, p.line, p.replacement) for p in found] == [
        ("no_mdns", 4, ("mdns", False)), ("threshold", 5, None), ("capacity", 6, None)]
    with pytest.raises(SettingsError) as e:
        configfile.read(config)
    assert str(e.value) == (
        f"config {config}: line 4: unknown setting no_mdns (did you mean `mdns = false`?); "
        "line 5: threshold 2 is outside 0.1..1.0; "
        "line 6: capacity of en0 must be a positive number of Mbit/s")


def test_key_lines_skip_tables_and_multiline_values():
    text = 'peers = [\n  "a:1",\n]\n"quoted" = 1\ncapacity.en0 = 5\n[[x]]\ny = 1\n[z]\n'
    assert configfile.key_lines(text) == {"peers": 1, "quoted": 4, "capacity": 5, "x": 6,
                                          "z": 8}


def test_the_reference_table_of_config_keys_is_the_models():
    """docs/reference.md's "Config file" table is made from the settings model: after a
    change of the model, `python scripts/config_keys.py` rewrites it."""
    text = REFERENCE.read_text()
    start = text.index("| key | option | default | what |", text.index("## Config file"))
    end = text.index("\n\n", start) + 1
    assert text[start:end] == configfile.reference_table(), (
        "docs/reference.md's table of config keys is not the model's: run "
        "`.venv/bin/python scripts/config_keys.py`")


def test_every_option_of_a_key_is_an_agent_option_and_back():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    agent = {o for a in sub.choices["agent"]._actions for o in a.option_strings}
    import dataclasses

    of_keys = {f.metadata["option"].split()[0] for f in dataclasses.fields(Settings)
               if f.metadata.get("option")}
    assert of_keys <= agent
    # the options that set no key: where the file is, how much is logged, help
    assert agent - of_keys == {"--config", "-v", "--verbose", "-h", "--help"}


def test_the_reference_names_the_settings_preferences_change():
    text = REFERENCE.read_text()
    start = text.index("The settings that [Local control](#local-control) changes at run time")
    said = text[start:text.index("the others take a restart", start)]
    import re

    assert tuple(re.findall(r"`(\w+)`", said)) == EDITABLE

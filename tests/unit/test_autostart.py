import configparser
import plistlib

import pytest

from exotray.ui.tray import autostart


def test_linux_xdg_autostart_round_trip(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    assert not autostart.enabled("linux", tmp_path)
    p = autostart.enable("linux", tmp_path)
    assert p == tmp_path / ".config" / "autostart" / "exotray.desktop"
    entry = configparser.ConfigParser(interpolation=None)
    entry.read(p)
    d = entry["Desktop Entry"]
    assert d["Type"] == "Application" and d["Exec"].endswith("-m exotray")
    assert autostart.enabled("linux", tmp_path)
    autostart.disable("linux", tmp_path)
    assert not autostart.enabled("linux", tmp_path)


def test_xdg_config_home_is_honoured(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert autostart.path("linux", tmp_path) == tmp_path / "cfg" / "autostart" / "exotray.desktop"


def test_macos_launch_agent(tmp_path):
    p = autostart.enable("darwin", tmp_path)
    assert p == tmp_path / "Library" / "LaunchAgents" / "io.exotray.app.plist"
    plist = plistlib.loads(p.read_bytes())
    assert plist["Label"] == "io.exotray.app" and plist["RunAtLoad"] is True
    assert plist["ProgramArguments"][-2:] == ["-m", "exotray"]
    # System Settings › Login Items names the item after the app, not "python".
    assert plist["AssociatedBundleIdentifiers"] == ["io.exotray.app"]


@pytest.mark.parametrize(
    ("exe", "refused"),
    [
        ("/Applications/exotray.app/Contents/MacOS/exotray", None),
        ("/Volumes/exotray 0.1.0/exotray.app/Contents/MacOS/exotray", "disk image"),
        ("/private/var/folders/x1/abc/T/AppTranslocation/1F2E-3D/d/exotray.app/Contents/"
         "MacOS/exotray", "App Translocation"),
    ],
)
def test_login_item_refused_where_it_would_break_after_a_reboot(tmp_path, exe, refused):
    if refused is None:
        p = autostart.enable("darwin", tmp_path, cmd=[exe])
        assert plistlib.loads(p.read_bytes())["ProgramArguments"] == [exe]
        return
    with pytest.raises(autostart.AutostartError, match=refused):
        autostart.enable("darwin", tmp_path, cmd=[exe])
    assert not autostart.enabled("darwin", tmp_path)
    # Linux has neither: the same path is fine there.
    assert autostart.enable("linux", tmp_path, cmd=[exe]).exists()

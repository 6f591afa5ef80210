"""The packaging files: Info.plist, desktop entries, AppStream, systemd units, icons.

Plain parsing, no build: tests/packaging/test_bundle.py builds the Linux bundle.
"""

from __future__ import annotations

import configparser
import importlib.util
import plistlib
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import exotray
from exotray.agent.peers.discovery import SERVICE_TYPE
from exotray.ui.tray import autostart

ROOT = Path(__file__).resolve().parents[2]
LINUX = ROOT / "packaging" / "linux"
MACOS = ROOT / "packaging" / "macos"


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def plist() -> dict:
    return load(MACOS / "info_plist.py", "exotray_info_plist").info_plist()


@pytest.fixture(scope="module")
def icons():
    return load(ROOT / "scripts" / "icons.py", "exotray_icons_script")


def ini(path: Path) -> configparser.ConfigParser:
    # Case-sensitive keys, no interpolation (% in systemd specifiers), repeated keys kept last.
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    cp.optionxform = str
    cp.read_string(path.read_text(), source=str(path))
    return cp


# -- macOS ------------------------------------------------------------------------------


def test_info_plist_contents(plist):
    assert plist["CFBundleIdentifier"] == "io.exotray.app" == autostart.LABEL
    assert plist["CFBundleName"] == plist["CFBundleDisplayName"] == "exotray"
    assert plist["CFBundleShortVersionString"] == exotray.__version__
    assert plist["CFBundleVersion"] == exotray.__version__
    assert plist["LSUIElement"] is True
    assert plist["NSHighResolutionCapable"] is True
    assert plist["NSAppSleepDisabled"] is True  # App Nap would slow the 1 s timers to ~10 s
    assert plist["CFBundleIdentifier"] == autostart.BUNDLE_ID
    assert plist["NSBonjourServices"] == ["_exotray._tcp"]
    assert plist["NSBonjourServices"][0] + ".local." == SERVICE_TYPE
    text = plist["NSLocalNetworkUsageDescription"]
    assert isinstance(text, str) and len(text) > 20 and text.endswith(".")
    major, *_ = plist["LSMinimumSystemVersion"].split(".")
    assert int(major) >= 11


def test_info_plist_round_trips(plist):
    for fmt in (plistlib.FMT_XML, plistlib.FMT_BINARY):
        assert plistlib.loads(plistlib.dumps(plist, fmt=fmt)) == plist


def test_entitlements_allow_network():
    ent = plistlib.loads((MACOS / "entitlements.plist").read_bytes())
    assert ent["com.apple.security.network.client"] is True
    assert ent["com.apple.security.network.server"] is True
    assert all(v is True for v in ent.values())


def test_icns_from_the_pngs(tmp_path):
    pytest.importorskip("PIL", reason="Pillow makes the .icns (pip install pillow)")
    from PIL import Image

    icns = load(MACOS / "icns.py", "exotray_icns").make_icns(tmp_path / "exotray.icns")
    with Image.open(icns) as im:
        assert im.format == "ICNS"
        assert (512, 512, 2) in im.info["sizes"]  # 1024 px for Retina


def test_macos_build_refuses_linux():
    if sys.platform == "darwin":
        pytest.skip("this checks the message on other systems")
    r = subprocess.run([str(MACOS / "build.sh")], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "needs macOS" in r.stderr


def test_macos_notarize_needs_sign():
    r = subprocess.run([str(MACOS / "build.sh"), "--notarize", "p"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode != 0
    assert "--notarize needs --sign" in r.stderr


# -- Linux desktop files --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["exotray.desktop", "exotray-autostart.desktop"])
def test_desktop_entries(name):
    entry = ini(LINUX / name)["Desktop Entry"]
    assert entry["Type"] == "Application"
    assert entry["Name"] == "exotray"
    assert entry["Icon"] == "exotray"
    assert shlex.split(entry["Exec"])[0] == "exotray"
    assert entry["Terminal"] == "false"
    assert "Network" in entry["Categories"].split(";")


def test_autostart_entry_matches_the_apps_own():
    ours = ini(LINUX / "exotray-autostart.desktop")["Desktop Entry"]
    cp = configparser.ConfigParser(interpolation=None)
    cp.optionxform = str
    cp.read_string(autostart.desktop_entry(["exotray"]))
    apps = cp["Desktop Entry"]
    for key in ("Type", "Name", "Exec", "Icon", "Terminal", "X-GNOME-Autostart-enabled"):
        assert ours[key] == apps[key], key


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None,
                    reason="desktop-file-validate not installed (apt install desktop-file-utils)")
@pytest.mark.parametrize("name", ["exotray.desktop", "exotray-autostart.desktop"])
def test_desktop_file_validate(name):
    r = subprocess.run(["desktop-file-validate", str(LINUX / name)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0 and not r.stdout.strip(), r.stdout + r.stderr


def test_metainfo():
    root = ET.parse(LINUX / "io.exotray.exotray.metainfo.xml").getroot()
    assert root.tag == "component" and root.get("type") == "desktop-application"
    assert root.findtext("id") == "io.exotray.exotray"
    assert root.findtext("name") == "exotray"
    assert root.findtext("project_license") == "MIT"
    launchable = root.find("launchable")
    assert launchable.get("type") == "desktop-id" and launchable.text == "exotray.desktop"
    assert (LINUX / launchable.text).exists()
    assert root.findtext("icon") == "exotray"
    assert root.findtext("provides/binary") == "exotray"
    newest = root.find("releases/release")
    assert newest.get("version") == exotray.__version__, "add a <release> for this version"


@pytest.mark.skipif(shutil.which("appstreamcli") is None,
                    reason="appstreamcli not installed (apt install appstream)")
def test_appstreamcli_validate():
    r = subprocess.run(["appstreamcli", "validate", "--no-net", "--pedantic",
                        str(LINUX / "io.exotray.exotray.metainfo.xml")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


# -- systemd units --------------------------------------------------------------------------

UNITS = ["exotray-agent.service", "exotray-agent-system.service"]


@pytest.mark.parametrize("name", UNITS)
def test_unit_runs_exotray_agent(name):
    unit = ini(LINUX / name)
    service = unit["Service"]
    argv = shlex.split(service["ExecStart"])
    assert Path(argv[0]).name == "exotray" and argv[0].startswith(("/", "%h/"))
    assert argv[1] == "agent"
    assert service["Restart"] == "on-failure"
    assert service["KillSignal"] == "SIGTERM"
    families = service["RestrictAddressFamilies"].split()
    assert {"AF_INET", "AF_INET6", "AF_NETLINK"} <= set(families)  # probes, mDNS, routes
    assert "PrivateNetwork" not in service and "IPAddressDeny" not in service
    assert unit["Install"]["WantedBy"]


def test_system_unit_is_unprivileged():
    service = ini(LINUX / "exotray-agent-system.service")["Service"]
    assert service["DynamicUser"] == "yes"
    assert service["StateDirectory"] == "exotray"
    assert service["ConfigurationDirectory"] == "exotray"
    assert service["CapabilityBoundingSet"] == "" and service["AmbientCapabilities"] == ""
    assert "--state-dir ${STATE_DIRECTORY}" in service["ExecStart"]


@pytest.mark.needs("systemd-analyze")
@pytest.mark.parametrize("name", UNITS)
def test_systemd_analyze_verify(name, tmp_path):
    # verify insists that ExecStart's program exists: point it at /bin/true.
    home = tmp_path / "home"
    fake = home / ".local" / "bin" / "exotray"
    fake.parent.mkdir(parents=True)
    fake.symlink_to("/bin/true")
    text = (LINUX / name).read_text().replace("/usr/local/bin/exotray", str(fake))
    unit = tmp_path / name
    unit.write_text(text)
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    user = [] if "system" in name else ["--user"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_RUNTIME_DIR": str(run)}
    r = subprocess.run(["systemd-analyze", *user, "verify", str(unit)], capture_output=True,
                       text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stdout + r.stderr


# -- icons ----------------------------------------------------------------------------------


def test_icons_generated(icons):
    assert icons.check() == [], "run scripts/icons.py"
    outputs = icons.outputs()
    for n in icons.APP_SIZES:
        assert icons.PNG_DIR / f"exotray-{n}.png" in outputs
    for n in (16, 22, 32, 44):
        assert icons.PNG_DIR / f"tray-ok-{n}.png" in outputs
    for n in icons.RETINA_SIZES:
        png = icons.PNG_DIR / f"tray-ok-template-{n}@2x.png"
        assert icons.png_size(png) == (2 * n, 2 * n)
    for n in icons.HICOLOR_SIZES:
        assert (LINUX / "icons" / "hicolor" / f"{n}x{n}" / "apps" / "exotray.png").exists()
    assert (LINUX / "icons" / "hicolor" / "scalable" / "apps" / "exotray.svg").exists()


def test_icons_small(icons):
    total = sum(p.stat().st_size for p in icons.outputs())
    assert total < 512 * 1024, f"{total} bytes of generated icons"


def test_every_svg_has_pngs(icons):
    sources = {src for src, _ in icons.outputs().values()}
    assert sources == set(icons.SVG_DIR.glob("*.svg"))


# -- the macOS CI workflow (it runs on GitHub's macOS runners, not here) -------------------

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_is_valid_for_github(workflow):
    exe = shutil.which("check-jsonschema") or str(Path(sys.executable).parent /
                                                  "check-jsonschema")
    r = subprocess.run([exe, "--builtin-schema", "vendor.github-workflows", str(workflow)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_macos_workflow_runs_what_linux_keeps_green():
    text = (ROOT / ".github" / "workflows" / "macos.yml").read_text()
    assert "runs-on: ${{ matrix.os }}" in text and "macos-15" in text
    for step in ("pytest -q tests/unit", "pytest -q tests/qt", "pytest -q tests/integration",
                 "packaging/macos/build.sh", "EXOTRAY_BUNDLE_SELFTEST=1"):
        assert step in text


def test_pyside6_range_has_the_macos_tray_menu_fix_and_not_the_refcount_bug():
    """>= 6.11.3: QTBUG-147449 (tray menu aborts on macOS 27) is fixed from 6.11.3 on;
    < 6.12: 6.12.0 leaks a reference to None per void call (test_pyside_refcount.py)."""
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pyside = next(d for d in deps if d.startswith("PySide6"))
    assert ">=6.11.3" in pyside and "<6.12" in pyside

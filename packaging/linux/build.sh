#!/usr/bin/env bash
# Build the Linux bundle: a PyInstaller one-folder app and a tarball of it.
#
#   packaging/linux/build.sh [--dist DIR] [--work DIR] [--no-tarball] [--clean]
#
#   DIST/exotray/exotray           the `exotray` command: tray app and every sub-command
#   DIST/exotray/_internal/        Python, Qt, exotray and its icons
#   DIST/exotray/share/            desktop entry, AppStream metadata, hicolor icons, systemd units
#   DIST/exotray-VERSION-linux-ARCH.tar.gz
#
# DIST defaults to dist/, the PyInstaller work dir to build/pyinstaller-linux/. PYTHON is
# the interpreter that has exotray (with the gui extra) and pyinstaller installed
# (default: .venv/bin/python if it exists, else python3): `pip install -e '.[gui,package]'`.
# Nothing is downloaded: the build works offline once those are installed.
set -euo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/../.."
ROOT=$PWD

die() { echo "packaging/linux/build.sh: $*" >&2; exit 1; }

DIST=$ROOT/dist
WORK=$ROOT/build/pyinstaller-linux
TARBALL=1
CLEAN=()
while [ $# -gt 0 ]; do
    case "$1" in
    --dist) DIST=$(realpath -m "$2"); shift 2 ;;
    --work) WORK=$(realpath -m "$2"); shift 2 ;;
    --no-tarball) TARBALL=0; shift ;;
    --clean) CLEAN=(--clean); shift ;;
    -h|--help) sed -n '2,14p' "$SELF" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
done

[ "$(uname -s)" = Linux ] || die "this builds the Linux bundle; on macOS use packaging/macos/build.sh"
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
command -v "$PYTHON" >/dev/null || die "no Python at '$PYTHON' (set PYTHON)"
"$PYTHON" -c 'import exotray' 2>/dev/null \
    || die "$PYTHON cannot import exotray: pip install -e '.[gui,package]'"
"$PYTHON" -c 'import PySide6.QtWidgets, pyqtgraph' 2>/dev/null \
    || die "$PYTHON lacks the GUI (PySide6, pyqtgraph): pip install -e '.[gui,package]'"
"$PYTHON" -m PyInstaller --version >/dev/null 2>&1 \
    || die "$PYTHON has no PyInstaller: pip install -e '.[gui,package]' (or pip install pyinstaller)"
"$PYTHON" scripts/icons.py --check || die "icons missing: run scripts/icons.py"

VERSION=$("$PYTHON" -c 'import exotray; print(exotray.__version__)')
ARCH=$(uname -m)
echo "building exotray $VERSION for linux-$ARCH with PyInstaller $("$PYTHON" -m PyInstaller --version) into $DIST" >&2
start=$(date +%s)
"$PYTHON" -m PyInstaller --noconfirm --log-level WARN "${CLEAN[@]}" \
    --distpath "$DIST" --workpath "$WORK" packaging/linux/exotray.spec

APP=$DIST/exotray
# The desktop integration, ready to copy into /usr/local/share or ~/.local/share.
SHARE=$APP/share
rm -rf "$SHARE"
install -Dm644 packaging/linux/exotray.desktop "$SHARE/applications/exotray.desktop"
install -Dm644 packaging/linux/exotray-autostart.desktop "$SHARE/exotray/exotray-autostart.desktop"
install -Dm644 packaging/linux/io.exotray.exotray.metainfo.xml \
    "$SHARE/metainfo/io.exotray.exotray.metainfo.xml"
install -Dm644 packaging/linux/exotray-agent.service "$SHARE/systemd/user/exotray-agent.service"
install -Dm644 packaging/linux/exotray-agent-system.service \
    "$SHARE/exotray/exotray-agent-system.service"
mkdir -p "$SHARE/icons"
cp -r packaging/linux/icons/hicolor "$SHARE/icons/"

got=$("$APP/exotray" --version) || die "the bundle does not run: $APP/exotray --version failed"
[ "$got" = "exotray $VERSION" ] || die "the bundle says '$got', expected 'exotray $VERSION'"

if [ "$TARBALL" = 1 ]; then
    TAR=$DIST/exotray-$VERSION-linux-$ARCH.tar.gz
    tar -C "$DIST" --owner=0 --group=0 --numeric-owner --sort=name -czf "$TAR" exotray
    echo "tarball: $TAR ($(du -h "$TAR" | cut -f1))" >&2
fi
echo "bundle: $APP ($(du -sh "$APP" | cut -f1)), built in $(( $(date +%s) - start )) s" >&2

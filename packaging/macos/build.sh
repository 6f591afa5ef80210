#!/usr/bin/env bash
# Build exotray.app and a .dmg on macOS, optionally signed and notarised.
#
#   packaging/macos/build.sh [--sign "Developer ID Application: NAME (TEAMID)"]
#                            [--notarize KEYCHAIN_PROFILE] [--arch universal2|arm64|x86_64]
#                            [--dist DIR] [--work DIR] [--no-dmg] [--clean]
#
#   DIST/exotray.app                       the menu-bar app (LSUIElement: no Dock icon)
#   DIST/exotray-VERSION-macos[-ARCH].dmg  the app and an /Applications link
#
# --sign      sign every binary and the app with this Developer ID, hardened runtime and
#             packaging/macos/entitlements.plist, and the .dmg too. Without it the app is
#             signed ad hoc: it runs on this Mac, Gatekeeper refuses it on others.
# --notarize  submit the signed .dmg to Apple (xcrun notarytool submit --wait, with a
#             profile stored by `xcrun notarytool store-credentials PROFILE`), then staple
#             the ticket to the .dmg. Needs --sign.
# --arch      universal2 needs a universal2 Python (python.org installer) and universal2
#             wheels of every compiled dependency; default: the Python's own architecture.
#
# PYTHON: the interpreter with exotray and pyinstaller + pillow installed
# (default .venv/bin/python if it exists, else python3): pip install -e '.[package]'.
# Nothing is downloaded: the build works offline once those are installed.
set -euo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/../.."
ROOT=$PWD

die() { echo "packaging/macos/build.sh: $*" >&2; exit 1; }

DIST=$ROOT/dist
WORK=$ROOT/build/pyinstaller-macos
IDENTITY=""
PROFILE=""
ARCH=""
DMG=1
CLEAN=()
while [ $# -gt 0 ]; do
    case "$1" in
    --sign) [ $# -ge 2 ] || die "--sign needs an identity"; IDENTITY=$2; shift 2 ;;
    --notarize) [ $# -ge 2 ] || die "--notarize needs a keychain profile"; PROFILE=$2; shift 2 ;;
    --arch) [ $# -ge 2 ] || die "--arch needs a value"; ARCH=$2; shift 2 ;;
    --dist) DIST=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --no-dmg) DMG=0; shift ;;
    --clean) CLEAN=(--clean); shift ;;
    -h|--help) sed -n '2,22p' "$SELF" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
done
case "$ARCH" in ""|universal2|arm64|x86_64) ;; *) die "--arch: universal2, arm64 or x86_64" ;; esac
[ -z "$PROFILE" ] || [ -n "$IDENTITY" ] || die "--notarize needs --sign: Apple notarises only signed apps"
[ -z "$PROFILE" ] || [ "$DMG" = 1 ] || die "--notarize notarises the .dmg: drop --no-dmg"

# Everything below needs macOS and Apple's tools.
[ "$(uname -s)" = Darwin ] || die "this builds exotray.app and needs macOS (found $(uname -s)); \
on Linux use packaging/linux/build.sh"
for tool in hdiutil codesign ditto; do
    command -v "$tool" >/dev/null || die "$tool not found (it ships with macOS)"
done
if [ -n "$PROFILE" ]; then
    xcrun --find notarytool >/dev/null 2>&1 || die "xcrun notarytool not found: install Xcode \
or the Command Line Tools (xcode-select --install)"
    xcrun --find stapler >/dev/null 2>&1 || die "xcrun stapler not found: install Xcode or the \
Command Line Tools"
fi
if [ -n "$IDENTITY" ]; then
    security find-identity -v -p codesigning | grep -qF "$IDENTITY" \
        || die "no valid code-signing identity '$IDENTITY' in the keychain \
(security find-identity -v -p codesigning lists them)"
fi
mkdir -p "$DIST" "$WORK"
DIST=$(cd "$DIST" && pwd)
WORK=$(cd "$WORK" && pwd)

if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
command -v "$PYTHON" >/dev/null || die "no Python at '$PYTHON' (set PYTHON)"
"$PYTHON" -c 'import exotray, PySide6.QtWidgets, pyqtgraph' 2>/dev/null \
    || die "$PYTHON cannot import exotray with its GUI: pip install -e '.[package]'"
"$PYTHON" -m PyInstaller --version >/dev/null 2>&1 \
    || die "$PYTHON has no PyInstaller: pip install -e '.[package]'"
"$PYTHON" -c 'import PIL' 2>/dev/null || die "$PYTHON has no Pillow (for the .icns): pip install pillow"
"$PYTHON" scripts/icons.py --check || die "icons missing: run scripts/icons.py"

VERSION=$("$PYTHON" -c 'import exotray; print(exotray.__version__)')
ENTITLEMENTS=$ROOT/packaging/macos/entitlements.plist
plutil -lint "$ENTITLEMENTS" >/dev/null || die "$ENTITLEMENTS is not a valid plist"
echo "building exotray $VERSION (${ARCH:-native}) into $DIST${IDENTITY:+, signed by $IDENTITY}" >&2
start=$(date +%s)

export EXOTRAY_CODESIGN_IDENTITY=$IDENTITY EXOTRAY_TARGET_ARCH=$ARCH
export EXOTRAY_ENTITLEMENTS=""
[ -z "$IDENTITY" ] || EXOTRAY_ENTITLEMENTS=$ENTITLEMENTS
"$PYTHON" -m PyInstaller --noconfirm --log-level WARN "${CLEAN[@]}" \
    --distpath "$DIST" --workpath "$WORK" packaging/macos/exotray.spec
APP=$DIST/exotray.app
[ -d "$APP" ] || die "PyInstaller made no $APP"
rm -rf "$DIST/exotray"  # the COLLECT folder the .app was made from

plutil -lint "$APP/Contents/Info.plist" >/dev/null || die "invalid Info.plist in $APP"
[ "$(/usr/libexec/PlistBuddy -c 'Print :LSUIElement' "$APP/Contents/Info.plist")" = true ] \
    || die "Info.plist has no LSUIElement: the app would show a Dock icon"

if [ -n "$IDENTITY" ]; then
    # PyInstaller signed the binaries inside; sign the app again as a whole (outermost last).
    codesign --force --timestamp --options runtime --entitlements "$ENTITLEMENTS" \
        --sign "$IDENTITY" "$APP"
    codesign --verify --deep --strict --verbose=2 "$APP" || die "codesign --verify failed"
else
    codesign --verify --deep --strict "$APP" 2>/dev/null \
        || echo "warning: the ad-hoc signature does not verify; the app may not start" >&2
fi
got=$("$APP/Contents/MacOS/exotray" --version) || die "the app does not run: exotray --version failed"
[ "$got" = "exotray $VERSION" ] || die "the app says '$got', expected 'exotray $VERSION'"

if [ "$DMG" = 1 ]; then
    NAME=exotray-$VERSION-macos${ARCH:+-$ARCH}.dmg
    OUT=$DIST/$NAME
    STAGE=$WORK/dmg
    rm -rf "$STAGE" "$OUT"
    mkdir -p "$STAGE"
    ditto "$APP" "$STAGE/exotray.app"
    ln -s /Applications "$STAGE/Applications"
    hdiutil create -volname "exotray $VERSION" -srcfolder "$STAGE" -fs HFS+ -format UDZO \
        -ov "$OUT" >/dev/null || die "hdiutil create failed"
    hdiutil verify "$OUT" >/dev/null || die "hdiutil verify $OUT failed"
    if [ -n "$IDENTITY" ]; then
        codesign --force --timestamp --sign "$IDENTITY" "$OUT"
    fi
    if [ -n "$PROFILE" ]; then
        echo "notarising $NAME (this takes minutes)..." >&2
        xcrun notarytool submit "$OUT" --keychain-profile "$PROFILE" --wait \
            || die "notarisation failed; see: xcrun notarytool log <submission id> \
--keychain-profile $PROFILE"
        xcrun stapler staple "$OUT" || die "stapling the ticket to $OUT failed"
        xcrun stapler validate "$OUT"
        spctl --assess --type open --context context:primary-signature --verbose=2 "$OUT" \
            || die "Gatekeeper refuses $OUT"
    fi
    echo "dmg: $OUT ($(du -h "$OUT" | cut -f1))" >&2
fi
echo "app: $APP ($(du -sh "$APP" | cut -f1)), built in $(( $(date +%s) - start )) s" >&2

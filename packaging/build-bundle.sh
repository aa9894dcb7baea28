#!/usr/bin/env bash
# Build the one-folder bundle dist/boris-desktop/: `boris-desktop` (the reviewer app) and
# `boris` (the CLI) sharing one set of libraries, plus share/ with the desktop file, the
# AppStream metainfo and the icons. Runs on Debian 12 after packaging/setup.sh.
#
#   bash packaging/build-bundle.sh               # check, build, smoke-test, print the size
#   bash packaging/build-bundle.sh --check-only  # only check what the build needs, and metadata
#
# Options: --dist DIR (default dist; the bundle is DIR/boris-desktop), --work DIR (PyInstaller's
# cache, default build/pyinstaller), --python PY (default .venv/bin/python, or
# $BORIS_BUILD_PYTHON), --no-system-check (build on a machine that will not run the bundle).
#
# What the bundle needs from the system. The bundle carries Python, Qt and most libraries, but
# not libGL/libEGL (they belong to the machine's graphics driver), not libxcb itself, and no
# fonts, font configuration or keyboard maps. Measured with ldd over every library in it and
# strace of an offscreen --screenshot run.
set -euo pipefail
cd "$(dirname "$0")/.."

# Needed to start at all, even offscreen: libGL/libEGL and libxcb (Qt's GUI library loads them),
# fonts and fontconfig's configuration (without them text renders as empty boxes), xkb keymaps
# (through libxkbcommon0), D-Bus.
CORE_PKGS="libgl1 libegl1 libxcb1 libfontconfig1 libxkbcommon0 libdbus-1-3 fonts-dejavu-core"
# A window on X11 (and XWayland) needs nothing more: the bundle carries its own copies of the
# xcb libraries that packaging/setup.sh installs for a source install (strace of a window
# under Xvfb: only libGL/libEGL/libxcb come from the system).
XCB_CARRIED="libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-render-util0 libxcb-render0 libxcb-shape0 libxcb-util1 libxcb-xkb1 libxkbcommon-x11-0"
# Optional: a native Wayland window; without them Qt falls back to X11 through XWayland.
WAYLAND_PKGS="libwayland-client0 libwayland-cursor0 libwayland-egl1"

DIST=dist
WORK=build/pyinstaller
PY=${BORIS_BUILD_PYTHON:-.venv/bin/python}
CHECK_ONLY=0
SYSTEM_CHECK=1
while [ $# -gt 0 ]; do
  case "$1" in
    --check-only) CHECK_ONLY=1 ;;
    --no-system-check) SYSTEM_CHECK=0 ;;
    --dist) DIST=$2; shift ;;
    --work) WORK=$2; shift ;;
    --python) PY=$2; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-bundle: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

missing_from() {  # print the packages of "$@" that dpkg does not have installed
  local out="" pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || out="$out $pkg"
  done
  echo "${out# }"
}

# Where the build Python's shared libpython is, as PyInstaller looks for it (linked into the
# executable, in the prefix or LIBDIR, or in the loader's cache); empty when there is none.
# Debian's python3 is linked statically: its libpython3.X.so.1.0 is a package of its own.
LIBPYTHON_FIND='
import os, subprocess, sys, sysconfig
names = {sysconfig.get_config_var(v) or "" for v in ("INSTSONAME", "LDLIBRARY")}
names = {n for n in names if ".so" in n}
exe = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
try:
    linked = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
except OSError:
    linked = ""
for line in linked.splitlines():
    parts = line.split()
    if parts and parts[0] in names and len(parts) > 2 and os.path.isfile(parts[2]):
        print(parts[2]); sys.exit()
libdir = sysconfig.get_config_var("LIBDIR") or ""
arch = sysconfig.get_config_var("MULTIARCH") or ""
for d in (sys.base_prefix, os.path.join(sys.base_prefix, "lib"), libdir, os.path.join("/usr/lib", arch)):
    for n in names:
        if os.path.isfile(os.path.join(d, n)):
            print(os.path.join(d, n)); sys.exit()
try:
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
except OSError:
    cache = ""
for line in cache.splitlines():
    if line.split() and line.split()[0] in names:
        print(line.rsplit(" ", 1)[-1]); sys.exit()
'

status=0
if [ "$SYSTEM_CHECK" = 1 ]; then
  echo "system packages the bundle needs on Debian 12:"
  echo "  required (also offscreen): $CORE_PKGS"
  echo "  optional, native Wayland:  $WAYLAND_PKGS"
  echo "  carried by the bundle (only the build machine needs them): $XCB_CARRIED"
  if ! command -v dpkg-query >/dev/null; then
    echo "build-bundle: no dpkg-query here: cannot check them (not Debian?)" >&2
  else
    # shellcheck disable=SC2086
    missing=$(missing_from $CORE_PKGS)
    # shellcheck disable=SC2086
    optional=$(missing_from $WAYLAND_PKGS)
    # The build machine also needs the xcb libraries: the bundle carries its copies of them.
    # shellcheck disable=SC2086
    missing="$missing $(missing_from $XCB_CARRIED)"
    missing=$(echo "$missing" | xargs)
    if [ -n "$missing" ]; then
      echo "build-bundle: missing system packages: $missing" >&2
      status=1
    else
      echo "  all required packages are installed"
    fi
    [ -z "$optional" ] || echo "  not installed (optional): $optional"
  fi
fi

# What the build itself needs: PyInstaller runs objdump (binutils) on every library, and
# collects the shared libpython of the Python it runs on.
build_missing=""
if ! command -v objdump >/dev/null; then
  echo "build-bundle: no objdump: PyInstaller needs it (package binutils)" >&2
  build_missing="binutils"
fi
if [ ! -x "$PY" ]; then
  echo "build-bundle: no $PY; run packaging/setup.sh first (or pass --python)" >&2
  status=1
elif [ -z "$("$PY" -c "$LIBPYTHON_FIND")" ]; then
  py_real=$("$PY" -c 'import os, sys; print(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))')
  py_ver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if command -v dpkg >/dev/null && dpkg -S "$py_real" >/dev/null 2>&1; then
    echo "build-bundle: $py_real has no shared libpython$py_ver: PyInstaller needs it (package libpython$py_ver)" >&2
    build_missing="$build_missing libpython$py_ver"
  else
    echo "build-bundle: $py_real has no shared libpython$py_ver: PyInstaller needs a Python built with --enable-shared" >&2
    status=1
  fi
fi
all_missing=$(echo "${missing:-} $build_missing" | xargs)
if [ -n "$build_missing" ] || { [ "$SYSTEM_CHECK" = 1 ] && [ -n "$all_missing" ]; }; then
  status=1
  if [ "$(id -u)" = 0 ]; then
    echo "  install them with: apt-get install -y $all_missing" >&2
  elif command -v sudo >/dev/null; then
    echo "  install them with: sudo apt-get install -y $all_missing" >&2
  else
    echo "  as root (there is no sudo here), run: apt-get install -y $all_missing" >&2
  fi
fi

# One version: store/version.py. RELEASED (the newest release) is what the newest AppStream
# release and CHANGELOG.md's newest release section name; __version__ is RELEASED itself for a
# release build, or a .dev of the next one while CHANGELOG.md has an [Unreleased] section.
VERSION=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' store/version.py)
RELEASED=$(sed -n 's/^RELEASED = "\(.*\)"$/\1/p' store/version.py)
META=resources/app/org.boris.BorisDesktop.metainfo.xml
DESKTOP=resources/app/org.boris.BorisDesktop.desktop
meta_version=$(grep -o '<release version="[^"]*"' "$META" | head -1 | cut -d'"' -f2)
if [ "$meta_version" != "$RELEASED" ]; then
  echo "build-bundle: $META's newest release is '$meta_version', store/version.py's RELEASED is '$RELEASED'" >&2
  status=1
fi
if ! grep -q "^## \[$RELEASED\]" CHANGELOG.md; then
  echo "build-bundle: CHANGELOG.md has no '## [$RELEASED]' section" >&2
  status=1
fi
if [ "$VERSION" != "$RELEASED" ] && ! { [[ "$VERSION" == *.dev* ]] && grep -q '^## \[Unreleased\]' CHANGELOG.md; }; then
  echo "build-bundle: store/version.py says '$VERSION': a release is RELEASED, unreleased work a .dev with an [Unreleased] section in CHANGELOG.md" >&2
  status=1
fi
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$DESKTOP" | grep -v ': hint: ' >&2 && status=1
else
  echo "  (desktop-file-validate not installed: apt-get install desktop-file-utils; skipped)"
fi
if command -v appstreamcli >/dev/null; then
  appstreamcli validate --no-net "$META" >/dev/null || {
    appstreamcli validate --no-net "$META" >&2
    status=1
  }
else
  echo "  (appstreamcli not installed: apt-get install appstream; skipped)"
fi
if [ "$CHECK_ONLY" = 1 ] || [ "$status" != 0 ]; then
  [ "$status" = 0 ] && echo "check passed: boris-desktop $VERSION"
  exit "$status"
fi

if ! "$PY" -c "import PyInstaller" 2>/dev/null; then
  echo "installing PyInstaller into $("$PY" -c 'import sys; print(sys.prefix)')"
  "$PY" -m pip install -q "pyinstaller>=6.10,<7"
fi

SECONDS=0
"$PY" -m PyInstaller --noconfirm --log-level WARN \
  --distpath "$DIST" --workpath "$WORK" packaging/boris.spec
BUNDLE=$DIST/boris-desktop

# Desktop integration, laid out as under a prefix (share/applications, share/metainfo, icons).
SHARE=$BUNDLE/share
ID=org.boris.BorisDesktop
install -Dm644 "$DESKTOP" "$SHARE/applications/$ID.desktop"
install -Dm644 "$META" "$SHARE/metainfo/$ID.metainfo.xml"
install -Dm644 resources/app/boris-desktop.svg "$SHARE/icons/hicolor/scalable/apps/$ID.svg"
for size in 16 32 48 64 128 256 512; do
  install -Dm644 "resources/app/boris-desktop-$size.png" \
    "$SHARE/icons/hicolor/${size}x${size}/apps/$ID.png"
done
if command -v appstreamcli >/dev/null; then
  if ! appstreamcli validate-tree --no-net "$BUNDLE" >/dev/null; then
    appstreamcli validate-tree --no-net "$BUNDLE" >&2
    exit 1
  fi
fi

# Smoke test: both executables start and report the one version.
for exe in boris boris-desktop; do
  got=$("$BUNDLE/$exe" --version 2>&1)
  if [ "$got" != "$exe $VERSION" ]; then
    echo "build-bundle: $BUNDLE/$exe --version said '$got', expected '$exe $VERSION'" >&2
    exit 1
  fi
done
echo "built $BUNDLE (boris-desktop $VERSION) in ${SECONDS} s, $(du -sh "$BUNDLE" | cut -f1) on disk"
echo "run it: $BUNDLE/boris-desktop [--store DIR]   or   $BUNDLE/boris --help"

#!/usr/bin/env bash
# Set up Boris Desktop on Debian 12: the system libraries Qt needs, then a virtual
# environment in .venv with the app and its test tools. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

QT_LIBS="libglib2.0-0 libdbus-1-3 libfontconfig1 libfreetype6 libx11-6 libxkbcommon0 libgl1 libegl1 fonts-dejavu-core"
XCB_LIBS="xvfb xauth libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-render-util0 libxcb-render0 libxcb-shape0 libxcb-util1 libxcb-xkb1 libxkbcommon-x11-0"

missing=""
for pkg in $QT_LIBS $XCB_LIBS python3-venv; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "installing system packages:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test,postgres]"
echo "ready: .venv/bin/boris-desktop, .venv/bin/boris"

#!/usr/bin/env bash
# Set up Boris Desktop on Debian 12: the system libraries Qt needs, then a virtual
# environment in .venv with the app (the window too) and its test tools. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

QT_LIBS="libglib2.0-0 libdbus-1-3 libfontconfig1 libfreetype6 libx11-6 libxkbcommon0 libgl1 libegl1 fonts-dejavu-core"
XCB_LIBS="xvfb xauth libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-render-util0 libxcb-render0 libxcb-shape0 libxcb-util1 libxcb-xkb1 libxkbcommon-x11-0"

PY=${PYTHON:-python3}
# The bundle (packaging/build-bundle.sh, built in CI) also needs PyInstaller's tools: objdump
# (binutils) and the shared libpython of the Python that builds it. Debian's python3 links
# libpython statically and ships the shared library separately, in libpython3.X.
BUILD_PKGS="binutils"
py_exe=$(command -v "$PY" || true)
if [ -n "$py_exe" ] && dpkg -S "$(readlink -f "$py_exe")" >/dev/null 2>&1; then
  BUILD_PKGS="$BUILD_PKGS lib$("$PY" -c 'import sys; print("python%d.%d" % sys.version_info[:2])')"
fi

missing=""
for pkg in $QT_LIBS $XCB_LIBS $BUILD_PKGS python3-venv; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then
    SUDO=""
  elif command -v sudo >/dev/null; then
    SUDO="sudo"
  else
    echo "setup: these system packages are missing:$missing" >&2
    echo "setup: installing them needs root, and there is no sudo here. As root, run:" >&2
    echo "  apt-get update && apt-get install -y$missing" >&2
    echo "then run bash packaging/setup.sh again." >&2
    exit 1
  fi
  echo "installing system packages:$missing"
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

[ -x .venv/bin/python ] || "$PY" -m venv .venv
# What was installed is stamped with pyproject.toml's digest: run again with the same
# dependencies (as packaging/test.sh and CI do), the install is not redone (pip's own check of
# ~150 packages takes 20 s); change them, or delete the stamp, and it is.
STAMP=.venv/.boris-setup
want="$(sha256sum pyproject.toml | cut -d' ' -f1) $(readlink -f .venv/bin/python)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  # Everything: the window (desktop), the test tools and PostgreSQL's driver. An agent's
  # machine needs only `pip install .`: the boris CLI, boris mcp and the adapters, without Qt.
  # Editable: edits in the checkout take effect without installing again. Installed by uv
  # (the same versions pip resolves, compared package by package; a third of pip's time);
  # by pip where uv cannot be had. Compiled to bytecode as pip does: a process that may not
  # write it (PYTHONDONTWRITEBYTECODE) would otherwise compile each library it imports from
  # source every time (an agent framework's test script took 2.5 times as long).
  if .venv/bin/python -m pip install -q uv && .venv/bin/uv --version >/dev/null 2>&1; then
    .venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python \
      -e ".[desktop,test,postgres]"
  else
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e ".[desktop,test,postgres]"
  fi
  echo "$want" > "$STAMP"
fi
echo "ready: .venv/bin/boris-desktop, .venv/bin/boris"
echo "to run them as boris and boris-desktop, add them to your PATH:"
echo "  export PATH=\"$PWD/.venv/bin:\$PATH\""

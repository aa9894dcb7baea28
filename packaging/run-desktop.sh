#!/usr/bin/env bash
# Open Boris Desktop on the demo store: the demo tasks in a store of their own (created and
# filled on first use; your default store is never touched). With arguments, pass them on
# instead (e.g. --store DIR). With no display, say how to run headless instead of crashing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
  echo "No display found. To look at the app headless, run:" >&2
  echo "  QT_QPA_PLATFORM=offscreen .venv/bin/boris-desktop --demo --screenshot /tmp/boris.png" >&2
  echo "or start a virtual screen: Xvfb :99 & DISPLAY=:99 .venv/bin/boris-desktop --demo" >&2
  exit 2
fi
[ $# -gt 0 ] || set -- --demo
exec .venv/bin/boris-desktop "$@"

#!/usr/bin/env bash
# Open Boris Desktop on the default store (filled with the demo tasks when empty).
# With no display, say how to run headless instead of crashing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
  echo "No display found. To look at the app headless, run:" >&2
  echo "  QT_QPA_PLATFORM=offscreen .venv/bin/boris-desktop --screenshot boris.png" >&2
  echo "or start a virtual screen: Xvfb :99 & DISPLAY=:99 .venv/bin/boris-desktop" >&2
  exit 2
fi
# The README's first command opens the default store with the demo tasks when it is empty
# (the app itself only offers them, so an empty team store is never filled by surprise).
if [ "$(.venv/bin/boris tasks --json 2>/dev/null | tr -d '[:space:]')" = "[]" ]; then
  .venv/bin/boris demo >/dev/null
fi
exec .venv/bin/boris-desktop "$@"

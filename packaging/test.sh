#!/usr/bin/env bash
# The whole test suite, set up as CI sets it up: the app and its test tools (setup.sh), a
# throw-away PostgreSQL server for the store tests' second engine, and a private desktop
# session (Xvfb, D-Bus and dunst) for the notification test. Safe to run again. About 10
# minutes on two cores; arguments go to pytest (e.g. `bash packaging/test.sh tests/test_cli.py`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup.sh

# What the tests need beyond setup.sh: PostgreSQL (the store tests run on both engines) and a
# notification service on a virtual screen (tests/test_desktop_dbus.py).
TEST_PKGS="postgresql dbus xvfb xauth dunst"
have_pg() { command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }
missing=""
have_pg || missing="postgresql"
for tool in dbus-run-session:dbus xvfb-run:xvfb dunst:dunst; do
  command -v "${tool%%:*}" >/dev/null || missing="$missing ${tool#*:}"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo"; else SUDO="none"; fi
  if [ "$SUDO" != none ]; then
    echo "installing the tests' system packages:$missing"
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $TEST_PKGS >/dev/null
  else
    echo "test: without root or sudo,$missing cannot be installed: the tests that need it are" \
      "skipped (PostgreSQL: every store test's second engine; dunst: the notification test)." \
      "As root: apt-get install -y$missing" >&2
  fi
fi

# The run's scratch space on tmpfs where there is one: the tests make and remove hundreds of
# thousands of files (a store, a database, a workspace each), and on ext4 creating them cost
# more CPU in the kernel than many tests cost themselves (perf: ext4's inode allocator
# searching past recently deleted inodes; the kernel's share of the run's CPU was 22%).
# Nothing in it outlives the run. What the tests check about disks (full, read-only) they
# make themselves (tests/test_store_environment.py).
scratch=/tmp
if [ -d /dev/shm ] && [ -w /dev/shm ]; then scratch=/dev/shm; fi
RUN_TMP=$(mktemp -d "$scratch/boris-test.XXXXXX")
chmod 755 "$RUN_TMP"  # the PostgreSQL server's account reaches its directory in it
PG_DIR=""
cleanup() {
  if [ -n "$PG_DIR" ]; then .venv/bin/python tests/pg_server.py stop "$PG_DIR" || true; fi
  rm -rf "$RUN_TMP" 2>/dev/null || echo "test: $RUN_TMP left behind (a mount a test left in it?)" >&2
}
trap cleanup EXIT
export TMPDIR="$RUN_TMP"

# The server runs as a non-root account (PostgreSQL refuses root) on a loopback port in the
# run's scratch space (with fsync off: nothing of it outlives the run), and is stopped however
# the run ends.
if have_pg && [ -z "${BORIS_TEST_PG_URL:-}" ]; then
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1 && ! id borispg >/dev/null 2>&1; then
    useradd -r -m borispg
  fi
  # Each test makes and drops a database: on ext4 the server's CPU for tests/test_verify.py
  # was 10.9 s, on tmpfs 5.6 s.
  PG_DIR="$RUN_TMP/pg"
  eval "$(.venv/bin/python tests/pg_server.py start "$PG_DIR")"
  echo "PostgreSQL for the tests: $BORIS_TEST_PG_URL"
fi

# The checkout's bytecode, compiled once: where PYTHONDONTWRITEBYTECODE is set (some CI images;
# the documents' workspaces, conftest.py) no process writes it, and every `boris` process the
# suite starts would compile the store from source again (0.3 s of CPU each).
.venv/bin/python -m compileall -q store boris_desktop >/dev/null || true
# The 25 slowest tests are listed at the end, so a slow one is seen the day it lands.
# Three workers on two cores: the third fills the time tests wait on processes, timers and
# the server (vmstat: 92-96% busy, against 80% with two). The failures first seen with three
# were races any load shows (a passkey id beginning with "-", a read outliving its store in
# the D-Bus scene, the blob race's rounds), fixed. BORIS_TEST_WORKERS sets another count.
QT_QPA_PLATFORM=offscreen .venv/bin/python -m pytest -q -n "${BORIS_TEST_WORKERS:-3}" --durations=25 "$@"

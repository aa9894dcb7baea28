"""How long a `boris` process takes, start to exit, beside `python -c pass` from the same
interpreter (the floor: no program starts faster), cold and warm (not part of the test run).

Run: .venv/bin/python benchmarks/bench_start.py [--runs 30]

Each command is a process of its own, as Claude Code runs a hook and a shell script runs
`boris`: the installed console script (.venv/bin/boris), in a temporary home whose store is
made by `boris init` (signed, as a user gets it) with the agent's key made and trusted as the
README's setup does. "cold" runs with BORIS_RESIDENT=off (every process imports what its
command needs); "warm" lets the resident process (store.cli.resident) run the command in a
fork of itself, after one command started it. The recorded hook is Claude Code's documented
PreToolUse JSON (tests/fixtures/claude_code/pre_tool_use.json) fed to
`boris hook pre-tool-use`, each run a new tool_use_id, so each records a new call. Runs of the
floor and each command alternate, so a noisy neighbour costs them alike; the median is shown
with its ratio to the median of the floor's runs alternating with it (and of all of them,
first), and the CPU time a command costs: the calling process's,
and, warm, the resident process's and its children's (the command's child, the spare forked
for the next one) over the runs, divided by their number. The resident process is this run's
own (a runtime directory of its own), stopped at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BORIS = str(Path(sys.executable).with_name("boris"))
PERSON = "person:rita"
AGENT = "agent:claude"


def timed(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, input=stdin, capture_output=True)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr.decode()}")
    return took


def children_cpu() -> float:
    """CPU seconds of this process's ended children (the calling `boris` processes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def resident_cpu(runtime: Path) -> float:
    """CPU seconds of the resident process, its ended children and its live ones (a spare)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for lock in (runtime / "boris").glob("*.lock"):
        pid = lock.read_text().strip()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
            for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
                fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
        except (OSError, ValueError):
            continue
    return total / tick


def stop_resident(runtime: Path) -> None:
    for lock in (runtime / "boris").glob("*.lock"):
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(lock.read_text().strip()), signal.SIGTERM)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-start-"))
    runtime = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))  # short: a socket's name
    base = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    base.update(
        XDG_RUNTIME_DIR=str(runtime),
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
    )
    key = home / "agent.pem"
    for argv in (
        ["init", "--actor", PERSON],
        ["keys", "new", str(key)],
        ["keys", "add", str(key), "--for", AGENT, "--actor", PERSON],
        ["--actor", PERSON, "create-task", "--id", "bench", "--title", "Start",
         "--owner", "rita", "--objective", "hooks", "--destination", "claude-code://tools/"],
    ):  # fmt: skip
        subprocess.run([BORIS, *argv], env=base, check=True, capture_output=True)
    hook_env = dict(base, BORIS_KEY=str(key), BORIS_ACTOR=AGENT, BORIS_TASK="bench")
    pre = json.loads((ROOT / "tests/fixtures/claude_code/pre_tool_use.json").read_text())
    calls = iter(range(10**6))

    def hook_input() -> bytes:
        return json.dumps(dict(pre, tool_use_id=f"toolu_bench_{next(calls)}")).encode()

    cases = {
        "boris --version": ([BORIS, "--version"], base, lambda: b""),
        "boris tasks": ([BORIS, "tasks"], base, lambda: b""),
        "hook pre-tool-use (recorded)": ([BORIS, "hook", "pre-tool-use"], hook_env, hook_input),
    }
    floor: list[float] = []
    floors: dict[str, list[float]] = {}  # each case's own, alternating with it
    results: dict[str, list[float]] = {}
    cpu: dict[str, tuple[float, float]] = {}  # a command's: the caller's, the resident's
    for mode in ("cold", "warm"):
        for name, (argv, env, stdin) in cases.items():
            env = dict(env, BORIS_RESIDENT="off" if mode == "cold" else "on")
            timed(argv, env, stdin())  # warm: starts the resident process
            time.sleep(3 if mode == "warm" else 0)  # ... which imports once, apart
            runs = results.setdefault(f"{name}, {mode}", [])
            beside = floors.setdefault(f"{name}, {mode}", [])
            caller = 0.0
            resident = resident_cpu(runtime)
            for _ in range(args.runs):
                beside.append(timed([sys.executable, "-c", "pass"], base))
                floor.append(beside[-1])
                before = children_cpu()
                runs.append(timed(argv, env, stdin()))
                caller += children_cpu() - before
            resident = resident_cpu(runtime) - resident
            cpu[f"{name}, {mode}"] = (caller / args.runs, resident / args.runs)
    pass_ms = statistics.median(floor) * 1000
    print(f"python -c pass: {pass_ms:.1f} ms (median of {len(floor)})")
    for name, runs in results.items():
        ms = statistics.median(runs) * 1000
        beside_ms = statistics.median(floors[name]) * 1000
        caller_ms, resident_ms = (seconds * 1000 for seconds in cpu[name])
        print(
            f"{name}: {ms:.1f} ms ({ms / beside_ms:.1f}x python -c pass beside it, "
            f"{beside_ms:.1f} ms); CPU a command: "
            f"{caller_ms:.0f} ms its process + {resident_ms:.0f} ms the resident's"
        )
    stop_resident(runtime)
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(runtime, ignore_errors=True)


if __name__ == "__main__":
    main()

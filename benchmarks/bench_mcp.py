"""MCP tool calls per second against CLI invocations per second, for the same commands, in the
same run (not part of the test run).

Run: .venv/bin/python benchmarks/bench_mcp.py [--cli-calls 24] [--mcp-calls 240] [--rounds 3]

The same cycle of four commands both ways, on one SQLite store (WAL, synchronous=FULL) in a
temporary directory: add a criterion, record an artifact version (text), plan a file-write
effect (text content; the store hashes the target's pre-state), and read the task's whole
state; a fresh task every 24 commands on both sides, so both read tasks of the same size.
The CLI runs `python -m store.cli …` once per command, as an agent that shells out does
(process start, imports, opening the store, the command); MCP sends `tools/call` to one
`boris mcp` process over stdio through the official SDK's client, after one start-up (timed
apart). Rounds alternate CLI and MCP so a noisy neighbour costs both alike; the best round
of each is reported, with the median latency of each command.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ("add_criterion", "record_artifact", "plan_effect", "task_state")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


class Counter:
    def __init__(self) -> None:
        self.n = 0

    def next(self) -> int:
        self.n += 1
        return self.n


def cli_argv(name: str, task: str, ws: Path, n: int) -> list[str]:
    if name == "add_criterion":
        return ["add-criterion", task, "--text", f"criterion {n}"]
    if name == "record_artifact":
        return ["record-artifact", task, f"notes-{n}", "--text", f"version {n}\n"]
    if name == "plan_effect":
        return ["plan-effect", task, "--target", str(ws / f"out-{n}.txt"), "--consequence",
                f"write out-{n}.txt", "--text", f"content {n}\n"]  # fmt: skip
    return ["show", task, "--json"]


def mcp_call(name: str, task: str, ws: Path, n: int) -> dict[str, Any]:
    if name == "add_criterion":
        return {"task_id": task, "text": f"criterion {n}"}
    if name == "record_artifact":
        return {"task_id": task, "name": f"notes-{n}", "content": {"text": f"version {n}\n"}}
    if name == "plan_effect":
        return {
            "task_id": task,
            "target": str(ws / f"out-{n}.txt"),
            "consequence": f"write out-{n}.txt",
            "content": {"text": f"content {n}\n"},
        }
    return {"task_id": task}


PER_TASK = 24  # commands on one task before the next: both sides read tasks of one size


def run_cli(store: Path, ws: Path, calls: int, ids: Counter) -> dict[str, list[float]]:
    base = [sys.executable, "-m", "store.cli", "--store", str(store), "--actor", "agent:bench"]
    took: dict[str, list[float]] = {name: [] for name in COMMANDS}
    env = _env()
    task = ""
    for i in range(calls):
        if i % PER_TASK == 0:  # a fresh task, untimed
            task = f"cli-{ids.next()}"
            make = ["create-task", "--id", task, "--title", "b", "--owner", "me"]
            make += ["--objective", "measure", "--scope", str(ws)]
            subprocess.run(base + make, env=env, cwd=ROOT, check=True, capture_output=True)
        name = COMMANDS[i % len(COMMANDS)]
        argv = base + cli_argv(name, task, ws, ids.next())
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True)
        took[name].append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"CLI {name} failed: {done.stderr}")
    return took


async def run_mcp(
    store: Path, ws: Path, calls: int, ids: Counter
) -> tuple[float, dict[str, list[float]]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", "--store", str(store), "--actor", "agent:bench"],
        env=_env(),
        cwd=str(ROOT),
    )
    took: dict[str, list[float]] = {name: [] for name in COMMANDS}
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        startup = time.perf_counter() - start
        task = ""
        for i in range(calls):
            if i % PER_TASK == 0:  # a fresh task, untimed
                task = f"mcp-{ids.next()}"
                made = await session.call_tool(
                    "create_task",
                    {"task_id": task, "title": "b", "owner": "me", "objective": "measure",
                     "scope_paths": [str(ws)]},
                )  # fmt: skip
                assert not made.is_error, made.structured_content
            name = COMMANDS[i % len(COMMANDS)]
            arguments = mcp_call(name, task, ws, ids.next())
            t0 = time.perf_counter()
            result = await session.call_tool(name, arguments)
            took[name].append(time.perf_counter() - t0)
            if result.is_error:
                raise SystemExit(f"MCP {name} failed: {result.structured_content}")
    return startup, took


def _rate(took: dict[str, list[float]]) -> float:
    total = sum(sum(v) for v in took.values())
    return sum(len(v) for v in took.values()) / total


def _best(rounds: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    return max(rounds, key=_rate)


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:8.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli-calls", type=int, default=24, help="CLI invocations per round")
    ap.add_argument("--mcp-calls", type=int, default=240, help="MCP tool calls per round")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each (best is reported)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="boris-bench-mcp-") as tmp:
        store, ws = Path(tmp) / "store", Path(tmp) / "ws"
        ws.mkdir()
        subprocess.run(
            [sys.executable, "-m", "store.cli", "--store", str(store), "init"],
            env=_env(),
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        ids = Counter()
        cli_rounds: list[dict[str, list[float]]] = []
        mcp_rounds: list[dict[str, list[float]]] = []
        startups: list[float] = []
        for r in range(args.rounds):
            cli_rounds.append(run_cli(store, ws, args.cli_calls, ids))
            startup, took = anyio.run(run_mcp, store, ws, args.mcp_calls, ids)
            startups.append(startup)
            mcp_rounds.append(took)
            print(
                f"round {r + 1}: CLI {_rate(cli_rounds[-1]):6.2f} calls/s   "
                f"MCP {_rate(took):7.1f} calls/s   (MCP start-up {startup * 1000:.0f} ms)",
                flush=True,
            )
        cli, mcp = _best(cli_rounds), _best(mcp_rounds)
        print()
        print(f"{'command':<18}{'CLI (median)':>14}{'MCP (median)':>16}")
        for name in COMMANDS:
            print(f"{name:<18}{_ms(cli[name]):>14}{_ms(mcp[name]):>16}")
        rate_cli, rate_mcp = _rate(cli), _rate(mcp)
        print()
        print(
            f"CLI: {rate_cli:.2f} invocations/s ({args.cli_calls} per round, best of {args.rounds})"
        )
        print(
            f"MCP: {rate_mcp:.1f} tool calls/s ({args.mcp_calls} per round, best of {args.rounds})"
        )
        print(f"MCP / CLI: {rate_mcp / rate_cli:.0f}x; MCP start-up (once): "
              f"{min(startups) * 1000:.0f} ms")  # fmt: skip


if __name__ == "__main__":
    main()

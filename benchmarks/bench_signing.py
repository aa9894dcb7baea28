"""Signing benchmark (not part of the test run): what signing every write costs.

Run: .venv/bin/python benchmarks/bench_signing.py

Durable appends (`execute(RecordNote)`, one commit each) and checkpoint writes
(`execute(WriteCheckpoint)` on a task with a few criteria, artifacts and budgets), each in an
unsigned store and in a store that requires signatures (an Ed25519 signature over the chain
hash of each transaction's last event, checked against the keyring first), at the same
durability (WAL, synchronous=FULL). Each contender once per round, interleaved, medians of
`--rounds`, the ratio the median of the rounds' ratios, so a noisy neighbour costs every
contender alike; the load average is printed. Goal: signed within 10% of unsigned. The cost of one Ed25519 signature alone is printed beside them, with the best
ratio it leaves possible: the signature is made before the commit that carries it (signing
on a worker thread while the statements run was tried: the GIL handoffs cost more than the
signature, +190 us a write). Then one signature and one verification through each Ed25519
binding, libsodium (PyNaCl, what the store uses) and `cryptography` (OpenSSL), in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_ledger import boris_task
from bench_store import same_statements_appends

from store import Actor, Store
from store import commands as c
from store.commands.checkpoints import WriteCheckpoint
from store.signing import SigningKey
from store.signing.keys import check_signature, check_signature_openssl
from store.signing.seal import record_message
from store.signing.trust import add_key, require

AGENT = Actor(kind="agent", id="bench")
OWNER = Actor(kind="person", id="ana")


def _open(root: Path, signed: bool) -> Store:
    s = Store.open(root / "store")
    if signed:
        owner, agent = SigningKey.generate(), SigningKey.generate()
        require(s, owner, OWNER)
        add_key(s, owner, agent.public_raw, AGENT)
        s.signer = agent
    return s


Rate = tuple[float, float]  # writes per second (wall clock), CPU microseconds per write


def _timed(s: Store, cmd: c.Command, n: int) -> Rate:
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        s.execute(cmd, AGENT)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return n / wall, cpu / n * 1e6


def appends(root: Path, n: int, signed: bool) -> Rate:
    with _open(root, signed) as s:
        tid = s.execute(c.CreateTask(title="b", owner="o", objective="x"), AGENT)
        return _timed(s, c.RecordNote(task_id=tid, text="tick"), n)


def checkpoints(root: Path, n: int, signed: bool) -> Rate:
    with _open(root, signed) as s:
        tid = boris_task(s, root / "scope")
        cmd = WriteCheckpoint(task_id=tid, reason="milestone", note="")
        s.execute(cmd, AGENT)  # the first also writes the task's initial checkpoint
        return _timed(s, cmd, n)


def floor_appends(root: Path, n: int, signed: bool) -> Rate:
    """Boris's statements for `n` appends by raw sqlite3 (bench_store); no CPU figure (the
    store it writes to is made inside the same call)."""
    return same_statements_appends(root, n, signed=signed), float("nan")


def bindings_us(n: int = 5000, rounds: int = 5) -> dict[str, float]:
    """One Ed25519 signature and one verification through each binding, best of `rounds`,
    interleaved: libsodium (PyNaCl, what the store uses) and `cryptography` (OpenSSL)."""
    key = SigningKey.generate()
    msg = record_message("task-0123456789", 12345, "ab" * 32)
    made = key.sign(msg)
    assert made == key.sign_openssl(msg)  # deterministic: byte for byte the same
    ways: dict[str, Callable[[], object]] = {
        "sign libsodium": lambda: key.sign(msg),
        "sign cryptography": lambda: key.sign_openssl(msg),
        "verify libsodium": lambda: check_signature(key.public_raw, made, msg),
        "verify cryptography": lambda: check_signature_openssl(key.public_raw, made, msg),
    }
    best: dict[str, float] = {}
    for _ in range(rounds):
        for name, fn in ways.items():
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            us = (time.perf_counter() - t0) / n * 1e6
            best[name] = min(best.get(name, us), us)
    return best


def rounds_of(rounds: int, contenders: dict[str, Callable[[Path], Rate]]) -> list[dict[str, Rate]]:
    """Each contender once per round, interleaved: every round's rate and CPU per write."""
    got = []
    for _ in range(rounds):
        one = {}
        for name, fn in contenders.items():
            with tempfile.TemporaryDirectory() as d:
                one[name] = fn(Path(d))
        got.append(one)
    return got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--appends", type=int, default=2000)
    ap.add_argument("--checkpoints", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()

    contenders: dict[str, Callable[[Path], Rate]] = {
        "appends unsigned": lambda p: appends(p, a.appends, False),
        "appends signed": lambda p: appends(p, a.appends, True),
        "checkpoints unsigned": lambda p: checkpoints(p, a.checkpoints, False),
        "checkpoints signed": lambda p: checkpoints(p, a.checkpoints, True),
        "floor unsigned": lambda p: floor_appends(p, a.appends, False),
        "floor signed": lambda p: floor_appends(p, a.appends, True),
    }
    load_before = "/".join(f"{x:.1f}" for x in os.getloadavg())
    rounds = rounds_of(a.rounds, contenders)
    load_after = "/".join(f"{x:.1f}" for x in os.getloadavg())
    rates = {
        k: (statistics.median(r[k][0] for r in rounds), statistics.median(r[k][1] for r in rounds))
        for k in contenders
    }

    def ratio(what: str) -> float:
        return statistics.median(r[f"{what} signed"][0] / r[f"{what} unsigned"][0] for r in rounds)

    b = bindings_us()
    one = b["sign libsodium"]  # what the store signs with, best of five
    print(
        f"durable writes, one commit each, unsigned vs signed ({a.rounds} interleaved rounds, "
        f"medians, the ratio the median of the rounds' ratios; load {load_before} before, "
        f"{load_after} after):"
    )
    for what, n in (("appends", a.appends), ("checkpoints", a.checkpoints)):
        (plain, plain_cpu), (signed, signed_cpu) = (
            rates[f"{what} unsigned"],
            rates[f"{what} signed"],
        )
        print(
            f"  {what:<12} x{n:<5} unsigned {plain:8,.0f}/s   signed {signed:8,.0f}/s   "
            f"signed/unsigned = {ratio(what):.3f}  ({(1 - ratio(what)) * 100:+.1f}% slower)"
        )
        print(
            f"  {'':<19} CPU per write: unsigned {plain_cpu:6.0f} us, signed {signed_cpu:6.0f} us"
            f"   (+{signed_cpu - plain_cpu:.0f} us)"
        )
        # The floor: the signature itself must be made before the commit that carries it.
        share = one / (1e6 / plain)
        print(
            f"  {'':<19} floor: one signature is {share * 100:.1f}% of an unsigned write's time,"
            f" so signed/unsigned <= {1 / (1 + share):.3f} here"
        )
    (f_plain, _), (f_signed, _) = rates["floor unsigned"], rates["floor signed"]
    print(
        f"  floor: Boris's statements for an append by raw sqlite3, unsigned {f_plain:,.0f}/s, "
        f"signed (the signature and its row) {f_signed:,.0f}/s: signed/unsigned = "
        f"{ratio('floor'):.3f}"
    )
    print(f"  one Ed25519 signature: {one:.1f} us")
    print("Ed25519 bindings, same run (best of 5 x 5,000):")
    for what in ("sign", "verify"):
        sodium, openssl = b[f"{what} libsodium"], b[f"{what} cryptography"]
        print(
            f"  {what:<6} libsodium (PyNaCl) {sodium:6.1f} us   cryptography {openssl:6.1f} us"
            f"   libsodium = {openssl / sodium:.2f}x as fast"
        )
    (plain, _), (signed, _) = rates["appends unsigned"], rates["appends signed"]
    print(
        f"  row: signed vs unsigned appends / checkpoints | {signed:,.0f}/s: "
        f"{ratio('appends'):.2f}x / {ratio('checkpoints'):.2f}x | unsigned {plain:,.0f}/s; Boris's "
        f"statements by raw sqlite3 signed / unsigned {ratio('floor'):.2f}x; one signature "
        f"{one:.1f} us | >= 0.9x "
        f"({'met' if min(ratio('appends'), ratio('checkpoints')) >= 0.9 else 'missed'})"
    )


if __name__ == "__main__":
    main()

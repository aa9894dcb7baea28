"""The interpreter settings that keep the window responsive while workers run Python."""

from __future__ import annotations

import gc
import sys
import threading

import pytest

from boris_desktop.runtime import interpreter as runtime


def test_the_collector_waits_while_any_job_that_paused_it_runs() -> None:
    assert gc.isenabled()
    inner_started, inner_may_end = threading.Event(), threading.Event()

    def job() -> None:
        with runtime.paused():
            inner_started.set()
            inner_may_end.wait(5)

    worker = threading.Thread(target=job)
    with runtime.paused():
        assert not gc.isenabled()
        worker.start()
        inner_started.wait(5)
    assert not gc.isenabled()  # the worker's job still runs: its pause holds
    inner_may_end.set()
    worker.join(5)
    assert gc.isenabled()


def test_a_collector_switched_off_before_stays_off() -> None:
    gc.disable()
    try:
        with runtime.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_workers_give_the_gil_up_within_a_tenth_of_a_millisecond() -> None:
    before = sys.getswitchinterval()
    try:
        runtime.share_the_gil()
        assert sys.getswitchinterval() == pytest.approx(runtime.SWITCH_INTERVAL_S)
        assert runtime.SWITCH_INTERVAL_S <= 0.0001
    finally:
        sys.setswitchinterval(before)

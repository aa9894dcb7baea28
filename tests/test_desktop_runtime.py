"""The interpreter settings that keep the window responsive while workers run Python."""

from __future__ import annotations

import gc
import sys
import threading

import pytest

from boris_desktop import runtime


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


@pytest.fixture
def _thresholds():
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


@pytest.mark.usefixtures("_thresholds")
def test_the_oldest_generation_waits_for_the_window_to_ask() -> None:
    before = gc.get_threshold()
    runtime.collect_oldest_at_idle()
    assert gc.get_threshold() == (before[0], before[1], runtime.NEVER)
    gc.collect()
    for _ in range(runtime.OLDEST_DUE - 1):
        gc.collect(1)  # each collection of the middle generation counts toward the oldest
    assert not runtime.collect_if_due() and gc.get_count()[2] == runtime.OLDEST_DUE - 1
    gc.collect(1)
    with runtime.paused():
        assert not runtime.collect_if_due()  # a job that paused the collector holds
    assert runtime.collect_if_due() and gc.get_count()[2] == 0


def test_the_window_collects_only_after_it_has_been_idle(qtbot, monkeypatch) -> None:
    from boris_desktop.main_window import MainWindow

    asked: list[bool] = []
    monkeypatch.setattr(runtime, "collect_if_due", lambda: asked.append(True) or True)
    w = MainWindow()
    qtbot.addWidget(w)
    w.loader.submit("slow", lambda: __import__("time").sleep(0.3), lambda _: None)
    w._collect_at_idle()
    assert asked == []  # a job in flight: not idle
    qtbot.waitUntil(lambda: not w.loader.busy("slow"), timeout=5000)
    w._collect_at_idle()
    assert asked == []  # a result just delivered: not idle for long enough
    monkeypatch.setattr(runtime, "IDLE_S", 0.05)
    qtbot.wait(80)
    w._collect_at_idle()
    assert asked == [True]
    assert w._idle_gc.isActive()

"""backend/event_watcher.py: callbacks once CUDA events have passed, from one thread
per device (stand-in events whose passing the test decides)."""
import threading

import pytest

from mxnet.backend.event_watcher import when_passed


class _Event:
    def __init__(self, fail=None):
        self.passed, self.fail = threading.Event(), fail

    def synchronize(self):
        assert self.passed.wait(10)
        if self.fail is not None:
            raise self.fail


def _recorder():
    got, lock = [], threading.Lock()

    def done_for(name):
        def done(exc=None):
            with lock:
                got.append((name, exc))
        return done
    return got, done_for


def _wait_for(cond):
    for _ in range(1000):
        if cond():
            return
        threading.Event().wait(0.01)
    raise AssertionError("timed out")


def test_callbacks_follow_their_events_in_order():
    got, done_for = _recorder()
    first, second = _Event(), _Event()
    when_passed(first, done_for("first"), device_id=7)
    when_passed(second, done_for("second"), device_id=7)
    threading.Event().wait(0.05)
    assert got == []                        # nothing has passed yet
    first.passed.set()
    _wait_for(lambda: len(got) == 1)
    assert got == [("first", None)]
    second.passed.set()
    _wait_for(lambda: len(got) == 2)
    assert got[1] == ("second", None)


def test_a_failed_wait_reaches_the_callback_and_the_watcher_goes_on():
    got, done_for = _recorder()
    bad = _Event(fail=RuntimeError("device failed"))
    good = _Event()
    when_passed(bad, done_for("bad"), device_id=8)

    def broken(exc=None):
        raise ValueError("callback broke")
    when_passed(good, broken, device_id=8)
    after = _Event()
    when_passed(after, done_for("after"), device_id=8)
    with pytest.warns(RuntimeWarning, match="callback broke"):
        for e in (bad, good, after):
            e.passed.set()
        _wait_for(lambda: len(got) == 2)
    assert isinstance(got[0][1], RuntimeError) and got[1] == ("after", None)

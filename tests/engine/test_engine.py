"""The dependency engine's guarantees, for both engines (seed 002's API)."""
import threading
import time

import pytest

import mxnet as mx
from mxnet import engine
from mxnet.base import MXNetError

ENGINES = [engine.NaiveEngine, engine.ThreadedEngine]


@pytest.fixture(params=ENGINES, ids=lambda c: c.__name__)
def eng(request):
    e = request.param()
    yield e
    try:
        e.wait_for_all()
    except MXNetError:
        pass


def test_writes_to_a_var_run_in_push_order(eng):
    v = eng.new_variable()
    log = []
    for i in range(200):
        eng.push_sync(lambda rctx, i=i: log.append(i), mx.cpu(), [], [v])
    eng.wait_for_var(v)
    assert log == list(range(200))


def test_readers_see_the_last_earlier_writer(eng):
    vars_ = [eng.new_variable() for _ in range(4)]
    state = {i: 0 for i in range(4)}
    seen = []
    for step in range(50):
        k = step % 4
        eng.push_sync(lambda rctx, k=k, s=step: state.__setitem__(k, s), mx.cpu(), [], [vars_[k]])
        # a reader of every var must see each var's latest write pushed before it
        expect = {j: max([s for s in range(step + 1) if s % 4 == j], default=0)
                  for j in range(4)}
        eng.push_sync(lambda rctx, e=expect: seen.append(dict(state) == e), mx.cpu(),
                      vars_, [])
    eng.wait_for_all()
    assert len(seen) == 50 and all(seen)


def test_many_interleaved_writers_and_readers_keep_a_consistent_sum():
    eng = engine.ThreadedEngine(num_workers=4)
    a, b = eng.new_variable(), eng.new_variable()
    box = {"a": 0, "b": 0}
    reads = []

    def add(key, n):
        def fn(rctx):
            cur = box[key]
            time.sleep(0)            # invite a race if ordering were broken
            box[key] = cur + n
        return fn
    for i in range(300):
        eng.push_sync(add("a", 1), mx.cpu(), [], [a])
        if i % 3 == 0:
            eng.push_sync(add("b", box and 2), mx.cpu(), [a], [b])
        if i % 10 == 0:
            eng.push_sync(lambda rctx, i=i: reads.append((i, box["a"])), mx.cpu(), [a], [])
    eng.wait_for_all()
    assert box["a"] == 300 and box["b"] == 200
    # each reader pushed after write number i+1 sees exactly i+1 increments
    assert all(val == i + 1 for i, val in reads)


def test_independent_work_runs_in_parallel():
    eng = engine.ThreadedEngine(num_workers=2)
    v1, v2 = eng.new_variable(), eng.new_variable()
    running, peak = [0], [0]
    lock = threading.Lock()

    def work(rctx):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.2)
        with lock:
            running[0] -= 1
    t0 = time.perf_counter()
    eng.push_sync(work, mx.cpu(), [], [v1])
    eng.push_sync(work, mx.cpu(), [], [v2])
    pushed = time.perf_counter() - t0
    eng.wait_for_all()
    assert pushed < 0.1, "push must return at once"
    assert peak[0] == 2


def test_push_returns_before_work_is_done():
    eng = engine.ThreadedEngine()
    v = eng.new_variable()
    done = threading.Event()
    eng.push_sync(lambda rctx: (time.sleep(0.3), done.set()), mx.cpu(), [], [v])
    assert not done.is_set()
    eng.wait_for_var(v)
    assert done.is_set()


def test_exception_surfaces_at_the_dependent_sync_point_and_engine_keeps_working(eng):
    bad, good, after = eng.new_variable(), eng.new_variable(), eng.new_variable()

    def boom(rctx):
        raise ValueError("broken kernel")
    eng.push_sync(boom, mx.cpu(), [], [bad])
    log = []
    eng.push_sync(lambda rctx: log.append("good"), mx.cpu(), [], [good])
    eng.wait_for_var(good)                       # unrelated work is unaffected
    # work that reads the failed var is skipped and inherits its failure
    eng.push_sync(lambda rctx: log.append("dependent"), mx.cpu(), [bad], [after])
    with pytest.raises(MXNetError, match="broken kernel"):
        eng.wait_for_var(after)                  # the dependent sync point raises it
    assert log == ["good"]
    eng.wait_for_var(bad)                        # raised once: consumed for bad too
    eng.wait_for_all()                           # ... and for waitall
    fresh = eng.new_variable()
    eng.push_sync(lambda rctx: log.append("later"), mx.cpu(), [], [fresh])
    eng.wait_for_var(fresh)
    assert log[-1] == "later"


def test_async_functions_complete_through_their_callback(eng):
    v = eng.new_variable()
    log = []

    def fn(rctx, on_complete):
        def later():
            time.sleep(0.05)
            log.append("async")
            on_complete()
        threading.Thread(target=later).start()
    eng.push_async(fn, mx.cpu(), [], [v])
    eng.push_sync(lambda rctx: log.append("next"), mx.cpu(), [v], [])
    eng.wait_for_all()
    assert log == ["async", "next"]


def test_async_failure_reported_through_callback(eng):
    v = eng.new_variable()
    eng.push_async(lambda rctx, done: done(RuntimeError("io failed")), mx.cpu(), [], [v])
    with pytest.raises(MXNetError, match="io failed"):
        eng.wait_for_var(v)


def test_prepared_operator_pushed_repeatedly(eng):
    v = eng.new_variable()
    count = [0]

    def fn(rctx, on_complete):
        count[0] += 1
        on_complete()
    opr = eng.new_operator(fn, [], [v])
    for _ in range(10):
        eng.push(opr, mx.cpu())
    eng.wait_for_var(v)
    assert count[0] == 10
    eng.delete_operator(opr)
    with pytest.raises(MXNetError):
        eng.push(opr, mx.cpu())


def test_delete_variable_runs_after_pending_work(eng):
    v = eng.new_variable()
    log = []
    eng.push_sync(lambda rctx: (time.sleep(0.05), log.append("work")), mx.cpu(), [], [v])
    eng.delete_variable(lambda rctx: log.append("deleted"), mx.cpu(), v)
    eng.wait_for_all()
    assert log == ["work", "deleted"]
    assert v._deleted


def test_priority_orders_ready_work():
    eng = engine.ThreadedEngine(num_workers=1)
    gate = eng.new_variable()
    log = []
    started = threading.Event()
    release = threading.Event()

    def block(rctx):
        started.set()
        release.wait(5)
    eng.push_sync(block, mx.cpu(), [], [gate])
    started.wait(5)
    # queued while the only worker is busy: higher priority runs first
    for prio in (0, 5, 1):
        eng.push_sync(lambda rctx, p=prio: log.append(p), mx.cpu(), [], [eng.new_variable()],
                      priority=prio)
    release.set()
    eng.wait_for_all()
    assert log == [5, 1, 0]


def test_engine_type_from_environment(monkeypatch):
    monkeypatch.setattr(engine, "_engine", None)
    monkeypatch.setenv("MXNET_ENGINE_TYPE", "NaiveEngine")
    assert isinstance(engine.get(), engine.NaiveEngine)
    monkeypatch.setattr(engine, "_engine", None)
    monkeypatch.setenv("MXNET_ENGINE_TYPE", "ThreadedEnginePerDevice")
    assert isinstance(engine.get(), engine.ThreadedEngine)
    monkeypatch.setattr(engine, "_engine", None)
    monkeypatch.setenv("MXNET_ENGINE_TYPE", "BogusEngine")
    with pytest.raises(MXNetError, match="BogusEngine"):
        engine.get()
    monkeypatch.setattr(engine, "_engine", None)


def test_unraised_failure_surfaces_once_at_wait_for_all(eng):
    bad = eng.new_variable()

    def boom(rctx):
        raise ValueError("broken kernel")
    eng.push_sync(boom, mx.cpu(), [], [bad], name="boom_op")
    with pytest.raises(MXNetError, match="Error in operator boom_op.*broken kernel"):
        eng.wait_for_all()
    eng.wait_for_all()
    eng.wait_for_var(bad)                        # consumed by waitall


def test_a_quiet_wait_finishes_the_writes_and_leaves_the_failure_to_the_sync_point(eng):
    """The engine's own waits (re-pointing an executor, reusing a buffer) are not the
    sync point of a failure: it stays for the reader."""
    var, log = eng.new_variable(), []

    def slow_boom(rctx):
        time.sleep(0.05)
        log.append("ran")
        raise ValueError("broken kernel")
    eng.push_sync(slow_boom, mx.cpu(), [], [var])
    eng.wait_quietly(var)
    assert log == ["ran"] and var.num_pending == 0
    with pytest.raises(MXNetError, match="broken kernel"):
        eng.wait_for_var(var)
    eng.wait_for_all()                           # raised once


def test_an_interrupt_inside_inline_work_stops_at_once_and_poisons_its_outputs(eng):
    out = eng.new_variable()

    def interrupted(rctx):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        eng.run_inline(interrupted, [], [out], "interrupted")
    with pytest.raises(MXNetError):              # what it should have written is not there
        eng.wait_for_var(out)


def test_inline_work_runs_beside_pending_reads_and_waits_for_writes():
    """run_inline: a pending read of an input is no reason to hand the work to a worker
    (the engine would grant both reads at once); a pending write of an input, or any
    pending work on an output, is."""
    eng = engine.ThreadedEngine()
    src, dst = eng.new_variable(), eng.new_variable()
    gate = threading.Event()
    eng.push_sync(lambda rctx: gate.wait(10), mx.cpu(), [src], [])     # a pending read
    ran = []
    assert eng.run_inline(lambda rctx: ran.append("beside a read"), [src], [dst])
    assert not eng.run_inline(lambda rctx: ran.append("writes src"), [], [src])
    eng.push_sync(lambda rctx: None, mx.cpu(), [], [src])              # a pending write
    assert not eng.run_inline(lambda rctx: ran.append("reads src"), [src], [dst])
    gate.set()
    eng.wait_for_all()
    assert ran == ["beside a read"]
    assert eng.run_inline(lambda rctx: ran.append("idle"), [src], [dst])


@pytest.mark.parametrize("write", [False, True])
def test_a_wait_to_write_also_waits_for_pending_reads(write):
    """wait_for_var(var, write=True) (NDArray.wait_to_write, MXNet's WaitToWrite)
    returns only once the reads pushed before it are done, since what follows writes
    var's memory in place; a plain wait (for reading) needs only the writes."""
    eng = engine.ThreadedEngine()
    var = eng.new_variable()
    gate = threading.Event()
    eng.push_sync(lambda rctx: gate.wait(10), mx.cpu(), [var], [])     # a pending read
    returned = threading.Event()
    waiter = threading.Thread(target=lambda: (eng.wait_for_var(var, write=write),
                                              returned.set()))
    waiter.start()
    assert returned.wait(0.2) != write        # a read-wait returns at once
    gate.set()
    waiter.join(10)
    assert returned.is_set()
    eng.wait_for_all()
    assert var.num_pending == 0


def test_set_bulk_size_returns_the_previous_size_starting_from_0():
    # MXNet 1.9.1 starts with an imperative bulk size of 0 (asked of the real MXNet:
    # set_bulk_size(7) returns 0, then set_bulk_size(3) returns 7)
    import mxnet as mx
    first = mx.engine.set_bulk_size(7)
    try:
        assert first == 0
        assert mx.engine.set_bulk_size(3) == 7
        with mx.engine.bulk(10):
            assert mx.engine.set_bulk_size(10) == 10
        assert mx.engine.set_bulk_size(3) == 3
    finally:
        mx.engine.set_bulk_size(first)

"""CuPy's own host-to-device copy with page-locked sources (backend/host_to_device.py),
checked on a simulated GPU (tests/simulated_gpu.py) whose ``cupy.array`` reads a
page-locked source only when the stream reaches the copy, as CuPy does.

The caller keeps one page-locked batch buffer and writes the next batch into it right
after each copy (``src[:] = next_batch`` on an ``mx.cpu_pinned()`` array), while the
GPU runs a random amount of its queued work between steps: every kernel must read the
batch it was queued for. Without a hold or staging the simulation does see the race,
so the check can fail.
"""
import numpy as np
import pytest

import mxnet as mx
from mxnet.backend import host_to_device as H2D
from simulated_gpu import Sim

SCHEDULES = [(seed, bias) for bias in ("copy", "compute", "random") for seed in range(4)]


def _loop(sim, put, steps=30, shape=(16, 8), pinned=True):
    """Each step: write the batch into the caller's buffer, copy it with ``put(buf)``
    (returns the device array and the events the caller must let pass before writing
    its buffer again), queue a kernel reading the copy, let the GPU run a little.
    Returns the number of kernels that read something else than their batch."""
    rng = np.random.default_rng(1)
    buf = sim.user_pinned(shape, np.float32) if pinned else np.empty(shape, np.float32)
    holds = []
    for _ in range(steps):
        batch = rng.standard_normal(shape).astype(np.float32)
        for event in holds:                 # the engine's hold on the source's writers
            event.synchronize()
        buf[...] = batch
        x, holds = put(buf)
        sim.kernel_reads(x, batch)
        del x
        sim.step(int(rng.integers(0, 4)))
    for event in holds:
        event.synchronize()
    buf[...] = -1.0                          # the caller's last write, after its holds
    sim.drain()
    assert len(sim.reads) == steps
    return sum(got != want for got, want in sim.reads)


def _held_copy(sim):
    def put(buf):
        held = []
        return H2D.copy(sim, buf, held.append), held
    return put


@pytest.mark.parametrize("seed,bias", SCHEDULES)
def test_a_held_pinned_source_is_read_before_it_is_written_again(seed, bias):
    sim = Sim(seed, bias, cupy_array=True)
    assert _loop(sim, _held_copy(sim)) == 0


@pytest.mark.parametrize("seed,bias", SCHEDULES)
def test_an_unheld_pinned_source_is_staged(seed, bias):
    sim = Sim(seed, bias, cupy_array=True)
    assert _loop(sim, lambda buf: (H2D.copy(sim, buf), [])) == 0


def test_reading_a_pinned_source_in_place_without_a_hold_is_caught():
    """What CuPy's copy alone does (the code before the hold): the simulation sees
    kernels read the caller's next batch."""
    wrong = 0
    for seed, bias in SCHEDULES:
        sim = Sim(seed, bias, cupy_array=True)
        wrong += _loop(sim, lambda buf: (sim.array(buf, copy=True), []))
    assert wrong > 0


def test_a_hold_that_is_not_honoured_is_caught():
    wrong = 0
    for seed, bias in SCHEDULES:
        sim = Sim(seed, bias, cupy_array=True)
        put = _held_copy(sim)
        wrong += _loop(sim, lambda buf: (put(buf)[0], []))
    assert wrong > 0


def test_the_hold_event_follows_the_copy():
    """The event handed to the hold is recorded after the copy on the same stream: once
    it has passed, the device holds the values."""
    sim = Sim(0, "compute", cupy_array=True)
    buf = sim.user_pinned((4, 3), np.float32)
    buf[...] = np.arange(12, dtype=np.float32).reshape(4, 3)
    held = []
    x = H2D.copy(sim, buf, held.append)
    assert len(held) == 1 and sim.memory.get(x.data.ptr) is None    # queued, not run
    held[0].synchronize()
    assert sim.memory[x.data.ptr] == buf.tobytes()


def test_pageable_sources_take_cupys_path_unheld():
    sim = Sim(0, "random", cupy_array=True)
    held = []
    assert _loop(sim, lambda buf: (H2D.copy(sim, buf, held.append), []),
                 pinned=False) == 0
    assert held == []                        # CuPy staged them: nothing to hold


def test_which_sources_are_read_in_place():
    sim = Sim(0, "copy", cupy_array=True)
    pinned = sim.user_pinned((4, 6), np.float32)
    assert H2D.read_in_place(sim, pinned)
    assert H2D.read_in_place(sim, pinned.T)                 # F-contiguous: CuPy keeps it
    assert H2D.read_in_place(sim, pinned[1:3])              # a contiguous piece
    assert not H2D.read_in_place(sim, pinned[:, ::2])       # CuPy copies it to pageable
    assert not H2D.read_in_place(sim, pinned[0, 0])         # 0-d: CuPy fills
    assert not H2D.read_in_place(sim, pinned[:0])           # nothing to read
    assert not H2D.read_in_place(sim, np.zeros((4, 6), np.float32))
    big_endian = sim.user_pinned((4,), np.float32).view(">f4")
    assert not H2D.read_in_place(sim, big_endian)           # CuPy converts it first
    assert not H2D.read_in_place(sim, [1.0, 2.0])           # not an array: CuPy copies
    assert not H2D.read_in_place(sim, np.float32(1.0))


def test_with_cupys_unified_memory_the_device_array_owns_a_copy(monkeypatch):
    """CUPY_ENABLE_UMP=1: CuPy's array() aliases the host memory it is given, so the
    copy hands it a private copy of the source, never the source itself."""
    given = []

    class UmpCupy:
        cuda = type("cuda", (), {})()

        @staticmethod
        def array(host, copy=True):
            given.append(host)
            return host                          # what CuPy does under UMP: no copy
    monkeypatch.setenv("CUPY_ENABLE_UMP", "1")
    src = np.arange(6, dtype=np.float32)
    out = H2D.copy(UmpCupy, src, hold_source=lambda event: None)
    src[:] = -1                                  # the caller's next batch
    np.testing.assert_array_equal(out, np.arange(6, dtype=np.float32))
    assert not np.shares_memory(given[0], src)
    monkeypatch.setenv("CUPY_ENABLE_UMP", "0")
    assert H2D.copy(UmpCupy, src) is src         # (without UMP CuPy copies itself)


def test_no_pinned_memory_query_means_not_in_place():
    """The emulated GPU (tests/multi_gpu_host.py) and CuPy builds without the query."""
    class NoQuery:
        cuda = type("cuda", (), {})()
    assert not H2D.read_in_place(NoQuery, np.zeros(4, np.float32))


# --- on a real GPU ----------------------------------------------------------------------------
@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="needs a CUDA GPU")
@pytest.mark.parametrize("route", ["as_in_context", "copyto", "assign"])
def test_gpu_copy_of_a_rewritten_pinned_batch(monkeypatch, route):
    """CuPy's path (the copy stream off), the GPU busy with earlier work, the pinned
    batch overwritten right after each copy: the GPU gets the batch as copied."""
    import cupy as cp
    from mxnet.backend import copy_stream as CS
    monkeypatch.setattr(CS, "_settings", {"on": False, "min_bytes": 0})
    rng = np.random.default_rng(0)
    big = cp.ones((2048, 2048), np.float32)
    src = mx.nd.array(np.zeros((64, 3, 32, 32)), ctx=mx.cpu_pinned(0))
    dst = mx.nd.zeros((64, 3, 32, 32), ctx=mx.gpu(0))
    for _ in range(4):
        batch = rng.standard_normal((64, 3, 32, 32)).astype(np.float32)
        src[:] = batch
        src.wait_to_read()
        assert H2D.read_in_place(cp, src._data)     # read in place: the case held
        for _ in range(4):                  # GPU work queued ahead of the copy
            big = big @ big * np.float32(1e-3)
        if route == "as_in_context":
            z = src.as_in_context(mx.gpu(0))
        elif route == "copyto":
            z = src.copyto(dst)
        else:
            dst[:] = src
            z = dst
        src[:] = 0                          # the next batch, at once
        np.testing.assert_array_equal(z.asnumpy(), batch)
    mx.nd.waitall()

"""The copy stream's ordering (backend/copy_stream.py), checked on a simulated GPU
(tests/simulated_gpu.py).

A training-loop-like sequence of copies and reading kernels runs under many schedules
(the copy stream racing ahead, the compute stream racing ahead, random), and every
kernel must read the values its batch had when it was copied, even though the
"user" overwrites each host batch right after the copy returns and drops most device
arrays at once. Three broken variants of the copier (no lease on the destination, no
wait on the compute stream, no staging of pageable memory) must each be caught, so
the check can fail.
"""
import numpy as np
import pytest

import mxnet as mx
from mxnet.backend import copy_stream as CS
from simulated_gpu import Sim, Stream


# --- the scenario -------------------------------------------------------------------------
def _train_like(sim, copier, pinned_source, steps=40, shape=(16, 8)):
    """Copy a batch per step, queue a kernel reading it, overwrite the host batch at
    once, drop most device arrays at once (keep some a while), and let the GPU run a
    random amount between steps. Returns the number of wrong reads."""
    rng = np.random.default_rng(1)
    kept = []
    sources = []        # alive to the end: a copy that reads one late reads it, not freed memory
    user_buf = sim.user_pinned(shape, np.float32) if pinned_source else None
    for step in range(steps):
        batch = rng.standard_normal(shape).astype(np.float32)
        if pinned_source:
            user_buf[...] = batch
            src = user_buf
        else:
            src = batch.copy()
            sources.append(src)
        x = copier.host_to_device(src)
        src[...] = -1.0                         # the caller's buffer is its own again
        sim.kernel_reads(x, batch)
        if rng.random() < 0.3:
            kept.append(x.view())               # a view outliving the array
        del x
        if len(kept) > 3:
            kept.pop(0)
        sim.step(int(rng.integers(0, 5)))
    kept.clear()
    sim.drain()
    assert len(sim.reads) == steps
    return sum(got != want for got, want in sim.reads)


SCHEDULES = [(seed, bias) for bias in ("copy", "compute", "random") for seed in range(4)]


@pytest.mark.parametrize("seed,bias", SCHEDULES)
@pytest.mark.parametrize("pinned_source", [False, True])
def test_every_kernel_reads_its_batch(seed, bias, pinned_source):
    sim = Sim(seed, bias)
    copier = CS.CopyStream(sim, 1)           # not the current device: it enters its own
    assert copier.stream.non_blocking and copier.stream.device == 1
    assert _train_like(sim, copier, pinned_source) == 0
    # everything the copier held goes back once the device has finished
    copier.after_sync()
    sim.drain()
    copier.after_sync()
    assert copier.held() == (0, 0, 0)


def test_blocks_are_reused_once_fenced():
    """The lease does not leak: with the device keeping up, the copy stream's arena
    serves every batch from a few blocks."""
    sim = Sim(0, "random")
    copier = CS.CopyStream(sim, 0)
    for _ in range(50):
        x = copier.host_to_device(np.ones((16, 8), np.float32))
        sim.kernel_reads(x, np.ones((16, 8), np.float32))
        del x
        sim.drain()
    assert sim.next_ptr - (1 << 20) <= 3 * 16 * 8 * 4
    assert all(got == want for got, want in sim.reads)


class _NoLease(CS.CopyStream):
    def _lend(self, block, shape, dtype, nbytes):
        return self.cp.ndarray(shape, dtype, memptr=block)      # the pool's own block


class _NoStaging(CS.CopyStream):
    def _source(self, host):
        return host, True                                      # straight from pageable


def _compute_ignores_waits(sim):
    sim.null.wait_event = lambda event: None


BROKEN = {"no lease": (_NoLease, None),
          "no compute wait": (CS.CopyStream, _compute_ignores_waits),
          "no staging": (_NoStaging, None)}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_copier_is_caught(name):
    cls, tweak = BROKEN[name]
    wrong = 0
    for seed, bias in SCHEDULES:
        sim = Sim(seed, bias)
        if tweak is not None:
            tweak(sim)
        wrong += _train_like(sim, cls(sim, 0), pinned_source=False)
    assert wrong > 0, f"the simulation did not catch the {name!r} copier"


def test_settings_and_small_arrays(monkeypatch):
    monkeypatch.setattr(CS, "_settings", {})
    monkeypatch.setenv("MXNET_GPU_COPY_STREAM", "1")
    monkeypatch.setenv("MXNET_GPU_COPY_STREAM_MIN_BYTES", "4096")
    assert CS.enabled()
    assert CS.wanted(np.zeros(1024, np.float32))
    assert not CS.wanted(np.zeros(1023, np.float32))
    assert not CS.wanted(np.zeros(0, np.float32))
    monkeypatch.setattr(CS, "_settings", {})
    monkeypatch.setenv("MXNET_GPU_COPY_STREAM", "0")
    assert not CS.wanted(np.zeros(1 << 20, np.float32))


# --- on a real GPU ----------------------------------------------------------------------------
@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="needs a CUDA GPU")
def test_gpu_copies_match_and_are_released(monkeypatch):
    import cupy as cp
    monkeypatch.setattr(CS, "_settings", {})
    monkeypatch.setenv("MXNET_GPU_COPY_STREAM", "1")
    monkeypatch.setenv("MXNET_GPU_COPY_STREAM_MIN_BYTES", "0")
    rng = np.random.default_rng(0)
    big = cp.ones((2048, 2048), np.float32)
    for _ in range(5):
        batch = rng.standard_normal((64, 3, 32, 32)).astype(np.float32)
        for _ in range(4):                  # GPU work queued ahead of the copy
            big = big @ big * np.float32(1e-3)
        x = mx.nd.array(batch, ctx=mx.gpu(0))
        y = (x * 2).asnumpy()
        np.testing.assert_array_equal(y, batch * 2)
        pinned = mx.nd.array(batch, ctx=mx.cpu_pinned(0))
        z = pinned.as_in_context(mx.gpu(0))
        pinned[:] = 0                       # the source is the caller's again
        np.testing.assert_array_equal(z.asnumpy(), batch)
    del x, z
    mx.nd.waitall()
    mx.nd.waitall()
    copier = CS._copiers.get(0)
    assert copier is not None, "the copy stream was not used"
    assert copier.held()[1:] == (0, 0)


def test_another_current_stream_keeps_cupys_path():
    """Where the calling thread's current stream is not the legacy default one (CuPy's
    per-thread default stream, a user's stream, a graph capture), readers on other
    threads' streams would escape the wait and the fence: CuPy's own copy runs there."""
    sim = Sim(0, "random")
    copier = CS.CopyStream(sim, 0)
    taken = []
    sim.array = lambda host, copy=True: taken.append(host) or "cupy's copy"
    with Stream(sim, "user's"):
        assert copier.host_to_device(np.ones(4, np.float32)) == "cupy's copy"
    assert len(taken) == 1 and not any(s.queue for s in sim.streams)


def test_emptying_the_cache_gives_back_everything_whose_arrays_are_gone():
    sim = Sim(0, "copy")
    copier = CS.CopyStream(sim, 0)
    kept = copier.host_to_device(np.ones(8, np.float32))
    for _ in range(3):
        x = copier.host_to_device(np.ones(8, np.float32))
        sim.kernel_reads(x, np.ones(8, np.float32))
        del x
    copier.after_sync(wait=True)
    assert copier.held() == (1, 0, 0)       # only the array still alive
    del kept
    copier.after_sync(wait=True)
    assert copier.held() == (0, 0, 0)
    assert all(got == want for got, want in sim.reads)


@pytest.mark.parametrize("dtype,ok", [("float32", True), ("int64", True), ("bool", True),
                                      (">f4", False), ("object", False), ("U3", False)])
def test_only_plain_native_types_take_the_copy_stream(monkeypatch, dtype, ok):
    """Big-endian data, objects and strings keep CuPy's path, which converts or refuses
    them; the copy stream copies bytes."""
    monkeypatch.setattr(CS, "_settings", {"on": True, "min_bytes": 0})
    assert CS.wanted(np.zeros(4, dtype)) == ok

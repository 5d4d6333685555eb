"""The copy stream's ordering (backend/copy_stream.py), checked on a simulated GPU.

The simulation keeps what the copy stream's correctness rests on and nothing else:
streams whose queued operations run only when a scheduler steps them, in any order
their event waits allow; CuPy's pool with one arena per stream (a freed block goes
back to the arena of the stream that allocated it and is handed out again there,
newest first); a pinned host pool that reuses freed buffers; copies that read their
host source when they *run*, and kernels that read device memory when they run. A
training-loop-like sequence of copies and reading kernels runs under many schedules
(the copy stream racing ahead, the compute stream racing ahead, random), and every
kernel must read the values its batch had when it was copied, even though the
"user" overwrites each host batch right after the copy returns and drops most device
arrays at once. Three broken variants of the copier (no lease on the destination, no
wait on the compute stream, no staging of pageable memory) must each be caught, so
the check can fail.
"""
import contextlib
import ctypes
import threading
import weakref

import numpy as np
import pytest

from mxnet.backend import copy_stream as CS


# --- the simulated device -----------------------------------------------------------------
class _Event:
    def __init__(self, sim, disable_timing=True):
        self.sim = sim
        self.device = sim.device()
        self.recorded = False
        self.done = False

    def record(self, stream=None):
        assert not self.recorded, "the copier records each event once"
        stream = stream or self.sim.current()
        # CUDA: an event is recorded on a stream of the device it was made on
        assert stream.device in (None, self.device) and self.sim.device() == self.device
        self.recorded = True
        stream.queue.append(("record", self))

    def synchronize(self):
        self.sim.run_until(lambda: self.done)


class _Stream:
    def __init__(self, sim, name, non_blocking=False, legacy=False):
        self.sim = sim
        self.name = name
        self.non_blocking = non_blocking
        self.queue = []
        self.ptr = 0 if legacy else id(self)        # CuPy: the legacy stream's handle is 0
        self.device = None if legacy else sim.device()   # legacy: the current device's
        sim.streams.append(self)

    def wait_event(self, event):
        if event.recorded:             # CUDA: waiting on a never-recorded event is a no-op
            self.queue.append(("wait", event))

    def __enter__(self):
        assert self.device in (None, self.sim.device()), "stream of another device"
        self.sim.local.stack = getattr(self.sim.local, "stack", []) + [self]
        return self

    def __exit__(self, *exc):
        self.sim.local.stack.pop()


class _Block:
    """A pooled device allocation; dying returns it to its stream's arena."""

    def __init__(self, sim, ptr, nbytes, stream):
        self.sim, self.ptr, self.nbytes, self.stream = sim, ptr, nbytes, stream

    def copy_from_host_async(self, host_ptr, nbytes, stream):
        stream.queue.append(("copy", self.ptr, host_ptr, nbytes))

    def __del__(self):
        self.sim.arenas.setdefault(self.stream, []).append((self.ptr, self.nbytes))


class _Unowned:
    def __init__(self, ptr, size, owner, device_id=-1):
        self.ptr, self.size, self.owner = ptr, size, owner


class _Pointer:
    def __init__(self, mem, offset):
        self.mem, self.ptr = mem, mem.ptr + offset


class _Array:
    def __init__(self, shape, dtype, memptr):
        self.shape, self.dtype, self.data = tuple(shape), np.dtype(dtype), memptr

    def view(self):
        return _Array(self.shape, self.dtype, self.data)


class Sim:
    """One simulated GPU and its host side, usable as the copier's ``cp``."""

    def __init__(self, seed, bias):
        self.rng = np.random.default_rng(seed)
        self.bias = bias                # 'copy' or 'compute' runs first when both can
        self.local = threading.local()
        self.streams = []
        self.null = _Stream(self, "compute", legacy=True)
        self.memory = {}                # device ptr -> bytes written there
        self.arenas = {}                # stream -> [(ptr, nbytes)] free blocks
        self.next_ptr = 1 << 20
        self.pinned_free = {}           # nbytes -> [bytearray]
        self.pinned_live = {}           # address -> (nbytes, storage)
        self.reads = []                 # (what a kernel read, what it expected)
        self.cuda = self._cuda_namespace()

    # cupy's surface --------------------------------------------------------------------
    def _cuda_namespace(self):
        sim = self
        ns = type("cuda", (), {})()
        ns.Device = sim.device_scope
        ns.Stream = lambda non_blocking=False: _Stream(sim, "copy", non_blocking)
        ns.Event = lambda disable_timing=False: _Event(sim)
        ns.get_current_stream = sim.current
        ns.alloc = sim.alloc
        ns.alloc_pinned_memory = sim.alloc_pinned
        ns.pinned_memory = type("pm", (), {"is_memory_pinned": staticmethod(sim.is_pinned)})
        ns.UnownedMemory = _Unowned
        ns.MemoryPointer = _Pointer
        return ns

    def ndarray(self, shape, dtype, memptr):
        return _Array(shape, dtype, memptr)

    def array(self, host, copy=True):
        """CuPy's own path (the copier's fallback): not expected in these schedules."""
        raise AssertionError("the copy fell back to cupy.array")

    def device(self):
        return getattr(self.local, "device", 0)

    @contextlib.contextmanager
    def device_scope(self, device_id=0):
        before = self.device()
        self.local.device = device_id
        try:
            yield
        finally:
            self.local.device = before

    def current(self):
        stack = getattr(self.local, "stack", [])
        return stack[-1] if stack else self.null

    def alloc(self, nbytes):
        stream = self.current()
        free = self.arenas.setdefault(stream, [])
        for i in range(len(free) - 1, -1, -1):          # newest first, as CuPy's pool
            if free[i][1] == nbytes:
                ptr, _ = free.pop(i)
                return _Block(self, ptr, nbytes, stream)
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + nbytes
        return _Block(self, ptr, nbytes, stream)

    def alloc_pinned(self, nbytes):
        free = self.pinned_free.setdefault(nbytes, [])
        storage = free.pop() if free else bytearray(nbytes)
        buf = np.frombuffer(storage, np.uint8)
        addr = buf.ctypes.data
        self.pinned_live[addr] = (nbytes, storage)

        def back(addr=addr, storage=storage):
            self.pinned_live.pop(addr, None)
            self.pinned_free[nbytes].append(storage)
        weakref.finalize(buf, back)
        return buf

    def is_pinned(self, addr):
        return any(a <= addr < a + n for a, (n, _) in self.pinned_live.items())

    def user_pinned(self, shape, dtype):
        """A cpu_pinned array of the user's (from the same pool as the staging)."""
        mem = self.alloc_pinned(int(np.prod(shape)) * np.dtype(dtype).itemsize)
        return np.frombuffer(mem, dtype).reshape(shape)

    # the GPU's side ---------------------------------------------------------------------
    def kernel_reads(self, arr, expected):
        """Queue a kernel on the current stream that reads ``arr`` when it runs."""
        self.current().queue.append(("read", arr.data.ptr, expected.copy()))

    def _runnable(self):
        out = []
        for s in self.streams:
            if s.queue and not (s.queue[0][0] == "wait" and not s.queue[0][1].done):
                out.append(s)
        return out

    def _run_head(self, s):
        op = s.queue.pop(0)
        if op[0] == "record":
            op[1].done = True
        elif op[0] == "copy":
            _, ptr, host_ptr, nbytes = op
            self.memory[ptr] = ctypes.string_at(host_ptr, nbytes)
        elif op[0] == "read":
            _, ptr, expected = op
            got = self.memory.get(ptr)
            self.reads.append((got, expected.tobytes()))

    def step(self, n):
        for _ in range(n):
            ready = self._runnable()
            if not ready:
                return
            if self.bias == "random":
                s = ready[self.rng.integers(len(ready))]
            else:
                first = [r for r in ready if r.name == self.bias]
                s = first[0] if first else ready[0]
            self._run_head(s)

    def run_until(self, cond):
        while not cond():
            if not self._runnable():
                raise AssertionError("simulated device deadlocked")
            self.step(1)

    def drain(self):
        self.run_until(lambda: not any(s.queue for s in self.streams))


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
def _gpu():
    import mxnet as mx
    return mx.context.num_gpus() > 0


@pytest.mark.skipif(not _gpu(), reason="needs a CUDA GPU")
def test_gpu_copies_match_and_are_released(monkeypatch):
    import cupy as cp
    import mxnet as mx
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
    with _Stream(sim, "user's"):
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

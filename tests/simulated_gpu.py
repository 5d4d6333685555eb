"""A simulated GPU for checking the ordering of host-to-device copies (the copy stream,
backend/copy_stream.py; CuPy's own copy, backend/host_to_device.py), usable as the
copiers' ``cp``.

What is simulated is what that ordering rests on, nothing else: streams whose queued
operations run only when a scheduler steps them, in any order their event waits allow;
CuPy's pool with one arena per stream (a freed block goes back to the arena of the
stream that allocated it and is handed out again there, newest first); a pinned host
pool that reuses freed buffers; copies that read their host source when they *run*,
and kernels that read device memory when they run (``Sim.reads`` records what each
read against what it should have). ``Sim(..., cupy_array=True)`` adds CuPy's
``cupy.array`` for host data: a page-locked source is read in place when the stream
reaches the copy, anything else is staged into the pinned pool at the call.
"""
import contextlib
import ctypes
import threading
import weakref

import numpy as np


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


class Stream:
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

    def __init__(self, seed, bias, cupy_array=False):
        self.cupy_array = cupy_array    # CuPy's cupy.array for host data, else refused
        self.rng = np.random.default_rng(seed)
        self.bias = bias                # 'copy' or 'compute' runs first when both can
        self.local = threading.local()
        self.streams = []
        self.null = Stream(self, "compute", legacy=True)
        self.memory = {}                # device ptr -> bytes written there
        self.arenas = {}                # stream -> [(ptr, nbytes)] free blocks
        self.next_ptr = 1 << 20
        self.pinned_free = {}           # nbytes -> [bytearray]
        self.pinned_live = {}           # address -> (nbytes, storage)
        self.reads = []                 # (what a kernel read, what it expected)
        self.watched = []               # host memory CuPy keeps until its copy has run
        self.cuda = self._cuda_namespace()

    # cupy's surface --------------------------------------------------------------------
    def _cuda_namespace(self):
        sim = self
        ns = type("cuda", (), {})()
        ns.Device = sim.device_scope
        ns.Stream = lambda non_blocking=False: Stream(sim, "copy", non_blocking)
        ns.Event = lambda block=False, disable_timing=False: _Event(sim)
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
        """``cupy.array`` of a host array (with ``cupy_array``; else the copy stream's
        fallback, not expected in its schedules): a new device array on the current
        stream's arena, its copy queued there. As CuPy: a contiguous page-locked source
        is read in place when the copy runs; any other is first staged into the pinned
        pool. The host memory read is kept alive until the copy has run (CuPy's watch
        list; here until ``drain``)."""
        if not self.cupy_array:
            raise AssertionError("the copy fell back to cupy.array")
        host = np.asarray(host)
        contiguous = host.flags.c_contiguous or host.flags.f_contiguous
        if contiguous and self.is_pinned(host.ctypes.data):
            source = host
        else:
            source = self.alloc_pinned(host.nbytes)
            source[...] = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
        block = self.alloc(host.nbytes)
        self.current().queue.append(("copy", block.ptr, source.ctypes.data, host.nbytes))
        self.watched.append(source)
        return _Array(host.shape, host.dtype, _Pointer(block, 0))

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
        self.watched.clear()

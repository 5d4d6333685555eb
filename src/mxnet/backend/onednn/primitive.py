"""oneDNN primitives over NumPy arrays: memory descriptors, reorders, scratchpad and the
primitive cache.

A ``Plan`` is one created primitive plus everything its execution needs: a memory
object per argument (whose data handle is pointed at the caller's array on each call),
the reorders between a plain (strided NumPy) layout and the blocked layout the
primitive chose when it was created with ``format_tag_any``, the internal buffers of
those layouts, and a user-managed scratchpad. Plans are built once per key (primitive
kind, shapes, strides, parameters, dtype) and kept in an LRU cache, so the steady state
of a training loop only sets data handles and executes.
"""
import collections
import ctypes

import numpy as np

from . import _lib as L
from ._runtime import runtime

__all__ = ["Arg", "Plan", "cached_plan", "user_md", "any_md", "tag_md", "clear_cache", "cache_info",
           "NotSupported"]


class NotSupported(Exception):
    """The case is outside what these kernels (or the library) handle: fall back."""


_MDS = {}
_CACHE = collections.OrderedDict()
_CACHE_MAX = 1024
_stats = {"hits": 0, "misses": 0}


def _dims(seq):
    d = L.Dims()
    for i, v in enumerate(seq):
        d[i] = int(v)
    return d


def user_md(shape, strides=None, dtype=L.F32):
    """The (cached) memory descriptor of a plain strided array; strides in elements
    (None: C-contiguous)."""
    shape = tuple(int(s) for s in shape)
    if strides is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= max(s, 1)
        strides = tuple(reversed(strides))
    key = ("s", shape, tuple(strides), dtype)
    md = _MDS.get(key)
    if md is None:
        rt = runtime()
        h = ctypes.c_void_p()
        L.check(rt.lib, "memory_desc_create_with_strides",
                rt.lib.dnnl_memory_desc_create_with_strides(
                    ctypes.byref(h), len(shape), _dims(shape), dtype, _dims(strides)))
        md = _MDS[key] = h.value
    return md


def any_md(shape, dtype=L.F32):
    """A descriptor with the layout left to the primitive (format_tag_any)."""
    shape = tuple(int(s) for s in shape)
    key = ("any", shape, dtype)
    md = _MDS.get(key)
    if md is None:
        rt = runtime()
        h = ctypes.c_void_p()
        L.check(rt.lib, "memory_desc_create_with_tag",
                rt.lib.dnnl_memory_desc_create_with_tag(
                    ctypes.byref(h), len(shape), _dims(shape), dtype, L.FORMAT_ANY))
        md = _MDS[key] = h.value
    return md


def tag_md(shape, tag, dtype=L.F32):
    """A descriptor in a named layout, e.g. 'aBcd16b' (channels blocked by 16)."""
    shape = tuple(int(s) for s in shape)
    key = ("tag", shape, tag, dtype)
    md = _MDS.get(key)
    if md is None:
        rt = runtime()
        h = ctypes.c_void_p()
        L.check(rt.lib, "memory_desc_create_with_string_tag",
                rt.lib.dnnl_memory_desc_create_with_string_tag(
                    ctypes.byref(h), len(shape), _dims(shape), dtype, tag.encode()))
        md = _MDS[key] = h.value
    return md


def array_md(a):
    """The descriptor of a float32 NumPy array (or strided view) as it lies in memory."""
    item = a.itemsize
    return user_md(a.shape, tuple(s // item for s in a.strides))


class Arg:
    """One argument of a primitive: its id (DNNL_ARG_*), the plain descriptor the caller's
    arrays have, and whether it is written (reordered back after execution).
    ``shared``: instead of a caller's array, the input already lies in the primitive's
    layout in the arena at this offset (another plan, run just before in the same
    locked section, reordered it there); its array is passed as None."""
    __slots__ = ("arg", "md", "output", "shared")

    def __init__(self, arg, md, output=False, shared=None):
        self.arg, self.md, self.output, self.shared = arg, md, output, shared


class _Slot:
    """Execution-time state of one argument."""
    __slots__ = ("arg", "output", "user_mem", "reorder", "reorder_args", "buffer")


def _memory(lib, md, engine, handle=None):
    h = ctypes.c_void_p()
    L.check(lib, "memory_create", lib.dnnl_memory_create(ctypes.byref(h), md, engine,
                                                          handle))
    return h.value


def _reorder(lib, eng, src_md, dst_md):
    """A created reorder primitive from src_md to dst_md."""
    rpd = ctypes.c_void_p()
    L.check(lib, "reorder_primitive_desc_create",
            lib.dnnl_reorder_primitive_desc_create(ctypes.byref(rpd), src_md, eng, dst_md,
                                                   eng, None))
    rp = ctypes.c_void_p()
    try:
        L.check(lib, "primitive_create", lib.dnnl_primitive_create(ctypes.byref(rp), rpd))
    finally:
        lib.dnnl_primitive_desc_destroy(rpd)
    return rp.value


def _aligned(nbytes):
    """A 64-byte aligned uint8 buffer of nbytes (what oneDNN's kernels prefer)."""
    raw = np.empty(nbytes + 64, dtype=np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + nbytes]


class _Arena:
    """One buffer shared by every plan for its scratchpad and its blocked-layout copies
    of arguments, grown to the largest size asked for. They live only during one
    execution, and executions are serialised by the runtime lock, so a network's plans
    need one such buffer, not one per plan (peak memory)."""
    buf = _aligned(0)
    ptr = buf.ctypes.data

    @classmethod
    def get(cls, nbytes):
        if cls.buf.size < nbytes:
            cls.buf = _aligned(nbytes)
            cls.ptr = cls.buf.ctypes.data
        return cls.ptr


def _round64(n):
    return (n + 63) // 64 * 64


class Plan:
    """A created primitive and the memory plumbing to run it over NumPy arrays."""

    def __init__(self, pd, args, arena_base=0):
        """``arena_base``: where this plan's part of the arena starts (after the part of
        a plan whose reordered inputs it shares)."""
        rt = runtime()
        lib, eng = rt.lib, rt.engine
        self._lib = lib
        self.pd = pd
        prim = ctypes.c_void_p()
        L.check(lib, "primitive_create", lib.dnnl_primitive_create(ctypes.byref(prim), pd))
        self.prim = prim.value
        self.slots = []
        exec_args = []
        arena = arena_base
        for a in args:
            s = _Slot()
            s.arg, s.output, s.buffer = a.arg, a.output, None
            want = lib.dnnl_primitive_desc_query_md(pd, L.QUERY_EXEC_ARG_MD, a.arg)
            s.reorder = None
            if a.shared is not None:
                # already in the wanted layout, in the arena: an inner buffer, no reorder
                s.user_mem = None
                s.buffer = (_memory(lib, want, eng), a.shared)
                exec_args.append(L.ExecArg(a.arg, s.buffer[0]))
                self.slots.append(s)
                continue
            s.user_mem = _memory(lib, a.md, eng)
            if want and not lib.dnnl_memory_desc_equal(want, a.md):
                # The primitive chose another layout: a buffer in that layout (in the
                # arena) and a reorder from (inputs) or to (outputs) the caller's array.
                inner = _memory(lib, want, eng)
                s.buffer = (inner, arena)
                arena += _round64(lib.dnnl_memory_desc_get_size(want))
                src, dst = (inner, s.user_mem) if a.output else (s.user_mem, inner)
                src_md, dst_md = (want, a.md) if a.output else (a.md, want)
                s.reorder = _reorder(lib, eng, src_md, dst_md)
                s.reorder_args = (L.ExecArg * 2)(L.ExecArg(L.ARG_FROM, src),
                                                 L.ExecArg(L.ARG_TO, dst))
                exec_args.append(L.ExecArg(a.arg, inner))
            else:
                exec_args.append(L.ExecArg(a.arg, s.user_mem))
            self.slots.append(s)
        self.scratch_mem = None
        smd = lib.dnnl_primitive_desc_query_md(pd, L.QUERY_SCRATCHPAD_MD, 0)
        if smd and lib.dnnl_memory_desc_get_size(smd):
            self.scratch_mem = _memory(lib, smd, eng)
            self.scratch_offset = arena
            arena += _round64(lib.dnnl_memory_desc_get_size(smd))
            exec_args.append(L.ExecArg(L.ARG_SCRATCHPAD, self.scratch_mem))
        self.arena_size = arena
        self.inner = [s.buffer for s in self.slots if s.buffer is not None]
        self.nargs = len(exec_args)
        self.exec_args = (L.ExecArg * self.nargs)(*exec_args)

    def __call__(self, *arrays):
        """Run with one array per Arg (same order as given at creation)."""
        rt = runtime()
        lib, stream = self._lib, rt.stream
        with rt.lock:
            rt.enter_thread()
            for s, a in zip(self.slots, arrays):
                if s.user_mem is not None:
                    lib.dnnl_memory_set_data_handle(s.user_mem, a.ctypes.data)
            if self.arena_size:
                base = _Arena.get(self.arena_size)
                for mem, off in self.inner:
                    lib.dnnl_memory_set_data_handle(mem, base + off)
                if self.scratch_mem is not None:
                    lib.dnnl_memory_set_data_handle(self.scratch_mem,
                                                    base + self.scratch_offset)
            for s in self.slots:
                if s.reorder is not None and not s.output:
                    L.check(lib, "reorder", lib.dnnl_primitive_execute(
                        s.reorder, stream, 2, s.reorder_args))
            L.check(lib, "primitive_execute", lib.dnnl_primitive_execute(
                self.prim, stream, self.nargs, self.exec_args))
            for s in self.slots:
                if s.reorder is not None and s.output:
                    L.check(lib, "reorder", lib.dnnl_primitive_execute(
                        s.reorder, stream, 2, s.reorder_args))
            L.check(lib, "stream_wait", lib.dnnl_stream_wait(stream))

    def reordered_input(self, arg):
        """(layout descriptor, arena offset) of input ``arg``'s reordered copy, or None
        when the primitive reads the caller's array as it is."""
        for s in self.slots:
            if s.arg == arg and s.reorder is not None and not s.output:
                return (self._lib.dnnl_primitive_desc_query_md(self.pd, L.QUERY_EXEC_ARG_MD,
                                                               arg), s.buffer[1])
        return None

    def destroy(self):
        lib = self._lib
        for s in self.slots:
            if s.reorder is not None:
                lib.dnnl_primitive_destroy(s.reorder)
            if s.buffer is not None:
                lib.dnnl_memory_destroy(s.buffer[0])
            if s.user_mem is not None:
                lib.dnnl_memory_destroy(s.user_mem)
        if self.scratch_mem is not None:
            lib.dnnl_memory_destroy(self.scratch_mem)
        lib.dnnl_primitive_destroy(self.prim)
        lib.dnnl_primitive_desc_destroy(self.pd)


def make_attr(post_ops=()):
    """Attributes: user-managed scratchpad and the given post-ops, applied in order to
    the primitive's result: ('relu',), ('binary_mul', md) / ('binary_add', md) (a
    second operand of descriptor md, broadcast over the result: a per-channel scale or
    shift, or a whole tensor). Returns a handle the caller destroys after creating the
    primitive descriptor."""
    rt = runtime()
    lib = rt.lib
    attr = ctypes.c_void_p()
    L.check(lib, "primitive_attr_create", lib.dnnl_primitive_attr_create(ctypes.byref(attr)))
    L.check(lib, "set_scratchpad_mode",
            lib.dnnl_primitive_attr_set_scratchpad_mode(attr, L.SCRATCHPAD_USER))
    if post_ops:
        po = ctypes.c_void_p()
        L.check(lib, "post_ops_create", lib.dnnl_post_ops_create(ctypes.byref(po)))
        try:
            for op in post_ops:
                if op[0] == "relu":
                    L.check(lib, "post_ops_append_eltwise",
                            lib.dnnl_post_ops_append_eltwise(po, L.ELTWISE_RELU, 0.0, 0.0))
                else:
                    alg = L.BINARY_MUL if op[0] == "binary_mul" else L.BINARY_ADD
                    L.check(lib, "post_ops_append_binary",
                            lib.dnnl_post_ops_append_binary(po, alg, op[1]))
            L.check(lib, "set_post_ops", lib.dnnl_primitive_attr_set_post_ops(attr, po))
        finally:
            lib.dnnl_post_ops_destroy(po)
    return attr.value


# oneDNN's reference implementations ("ref:any") are what it falls back to where no
# optimised kernel covers a case: max pooling over plain NCHW data on an AVX2 machine
# took ~90 ms a call for a (64, 32, 28, 28) batch, which made seed 003's CNN train at
# 266 samples/s there. They are refused (NotSupported: the operator's NumPy body runs)
# unless ALLOW_REFERENCE[0] is set: kernels_onednn.forced(), whose tests check the
# oneDNN path itself, whichever implementation it has.
ALLOW_REFERENCE = [0]
_QUERY_IMPL_INFO_STR = 8


def implementation(pd):
    """oneDNN's name of the implementation a primitive descriptor chose (e.g.
    'jit:avx2', 'ref:any')."""
    name = ctypes.c_char_p()
    runtime().lib.dnnl_primitive_desc_query(ctypes.c_void_p(pd), _QUERY_IMPL_INFO_STR, 0,
                                            ctypes.byref(name))
    return (name.value or b"").decode()


def create_pd(fn_name, *args, post_relu=False, post_ops=(), hint=None, has_hint=False):
    """Call dnnl_<fn_name>(&pd, engine, *args, [hint,] attr); a failure (an unsupported
    configuration) raises NotSupported, as does a reference implementation (see
    ALLOW_REFERENCE). ``post_ops`` as for make_attr; ``post_relu``: a ReLU post-op
    (after them)."""
    rt = runtime()
    lib = rt.lib
    attr = make_attr(tuple(post_ops) + ((("relu",),) if post_relu else ()))
    pd = ctypes.c_void_p()
    tail = (hint, attr) if has_hint else (attr,)
    try:
        status = getattr(lib, "dnnl_" + fn_name)(ctypes.byref(pd), rt.engine, *args, *tail)
    finally:
        lib.dnnl_primitive_attr_destroy(attr)
    if status != L.SUCCESS:
        raise NotSupported(f"oneDNN {fn_name}: status {status}")
    if not ALLOW_REFERENCE[0]:
        impl = implementation(pd.value)
        if impl.startswith("ref"):
            lib.dnnl_primitive_desc_destroy(pd)
            raise NotSupported(f"oneDNN {fn_name}: only its reference implementation "
                               f"({impl}) covers this case")
    return pd.value


def dims(seq):
    """A dnnl_dims_t from a sequence (for strides, padding, kernels)."""
    return _dims(seq)


def cached_plan(key, build):
    """The plan for key, built by build() on first use (None cached for unsupported
    cases, so they fall back without retrying)."""
    rt = runtime()
    if ALLOW_REFERENCE[0]:
        key = key + ("reference allowed",)
    with rt.lock:
        rt.enter_thread()
        return _cached_plan(key, build)


def _cached_plan(key, build):
    plan = _CACHE.get(key, _CACHE)
    if plan is not _CACHE:
        _stats["hits"] += 1
        _CACHE.move_to_end(key)
        if plan is None:
            raise NotSupported(f"unsupported: {key[0]}")
        return plan
    _stats["misses"] += 1
    try:
        plan = build()
    except NotSupported:
        _CACHE[key] = None
        raise
    _CACHE[key] = plan
    while len(_CACHE) > _CACHE_MAX:
        _, old = _CACHE.popitem(last=False)
        if old is not None:
            old.destroy()
    return plan


def cache_info():
    """{'size', 'hits', 'misses'} of the primitive cache."""
    return {"size": len(_CACHE), **_stats}


def forget_cache():
    """Drop every plan without destroying it (a forked child)."""
    _CACHE.clear()


def clear_cache():
    for plan in _CACHE.values():
        if plan is not None:
            plan.destroy()
    _CACHE.clear()

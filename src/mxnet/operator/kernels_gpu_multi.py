"""Multi-tensor CUDA kernels: one launch over many arrays, found through a table of
their device pointers. For the per-step work that touches every parameter: the
optimizer update of a whole list of weights, AMP's finite check of every gradient, and
AMP's casts of the weights to the low-precision type and of their gradients back
(``multi_cast``, executor/cast_gather.py).

Why: a ResNet-50 step updates 161 weights and checks 161 gradients. One CuPy kernel
call per array costs 10-25 us of host time (argument checks, then the launch), so the
two took ~10 ms of host time per step on an H100 for well under 1 ms of GPU work
(session 8's profile). Here the host packs one table per call (pointers, element
counts, per-array scalars) into one small host-to-device copy and makes one launch.
In the kernel, ``blockIdx.y`` picks the array and ``blockIdx.x``/``threadIdx.x`` stride
over its elements.

The update kernels are generated from the rules of ``kernels_gpu_optim.RULES``, the
same statements its ElementwiseKernels run (checked there against the operators' NumPy
bodies). The sources use no headers; ``nvcc --ptx`` compiles them on a machine without
a GPU, which is how the CPU tests check them.
"""
import bisect

import numpy as np

from ..backend.cuda_kernels import BITS_SOURCE, raw_kernel
from .kernels_gpu_optim import RULES, _split

__all__ = ["update_source", "nonfinite_source", "cast_source", "update_table",
           "nonfinite_table", "cast_table", "launch_grid", "multi_update",
           "multi_nonfinite", "multi_cast", "DeviceTables", "FLOAT_TYPES", "NONFINITE_TYPES",
           "CAST_PAIRS"]

_THREADS = 256
_MAX_BLOCKS_X = 256           # blocks per array; each thread strides over the rest
_MAX_ARRAYS = 4096            # arrays per launch (gridDim.y allows 65535)
_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
FLOAT_TYPES = tuple(_CTYPES)


def _exponent_masks():
    """dtype -> (bytes per element, the exponent bits: all set means inf or NaN)."""
    masks = {np.dtype(np.float16): (2, 0x7C00), np.dtype(np.float32): (4, 0x7F800000),
             np.dtype(np.float64): (8, 0x7FF0000000000000)}
    from ..base import bfloat16
    if bfloat16 is not None:
        masks[np.dtype(bfloat16)] = (2, 0x7F80)
    return masks


_MASKS = _exponent_masks()
NONFINITE_TYPES = tuple(_MASKS)


def _cast_elements():
    """dtype -> (C type of an element, its value as a float, a float stored as one):
    float32 and the 16-bit types AMP casts between (as their bits, BITS_SOURCE)."""
    elems = {np.dtype(np.float32): ("float", "v", "v"),
             np.dtype(np.float16): ("unsigned short", "mx_half_to_float(v)", "mx_to_half(v)")}
    from ..base import bfloat16
    if bfloat16 is not None:
        elems[np.dtype(bfloat16)] = ("unsigned short", "mx_bf16(v)", "mx_store_bf16(v)")
    return elems


_CAST_ELEMS = _cast_elements()
# (source, destination) dtypes one cast launch takes: float32 to a 16-bit type and
# back; each conversion is exact or one rounding to nearest even, as CuPy's astype
CAST_PAIRS = tuple((a, b) for a in _CAST_ELEMS for b in _CAST_ELEMS
                   if (a == np.float32) != (b == np.float32))


def _arrays_of(name):
    """The rule's per-element arrays in table order: inputs, states, the new weight."""
    _, states, _ = RULES[name]
    return ("weight", "grad") + tuple(states) + ("wout",)


def update_source(name, dtype):
    """(kernel name, CUDA source) of ``name``'s rule over many weights of ``dtype``.

    Table (uint64), n weights: for each array of ``_arrays_of(name)`` n pointers, then
    n element counts, then per weight the rule's scalars as float64 bit patterns.
    ``gate``: null, or a device float that, when 0, makes the launch change nothing
    (AMP's finite flag: the update of an overflowed step is skipped on the device, no
    host wait)."""
    scalars, states, stmts = RULES[name]
    arrays = _arrays_of(name)
    k, ns = len(arrays), len(scalars)
    kname = f"mxnet_multi_{name}_{_CTYPES[np.dtype(dtype)]}"
    head = [f"typedef {_CTYPES[np.dtype(dtype)]} T;",
            "__device__ __forceinline__ T clip_grad(T x, T bound) {",
            "    return bound < T(0) ? x : (x > bound ? bound : (x < -bound ? -bound : x));",
            "}",
            f'extern "C" __global__ void {kname}(const unsigned long long* table, int n,',
            "                                   const float* gate) {",
            "    if (gate != 0 && gate[0] == 0.0f) return;   /* AMP: an overflowed step */",
            "    const int t = blockIdx.y;",
            f"    const long long size = (long long)table[{k} * n + t];",
            f"    const double* sc = (const double*)(table + {k + 1} * n) + t * {ns};"]
    for j, s in enumerate(scalars):
        head.append(f"    const T {s} = (T)sc[{j}];")
    for j, a in enumerate(arrays):
        head.append(f"    T* p_{a} = (T*)table[{j} * n + t];")
    head.append("    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                "i < size; i += (long long)gridDim.x * blockDim.x) {")
    known = set(scalars)
    for a in arrays[:-1]:                       # everything read, once
        head.append(f"        T {a} = p_{a}[i];")
        known.add(a)
    for stmt in stmts:
        lhs, rhs = _split(stmt)
        head.append(f"        {'' if lhs in known else 'T '}{lhs} = {rhs};")
        known.add(lhs)
    for a in tuple(states) + ("wout",):          # then written: wout may be weight
        head.append(f"        p_{a}[i] = {a};")
    head += ["    }", "}"]
    return kname, "\n".join(head) + "\n"


def nonfinite_source():
    """(kernel name, CUDA source) of the finite check over many arrays: a table of n
    pointers, n element counts, n element widths (2, 4 or 8 bytes), n exponent masks;
    ``flag[0]`` is set to 0 when any element has every exponent bit set (inf, NaN)."""
    kname = "mxnet_multi_nonfinite"
    src = f"""
extern "C" __global__ void {kname}(const unsigned long long* table, int n, float* flag) {{
    const int t = blockIdx.y;
    const long long size = (long long)table[n + t];
    const unsigned long long width = table[2 * n + t];
    const unsigned long long mask = table[3 * n + t];
    const char* base = (const char*)table[t];
    bool bad = false;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < size;
         i += (long long)gridDim.x * blockDim.x) {{
        unsigned long long bits;
        if (width == 2) bits = ((const unsigned short*)base)[i];
        else if (width == 4) bits = ((const unsigned int*)base)[i];
        else bits = ((const unsigned long long*)base)[i];
        bad |= (bits & mask) == mask;
    }}
    if (bad) flag[0] = 0.0f;     /* every writer stores the same value */
}}
"""
    return kname, src


def cast_source(src_dtype, dst_dtype):
    """(kernel name, CUDA source) casting many arrays of ``src_dtype`` into arrays of
    ``dst_dtype`` (a pair of CAST_PAIRS): a table of n source pointers, n destination
    pointers, n element counts."""
    sa, sb = np.dtype(src_dtype), np.dtype(dst_dtype)
    src_t, read, _ = _CAST_ELEMS[sa]
    dst_t, _, store = _CAST_ELEMS[sb]
    kname = f"mxnet_multi_cast_{sa.name}_{sb.name}"
    src = BITS_SOURCE + f"""
extern "C" __global__ void {kname}(const unsigned long long* table, int n) {{
    const int t = blockIdx.y;
    const {src_t}* x = (const {src_t}*)table[t];
    {dst_t}* y = ({dst_t}*)table[n + t];
    const long long size = (long long)table[2 * n + t];
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < size;
         i += (long long)gridDim.x * blockDim.x) {{
        float s;
        {{ const {src_t} v = x[i]; s = {read}; }}
        {{ const float v = s; y[i] = {store}; }}
    }}
}}
"""
    return kname, src


def launch_grid(sizes):
    """(blocks along x, arrays along y) of one launch over arrays of ``sizes``."""
    longest = max(sizes) if sizes else 0
    return max(1, min(_MAX_BLOCKS_X, -(-longest // (_THREADS * 4)))), len(sizes)


def update_table(name, pointers, sizes, scalars):
    """The uint64 table of one update launch (layout: ``update_source``).
    ``pointers``: per weight its arrays' addresses in ``_arrays_of(name)`` order;
    ``scalars``: per weight the values of ``RULES[name][0]``."""
    n, k = len(sizes), len(_arrays_of(name))
    table = np.empty((k + 1) * n + n * len(RULES[name][0]), np.uint64)
    table[:k * n] = np.asarray(pointers, np.uint64).reshape(n, k).T.reshape(-1)
    table[k * n:(k + 1) * n] = sizes
    table[(k + 1) * n:] = np.asarray(scalars, np.float64).reshape(-1).view(np.uint64)
    return table


def nonfinite_table(pointers, sizes, dtypes):
    """The uint64 table of one finite-check launch (layout: ``nonfinite_source``)."""
    n = len(sizes)
    table = np.empty(4 * n, np.uint64)
    table[:n] = pointers
    table[n:2 * n] = sizes
    table[2 * n:3 * n] = [_MASKS[np.dtype(d)][0] for d in dtypes]
    table[3 * n:] = [_MASKS[np.dtype(d)][1] for d in dtypes]
    return table


class DeviceTables:
    """The device copies of one caller's launch tables, kept while their bytes stay the
    same (a static executor's pointers repeat every step: one host-to-device copy in
    all). Inside a CUDA-graph capture no copy can be made (CuPy's host-to-device copy
    records and queries events, which a capture refuses), so only a table made before
    the capture with the same bytes is used, and a graph reading it keeps it alive:
    a table replaced after it was captured stays in ``kept``."""

    def __init__(self):
        self.current, self.kept = {}, []

    def get(self, cp, key, table):
        """The device copy of ``table`` (uint64) for launch position ``key``, or None
        inside a capture when there is none with these bytes."""
        from ..backend.cublas_graph import capturing
        raw = table.tobytes()
        hit = self.current.get(key)
        if hit is not None and hit[0] == raw:
            if capturing():
                hit[2] = True
            return hit[1]
        if capturing():
            return None
        if hit is not None and hit[2]:
            self.kept.append(hit)           # a captured graph reads it on every replay
        dev = cp.asarray(table)
        self.current[key] = [raw, dev, False]
        return dev


# the update and finite-check launches' tables, by (launch kind, device id, first
# array): a training step repeats the same table (same buffers, sizes and scalars)
# every step, so its host-to-device copy is made once and reused
_DEVICE_TABLES = DeviceTables()


def _device_table(cp, kind, device, start, table):
    """The device copy of ``table`` (read-only to the kernels), reused when the last
    launch of this kind, device and position had the same bytes."""
    from ..backend.cublas_graph import capturing
    if capturing():
        # a captured copy runs only when the graph replays, and the graph keeps the
        # array's address: a copy of its own, never shared with calls outside it
        return cp.asarray(table)
    return _DEVICE_TABLES.get(cp, (kind, device.id, start), table)


def _usable(cp, a, dtype, device):
    return (isinstance(a, cp.ndarray) and a.dtype == dtype and a.device == device
            and a.flags.c_contiguous)


def multi_update(cp, name, groups, scalars, gate=None):
    """Apply ``RULES[name]`` to many weights, one launch per ``_MAX_ARRAYS`` of them
    (``gate``: None, or a one-element float32 CuPy array on their device whose 0 makes
    the launches change nothing).

    ``groups``: per weight its arrays in ``_arrays_of(name)`` order (weight, grad,
    states..., destination; the destination may be the weight itself: each element is
    read before it is written); ``scalars``: per weight the values of the rule's
    scalar parameters. All arrays must be C-contiguous CuPy arrays of one
    float32/float64 dtype and device, each group of one size. Returns False (nothing
    launched) when they are not."""
    if not groups:
        return True
    w0 = groups[0][0]
    if not isinstance(w0, cp.ndarray) or not type(w0).__module__.startswith("cupy"):
        return False
    dtype, device = w0.dtype, w0.device
    if dtype not in _CTYPES:
        return False
    k = len(_arrays_of(name))
    if gate is not None and not (_usable(cp, gate, np.dtype(np.float32), device)
                                 and gate.size == 1):
        return False
    for g in groups:
        if len(g) != k or not all(_usable(cp, a, dtype, device) and a.size == g[0].size
                                  for a in g):
            return False
    kernel = raw_kernel(cp, ("update", name, dtype), lambda: update_source(name, dtype))
    for start in range(0, len(groups), _MAX_ARRAYS):
        part = groups[start:start + _MAX_ARRAYS]
        sizes = [g[0].size for g in part]
        table = update_table(name, [[a.data.ptr for a in g] for g in part], sizes,
                             scalars[start:start + _MAX_ARRAYS])
        with device:
            kernel(launch_grid(sizes), (_THREADS,),
                   (_device_table(cp, ("update", name, dtype), device, start, table),
                    np.int32(len(part)), np.uint64(0) if gate is None else gate))
    return True


def cast_table(src_pointers, dst_pointers, sizes):
    """The uint64 table of one cast launch (layout: ``cast_source``)."""
    n = len(sizes)
    table = np.empty(3 * n, np.uint64)
    table[:n] = src_pointers
    table[n:2 * n] = dst_pointers
    table[2 * n:] = sizes
    return table


def _overlapping(dst, src):
    """Whether a destination span meets another destination or any source span (the
    sources may share memory: only what is written must stand apart, since the
    threads of one launch read and write in no fixed order). Spans: (start, end)."""
    dst = sorted(d for d in dst if d[1] > d[0])
    if any(b0 < a1 for (_, a1), (b0, _) in zip(dst, dst[1:])):
        return True
    starts = [d[0] for d in dst]
    for s0, s1 in src:
        if s1 <= s0:
            continue
        # the last destination starting before this source ends is the only one that
        # can reach into it (the destinations are disjoint and sorted)
        i = bisect.bisect_left(starts, s1) - 1
        if i >= 0 and dst[i][1] > s0:
            return True
    return False


def multi_cast(cp, pairs, tables=None):
    """Cast many arrays: ``pairs`` of (source, destination), each destination written
    with its source's values in its own dtype; one launch per (source dtype,
    destination dtype) of CAST_PAIRS and ``_MAX_ARRAYS`` arrays, their tables kept in
    ``tables`` (a DeviceTables of the caller's; None: made afresh). Returns False
    (nothing launched) unless every array is a C-contiguous CuPy array on one device,
    each pair of one size and of a dtype pair the kernels take, no destination overlaps
    another array of the call, and (inside a CUDA-graph capture) every table is in
    ``tables`` already."""
    if not pairs:
        return True
    first = pairs[0][0]
    if not isinstance(first, cp.ndarray) or not type(first).__module__.startswith("cupy"):
        return False
    device = first.device
    groups, dst, src = {}, [], []
    for x, y in pairs:
        kind = (x.dtype, y.dtype)
        if kind not in CAST_PAIRS or x.size != y.size or not all(
                isinstance(a, cp.ndarray) and a.device == device and a.flags.c_contiguous
                for a in (x, y)):
            return False
        groups.setdefault(kind, []).append((x, y))
        dst.append((y.data.ptr, y.data.ptr + y.nbytes))
        src.append((x.data.ptr, x.data.ptr + x.nbytes))
    if _overlapping(dst, src):
        return False
    tables = DeviceTables() if tables is None else tables
    launches = []               # every table first: nothing runs unless all are there
    for (sd, dd), part_all in groups.items():
        for start in range(0, len(part_all), _MAX_ARRAYS):
            part = [(x, y) for x, y in part_all[start:start + _MAX_ARRAYS] if x.size]
            if not part:
                continue
            sizes = [x.size for x, _ in part]
            table = cast_table([x.data.ptr for x, _ in part], [y.data.ptr for _, y in part],
                               sizes)
            with device:
                dev = tables.get(cp, (sd, dd, start), table)
            if dev is None:
                return False
            launches.append((sd, dd, launch_grid(sizes), dev, len(part)))
    for sd, dd, grid, dev, n in launches:
        kernel = raw_kernel(cp, ("cast", sd, dd), lambda: cast_source(sd, dd))
        with device:
            kernel(grid, (_THREADS,), (dev, np.int32(n)))
    return True


def multi_nonfinite(cp, arrays, flag):
    """Set ``flag`` (a float32 CuPy array of one element) to 0.0 when any element of
    ``arrays`` is inf or NaN, else leave it: one launch per ``_MAX_ARRAYS`` arrays, no
    host wait. Returns False (nothing launched) unless the arrays are C-contiguous
    CuPy arrays of NONFINITE_TYPES on the flag's device."""
    if not type(flag).__module__.startswith("cupy"):
        return False
    device = flag.device
    for a in arrays:
        if not (isinstance(a, cp.ndarray) and a.dtype in _MASKS and a.device == device
                and a.flags.c_contiguous):
            return False
    arrays = [a for a in arrays if a.size]
    kernel = raw_kernel(cp, ("nonfinite",), nonfinite_source)
    for start in range(0, len(arrays), _MAX_ARRAYS):
        part = arrays[start:start + _MAX_ARRAYS]
        sizes = [a.size for a in part]
        table = nonfinite_table([a.data.ptr for a in part], sizes, [a.dtype for a in part])
        with device:
            kernel(launch_grid(sizes), (_THREADS,),
                   (_device_table(cp, ("nonfinite",), device, start, table),
                    np.int32(len(part)), flag))
    return True

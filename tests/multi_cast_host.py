"""kernels_gpu_multi's cast kernels built for the host (g++, tests/cuda_on_host.py) and
a ``multi_cast`` stand-in that packs its tables and picks its launch shape as the module
does, then runs them there: for the tests of the kernels and of the executor's gathered
casts (executor/cast_gather.py) on machines without a GPU."""
import ctypes

import numpy as np

from mxnet.operator import kernels_gpu_multi as M

from cuda_on_host import build, grid_driver, translation_unit


def build_cast_kernels(tmp_dir):
    """The library of every CAST_PAIRS kernel, each with an ``emu_<name>`` driver."""
    sources = [M.cast_source(a, b) for a, b in M.CAST_PAIRS]
    code = [translation_unit(src for _, src in sources)]
    for i, (kname, _) in enumerate(sources):
        code.append(grid_driver(f"k{i}", kname, "const unsigned long long* table, int n",
                                "table, n"))
    return build(tmp_dir, "\n".join(code))


def host_multi_cast(lib, pairs):
    """``multi_cast`` over NumPy arrays with the kernels run by ``lib``: one launch per
    dtype pair (the module's grouping, table and grid); False where it would decline
    (a pair it does not take, non-contiguous arrays, overlapping destinations)."""
    groups, dst, src = {}, [], []
    for x, y in pairs:
        kind = (x.dtype, y.dtype)
        if kind not in M.CAST_PAIRS or x.size != y.size or \
                not (x.flags.c_contiguous and y.flags.c_contiguous):
            return False
        groups.setdefault(kind, []).append((x, y))
        dst.append((y.ctypes.data, y.ctypes.data + y.nbytes))
        src.append((x.ctypes.data, x.ctypes.data + x.nbytes))
    if M._overlapping(dst, src):
        return False
    for (sd, dd), part in groups.items():
        part = [(x, y) for x, y in part if x.size]
        if not part:
            continue
        sizes = [x.size for x, _ in part]
        table = M.cast_table([x.ctypes.data for x, _ in part],
                             [y.ctypes.data for _, y in part], sizes)
        gx, gy = M.launch_grid(sizes)
        fn = getattr(lib, "emu_" + M.cast_source(sd, dd)[0])
        fn(ctypes.c_uint(gx), ctypes.c_uint(gy), ctypes.c_uint(M._THREADS),
           table.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(len(part)))
    return True


def same_values(got, want):
    """Bit for bit, except that any NaN matches any NaN (payloads may differ)."""
    g = np.asarray(got).astype(np.float32)
    w = np.asarray(want).astype(np.float32)
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan)
    assert np.array_equal(g[~nan].view(np.uint32), w[~nan].view(np.uint32))

"""AMP's multi-tensor cast kernels (kernels_gpu_multi.cast_source / multi_cast): the
sources compile with nvcc (skipped without it); run on the host (g++, the module's own
tables and launch shape) every 16-bit bit pattern widens to float32 exactly and float32
values narrow as NumPy (ml_dtypes for bfloat16) rounds them, one launch casting arrays
of many sizes; on a GPU (skipped without one) ``multi_cast`` equals CuPy's astype and
declines what it cannot take."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import bfloat16
from mxnet.operator import kernels_gpu_multi as M

from cuda_on_host import sources_ptx
from multi_cast_host import host_multi_cast, install, same_values

HALVES = [np.dtype(np.float16)] + ([np.dtype(bfloat16)] if bfloat16 is not None else [])
gpu = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")


@pytest.fixture
def lib(monkeypatch, tmp_path):
    """multi_cast's own code with host-built kernels: the fake CuPy module to pass."""
    return install(monkeypatch, tmp_path)


def test_the_pairs_are_float32_and_each_16_bit_type_both_ways():
    want = {(np.dtype(np.float32), h) for h in HALVES} | \
        {(h, np.dtype(np.float32)) for h in HALVES}
    assert set(M.CAST_PAIRS) == want


def test_sources_compile_with_nvcc(tmp_path):
    sources_ptx(tmp_path, [M.cast_source(a, b) for a, b in M.CAST_PAIRS])


@pytest.mark.parametrize("half", HALVES, ids=str)
def test_every_16_bit_value_widens_exactly(lib, half):
    bits = np.arange(1 << 16, dtype=np.uint16)
    x = bits.view(half)
    y = np.full(x.shape, 7.0, np.float32)
    assert host_multi_cast(lib, [(x, y)])
    same_values(y, x.astype(np.float32))


def _float32_cases():
    rng = np.random.RandomState(0)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 65504.0, 65519.0,
                        65520.0, 1e-8, -1e-8, 5.96e-8, 2.98e-8, 3e38, -3e38, 1e-40,
                        1.00390625, 1.01171875], np.float32)
    # a GPU's arithmetic NaN (all payload bits set), which a rounding would carry over
    nans = np.array([0x7fffffff, 0xffffffff, 0x7f800001], np.uint32).view(np.float32)
    # values halfway between neighbours of each 16-bit type (ties to even) and others
    ties = (np.arange(1, 4000, dtype=np.uint32) << 13 | (1 << 12)).view(np.float32)
    bf_ties = (np.arange(1, 4000, dtype=np.uint32) << 16 | (1 << 15)).view(np.float32)
    wide = rng.standard_normal(20000).astype(np.float32) * \
        np.float32(2.0) ** rng.randint(-30, 30, 20000).astype(np.float32)
    return np.concatenate([special, nans, ties, bf_ties, -ties, wide])


@pytest.mark.parametrize("half", HALVES, ids=str)
def test_float32_narrows_as_numpy_rounds(lib, half):
    x = _float32_cases()
    y = np.zeros(x.shape, half)
    assert host_multi_cast(lib, [(x, y)])
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(half)
    same_values(y, want)


@pytest.mark.parametrize("per_launch", [4096, 3])
def test_one_call_casts_many_arrays_of_both_directions(lib, monkeypatch, per_launch):
    monkeypatch.setattr(M, "_MAX_ARRAYS", per_launch)    # (3: several launches a pair)
    rng = np.random.RandomState(1)
    shapes = [(0,), (1,), (3, 5), (70001,), (64, 3, 7, 7), (257,)]
    pairs, want = [], []
    for i, s in enumerate(shapes):
        half = HALVES[i % len(HALVES)]
        x = rng.standard_normal(s).astype(np.float32)
        pairs.append((x, np.zeros(s, half)))
        want.append(x.astype(half))
        h = rng.standard_normal(s).astype(half)
        pairs.append((h, np.zeros(s, np.float32)))
        want.append(h.astype(np.float32))
    assert host_multi_cast(lib, pairs)
    for (_, y), w in zip(pairs, want):
        same_values(y, w)


def test_overlapping_destinations_decline(lib):
    buf = np.zeros(16, np.float32)
    x = np.ones(16, np.float32)
    inside = buf.view(np.float16)[:16]          # a destination within another one
    assert not host_multi_cast(lib, [(x, inside), (np.ones(8, np.float16), buf[4:12])])
    assert not host_multi_cast(lib, [(x, x.view(np.float16)[:16])])   # over its source
    assert np.all(buf == 0)                     # nothing launched


def test_tables_are_copied_once_and_none_inside_a_capture(lib, monkeypatch):
    """A caller's DeviceTables: the same pointers again reuse the device table; inside
    a CUDA-graph capture (no host-to-device copy allowed) only a table made before it
    is used, else the call declines without launching."""
    from mxnet.backend import cublas_graph
    x, y = np.ones(5, np.float32), np.zeros(5, np.float16)
    tables = M.DeviceTables()
    assert host_multi_cast(lib, [(x, y)], tables) and lib.table_copies == 1
    assert host_multi_cast(lib, [(x, y)], tables) and lib.table_copies == 1
    monkeypatch.setattr(cublas_graph, "capturing", lambda: True)
    assert host_multi_cast(lib, [(x, y)], tables) and lib.table_copies == 1
    z = np.zeros(5, np.float16)
    assert not host_multi_cast(lib, [(x, z)], tables)       # a new table: not now
    assert lib.table_copies == 1 and np.all(z == 0)
    monkeypatch.setattr(cublas_graph, "capturing", lambda: False)
    assert host_multi_cast(lib, [(x, z)], tables) and lib.table_copies == 2
    assert len(tables.kept) == 1                # the captured table stays alive


def test_overlap_rule_guards_destinations_only():
    assert not M._overlapping([(0, 10), (20, 30)], [(10, 20), (0, 10 - 10)])
    assert M._overlapping([(0, 10), (20, 30)], [(25, 26)])      # a source under a dest
    assert M._overlapping([(0, 10), (5, 30)], [])                # destinations meet
    assert M._overlapping([(10, 20)], [(0, 11)])
    assert not M._overlapping([(10, 20), (40, 50)], [(0, 10), (25, 30), (0, 10)])
    assert M._overlapping([(10, 20), (40, 50)], [(0, 100)])      # a source spans one


def test_table_layout():
    t = M.cast_table([1, 2], [3, 4], [5, 6])
    assert t.dtype == np.uint64 and t.tolist() == [1, 2, 3, 4, 5, 6]


@gpu
def test_multi_cast_on_gpu_equals_astype():
    import cupy as cp
    rng = np.random.RandomState(2)
    pairs, want = [], []
    for i, s in enumerate([(3, 5), (70001,), (0,), (64, 3, 7, 7)]):
        half = HALVES[i % len(HALVES)]
        x = cp.asarray(rng.standard_normal(s).astype(np.float32))
        pairs.append((x, cp.empty(s, half)))
        want.append(x.astype(half))
        h = x.astype(half)
        pairs.append((h, cp.empty(s, np.float32)))
        want.append(h.astype(np.float32))
    assert M.multi_cast(cp, pairs)
    for (_, y), w in zip(pairs, want):
        same_values(cp.asnumpy(y), cp.asnumpy(w))


@gpu
def test_multi_cast_on_gpu_declines_what_it_cannot_take():
    import cupy as cp
    x = cp.ones((4, 8), np.float32)
    assert not M.multi_cast(cp, [(x[:, ::2], cp.empty((4, 4), np.float16))])   # strided
    assert not M.multi_cast(cp, [(x, cp.empty((4, 8), np.float64))])          # a pair
    assert not M.multi_cast(cp, [(x, x.view(np.float16).reshape(-1)[:32].reshape(4, 8))])
    assert not M.multi_cast(cp, [(x, cp.empty((4, 8), np.float16)[:, ::1][::-1])])  # strided

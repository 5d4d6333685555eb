"""The per-channel reductions against float64 NumPy sums, on both sides of the size
from which they take BLAS / einsum, for every layout they can be handed."""
import numpy as np
import pytest

from mxnet.operator.nn import channel_sums
from mxnet.operator.nn.channel_sums import channel_dot, channel_sum, row_sum

rs = np.random.RandomState(5)
SHAPES = [(2, 4, 8), (1, 16, 700), (3, 32, 100), (64, 8, 49), (2, 4096, 3)]


def close(got, want, dtype):
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_channel_sum_and_dot(shape, dtype):
    a = rs.uniform(-1, 2, shape).astype(dtype)
    b = rs.uniform(-1, 2, shape).astype(dtype)
    got = channel_sum(np, a)
    assert got.shape == (shape[1],) and got.dtype == dtype
    close(got, a.astype(np.float64).sum(axis=(0, 2)), dtype)
    got = channel_dot(np, a, b)
    assert got.shape == (shape[1],) and got.dtype == dtype
    close(got, (a.astype(np.float64) * b).sum(axis=(0, 2)), dtype)


@pytest.mark.parametrize("shape", SHAPES)
def test_results_land_in_out(shape):
    a = rs.rand(*shape).astype(np.float32)
    for fn, args in ((channel_sum, (a,)), (channel_dot, (a, a))):
        out = np.full(shape[1], np.nan, np.float32)
        assert fn(np, *args, out=out) is out
        close(out, fn(np, *(x.astype(np.float64) for x in args)), np.float32)


def test_row_sum():
    rows = rs.rand(40, 900).astype(np.float32)
    close(row_sum(np, rows), rows.astype(np.float64).sum(axis=1), np.float32)
    out = np.empty(40, np.float32)
    assert row_sum(np, rows, out=out) is out
    close(out, rows.astype(np.float64).sum(axis=1), np.float32)


def test_strided_and_mixed_inputs_take_numpy_sums():
    big = rs.rand(4, 32, 200).astype(np.float32)
    strided = big[:, :, ::2]                  # not contiguous
    assert strided.size >= channel_sums._MIN_SIZE
    close(channel_sum(np, strided), strided.astype(np.float64).sum(axis=(0, 2)),
          np.float32)
    other = strided.astype(np.float64)        # two types: a float64 product sum
    got = channel_dot(np, strided, other)
    assert got.dtype == np.float64
    close(got, (other * other).sum(axis=(0, 2)), np.float64)


def test_integers_keep_numpy_semantics():
    a = rs.randint(-100, 100, (4, 8, 400)).astype(np.int32)
    np.testing.assert_array_equal(channel_sum(np, a), a.sum(axis=(0, 2)))
    assert channel_sum(np, a).dtype == a.sum(axis=(0, 2)).dtype


def test_ones_vector_grows_and_stays_ones():
    short = channel_sums._ones_vector(np.dtype(np.float32), 10)
    long = channel_sums._ones_vector(np.dtype(np.float32), 5000)
    assert short.shape == (10,) and long.shape == (5000,)
    assert (long == 1).all() and (short == 1).all()

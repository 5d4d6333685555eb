"""mx.np.nan_to_num (MXNet 1.9.1's, over the _npi_nan_to_num operator) against NumPy:
the defaults are the dtype's extremes, copy=False writes into x, integers pass, and
the gradient flows only where x is finite."""
import numpy as onp
import pytest

import mxnet as mx
from mxnet import np

SPECIAL = [onp.nan, onp.inf, -onp.inf, 1.5, -2.0]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_defaults_are_the_dtype_extremes(dtype):
    x = onp.array(SPECIAL, dtype=dtype)
    got = np.nan_to_num(np.array(x, dtype=dtype))
    assert got.dtype == onp.dtype(dtype)
    onp.testing.assert_array_equal(got.asnumpy(), onp.nan_to_num(x))


def test_copy_false_writes_into_x_and_scalars_and_ints():
    x = np.array([onp.nan, 1.0])
    assert np.nan_to_num(x, copy=False, nan=-1.0) is x
    assert x.asnumpy().tolist() == [-1.0, 1.0]
    assert np.nan_to_num(float("nan"), nan=2.0) == 2.0
    i = np.nan_to_num(np.array([1, 2], dtype="int32"))
    assert i.dtype == onp.int32 and i.asnumpy().tolist() == [1, 2]


def test_gradient_only_where_finite():
    x = np.array(SPECIAL)
    x.attach_grad()
    with mx.autograd.record():
        y = np.nan_to_num(x, nan=1.0)
    y.backward(np.array([1.0, 2, 3, 4, 5]))
    assert x.grad.asnumpy().tolist() == [0, 0, 0, 4, 5]

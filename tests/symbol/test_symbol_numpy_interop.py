"""Symbols inside NumPy containers, as MXNet-era code (and MXNet 1.9.1's GPU tests:
``check_consistency_NxM``) builds them under NumPy 2."""
import numpy as np
import pytest

import mxnet as mx


def test_a_list_of_symbols_becomes_an_object_array():
    a = mx.sym.var("a")
    b = mx.sym.relu(a)
    grouped = mx.sym.Group([a, b])
    r = np.repeat([a, b, grouped], 2)
    assert r.dtype == object and r.shape == (6,)
    assert r[0] is a and r[2] is b and r[4] is grouped
    assert np.asarray(a).shape == () and np.asarray(a)[()] is a


def test_a_symbol_is_not_numbers():
    with pytest.raises(TypeError, match="Symbol"):
        np.asarray(mx.sym.var("a"), dtype=np.float32)

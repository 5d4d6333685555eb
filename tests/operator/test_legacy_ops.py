"""fill_element_0index, onehot_encode and choose_element_0index (pick's alias)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from opcheck import Case, check

rs = np.random.RandomState(6)


def test_fill_element_0index():
    lhs, mhs, rhs = rs.uniform(-1, 1, (3, 4)), rs.uniform(-1, 1, 3), np.array([2.0, 0, 3])

    def ref(a, m, r):
        out = a.copy()
        out[np.arange(3), r.astype(int)] = m
        return out
    check(Case("fill_element_0index", ref, inputs=[lhs, mhs, rhs], grad=False,
               dtypes=(np.float32,)))
    with pytest.raises(MXNetError, match="fill_element_0index"):
        mx.nd.fill_element_0index(mx.nd.array(lhs, dtype="float64"),
                                  mx.nd.array(mhs, dtype="float64"),
                                  mx.nd.array(rhs, dtype="float64"))


def test_onehot_encode_writes_out():
    out = mx.nd.zeros((3, 4))
    res = mx.nd.onehot_encode(mx.nd.array([1, 3, 0]), out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), np.eye(4)[[1, 3, 0]])
    with pytest.raises(MXNetError):
        mx.nd.onehot_encode(mx.nd.array([1, 2]), mx.nd.zeros((3, 4)))


def test_choose_element_0index_is_pick():
    data, idx = rs.uniform(-1, 1, (3, 4)), np.array([1.0, 3, 0])
    check(Case("choose_element_0index", lambda d, i: d[np.arange(3), i.astype(int)],
               inputs=[data, idx], grad_inputs=[0]))

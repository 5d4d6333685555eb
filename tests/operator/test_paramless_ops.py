"""Operators without parameters accept and ignore extra keywords, as MXNet 1.9.1's
(which have no parameter parser): GluonCV calls ``F.zeros_like(x, dtype=...)``.
Operators with parameters still reject unknown ones."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError


def test_zeros_like_ignores_dtype():
    x = mx.nd.ones((2, 3))
    out = mx.nd.zeros_like(x, dtype="int32")
    assert out.dtype == np.float32 and out.asnumpy().sum() == 0
    s = mx.sym.zeros_like(mx.sym.var("a"), dtype="int32")
    assert '"dtype": "int32"' in s.tojson()                # kept as an attribute
    back = mx.sym.load_json(s.tojson())
    assert back.eval(a=x)[0].asnumpy().tolist() == [[0, 0, 0], [0, 0, 0]]


def test_parameterised_ops_reject_unknown():
    with pytest.raises(MXNetError):
        mx.nd.sum(mx.nd.ones(2), foo=1)

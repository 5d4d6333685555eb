"""Operators of operator/ops/array_core.py not covered elsewhere."""
import numpy as np
import pytest

import mxnet as mx
import opcheck
from opcheck import Case

CASES = [
    # lhs passes through; rhs only ties shapes, so its (numeric) gradient is zero.
    Case("_identity_with_attr_like_rhs", lambda lhs, rhs: lhs, [[(3, 4), (3, 4)]]),
]


@pytest.mark.parametrize("case, shapes, dtype, ctx", opcheck.params(CASES))
def test_ops(case, shapes, dtype, ctx):
    opcheck.check(case, shapes, dtype, ctx)


def test_identity_with_attr_like_rhs_ties_shapes_both_ways():
    lhs, rhs = mx.sym.var("lhs"), mx.sym.var("rhs")
    out = mx.sym._internal._identity_with_attr_like_rhs(lhs, rhs)
    assert out.infer_shape(lhs=(2, 3))[0] == [(2, 3), (2, 3)]
    assert out.infer_shape(rhs=(2, 3))[0] == [(2, 3), (2, 3)]
    with pytest.raises(mx.MXNetError):
        out.infer_shape(lhs=(2, 3), rhs=(3, 3))
    np.testing.assert_array_equal(
        mx.nd._internal._identity_with_attr_like_rhs(mx.nd.ones(2), mx.nd.zeros(2)).asnumpy(),
        np.ones(2))

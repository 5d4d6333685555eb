"""_np_dot (ops/np_dot.py), behind mx.np.dot and mx.sym.np.dot: NumPy's dot for every
rank combination against numpy.dot and numeric gradients; shape errors at the call."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import np as mnp
from mxnet.base import MXNetError
from opcheck import F32_64, Case, cases_test

SHAPES = [((3,), (3,)), ((3, 4), (4, 5)), ((3, 4, 5), (5,)), ((3, 4, 5), (5, 2)),
          ((5,), (5, 2)), ((3, 5, 4), (5, 4, 3)), ((4,), (5, 4, 3))]

CASES = [Case("_np_dot", np.dot, [list(s)], dtypes=F32_64, name=f"np_dot_{i}")
         for i, s in enumerate(SHAPES)]
test_np_dot_op = cases_test(CASES)


@pytest.mark.parametrize("scalar_first", [True, False])
@mx.util.use_np
def test_zero_dim_operand_multiplies_with_gradients(scalar_first):
    a, b = mnp.array(2.5, dtype="float64"), mnp.array(np.arange(6.0).reshape(2, 3))
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        out = mnp.dot(a, b) if scalar_first else mnp.dot(b, a)
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), 2.5 * np.arange(6.0).reshape(2, 3))
    assert a.grad.shape == () and float(a.grad) == pytest.approx(15.0)
    np.testing.assert_allclose(b.grad.asnumpy(), np.full((2, 3), 2.5))


@pytest.mark.parametrize("sa,sb", [((3, 0), (0, 4)), ((0, 3), (3,)), ((2, 0, 3), (3, 0))])
def test_zero_size_operands(sa, sb):
    a, b = np.ones(sa, np.float32), np.ones(sb, np.float32)
    got = mnp.dot(mnp.array(a), mnp.array(b))
    np.testing.assert_array_equal(got.asnumpy(), np.dot(a, b))


@pytest.mark.parametrize("sa,sb", [((4, 5), (2, 3)), ((3, 4, 5), (6,)), ((2,), (1, 2))])
def test_misaligned_shapes_raise_at_the_call(sa, sb):
    with pytest.raises(MXNetError, match="not aligned"):
        mnp.dot(mnp.ones(sa), mnp.ones(sb))


def test_symbolic_np_dot_is_numpy_dot():
    a, b = np.random.rand(3, 5, 4), np.random.rand(5, 4, 3)
    sym = mx.sym.np.dot(mx.sym.var("a"), mx.sym.var("b"))
    out = sym.eval(a=mx.nd.array(a, dtype="float64"), b=mx.nd.array(b, dtype="float64"))[0]
    np.testing.assert_allclose(out.asnumpy(), np.dot(a, b), rtol=1e-12)

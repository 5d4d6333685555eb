"""The NumPy-interface elementwise operators (operator/ops/np_elemwise.py): forward
against NumPy, gradients (arctan2, copysign, nan_to_num) against finite differences."""
import numpy as np
import pytest

import mxnet as mx

import opcheck
from mxnet.base import MXNetError

CASES = [
    opcheck.Case("_npi_arctan2", np.arctan2, [[(3, 4), (3, 4)], [(2, 3), (1, 3)]],
                 sample=opcheck.uniform(0.5, 2.0), dtypes=("float32", "float64")),
    opcheck.Case("_npi_copysign", np.copysign, [[(3, 4), (3, 4)], [(2, 3), (3,)]],
                 sample=opcheck.away_from([0.0]), dtypes=("float32", "float64"),
                 grad_inputs=[0]),
    opcheck.Case("_npi_nan_to_num", np.nan_to_num, [[(3, 4)]],
                 dtypes=("float32", "float64")),
]


@pytest.mark.parametrize("case, shapes, dtype, ctx", opcheck.params(CASES))
def test_np_elemwise_ops(case, shapes, dtype, ctx):
    opcheck.check(case, shapes, dtype, ctx)


@pytest.mark.parametrize("name", ["_npi_lcm", "_npi_bitwise_and", "_npi_bitwise_or",
                                  "_npi_bitwise_xor"])
def test_integer_binary_ops(name):
    rng = np.random.RandomState(0)
    a, b = rng.randint(1, 50, (3, 4)), rng.randint(1, 50, (4,))
    got = getattr(mx.nd._internal, name)(mx.nd.array(a, dtype="int32"),
                                         mx.nd.array(b, dtype="int32"))
    np.testing.assert_array_equal(got.asnumpy(), getattr(np, name[5:])(a, b))


def test_around_rounds_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, 6.35, 72.54], dtype=np.float32)
    got = mx.nd._internal._npi_around(mx.nd.array(x), decimals=1)
    np.testing.assert_array_equal(got.asnumpy(), np.around(x, 1))
    got = mx.nd._internal._npi_around(mx.nd.array(x))
    np.testing.assert_array_equal(got.asnumpy(), np.around(x))


def test_bitwise_not_and_nan_to_num_replacements():
    a = np.array([0, 5, -3], dtype=np.int32)
    np.testing.assert_array_equal(
        mx.nd._internal._npi_bitwise_not(mx.nd.array(a, dtype="int32")).asnumpy(), ~a)
    x = np.array([np.nan, np.inf, -np.inf, 2.0], dtype=np.float32)
    got = mx.nd._internal._npi_nan_to_num(mx.nd.array(x), nan=1.0, posinf=9.0, neginf=-9.0)
    np.testing.assert_array_equal(got.asnumpy(), [1.0, 9.0, -9.0, 2.0])
    got = mx.nd._internal._npi_nan_to_num(mx.nd.array(x))
    np.testing.assert_array_equal(got.asnumpy(), np.nan_to_num(x))


@pytest.mark.parametrize("subscripts, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("...ij,jk->...ik", [(2, 2, 3), (3, 2)]),
    ("ij,ij->i", [(2, 3), (2, 3)]), ("ij,j", [(2, 3), (3,)]), ("ijk->kj", [(2, 3, 4)]),
    ("i,j->ij", [(3,), (2,)]), ("ij,jk->k", [(2, 3), (3, 4)]),
    # repeated subscripts read a diagonal: its gradient lands on that diagonal
    ("ii->i", [(3, 3)]), ("ii,i->i", [(3, 3), (3,)]), ("iij->j", [(3, 3, 2)]),
    ("ij,jj->i", [(2, 3), (3, 3)])])
def test_einsum_forward_and_gradients(subscripts, shapes):
    rng = np.random.RandomState(0)
    inputs = [rng.uniform(-1, 1, s) for s in shapes]
    assert mx.nd._internal._npi_einsum is mx.nd.op._npi_einsum
    opcheck.check(opcheck.Case("op._npi_einsum", lambda *xs: np.einsum(subscripts, *xs),
                               kwargs={"subscripts": subscripts, "num_args": len(shapes)},
                               ref_kwargs=False, inputs=inputs))


@pytest.mark.parametrize("shapes, a_axes, b_axes", [
    ([(2, 3), (3, 4)], (1,), (0,)), ([(2, 3, 4), (4, 3, 5)], (1, 2), (1, 0)),
    ([(2, 3), (4, 3)], (-1,), (-1,)), ([(3,), (3, 2)], (0,), (0,)),
    ([(2, 3), (5,)], (), ()), ([(4, 2, 3), (3, 2)], (2, 1), (0, 1))])
def test_tensordot_forward_and_gradients(shapes, a_axes, b_axes):
    opcheck.check(opcheck.Case("op._npi_tensordot",
                               lambda a, b: np.tensordot(a, b, axes=(list(a_axes),
                                                                     list(b_axes))),
                               shapes=[shapes], kwargs={"a_axes": a_axes, "b_axes": b_axes},
                               ref_kwargs=False))


def test_tensordot_bad_axes():
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((3, 4))
    with pytest.raises(MXNetError):
        mx.nd.op._npi_tensordot(a, b, a_axes=(1,), b_axes=(1,)).wait_to_read()
    with pytest.raises(MXNetError):
        mx.nd.op._npi_tensordot(a, b, a_axes=(2,), b_axes=(0,)).wait_to_read()
    with pytest.raises(MXNetError):
        mx.nd.op._npi_tensordot(a, b, a_axes=(0, 1), b_axes=(0,)).wait_to_read()


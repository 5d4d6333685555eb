"""_npi_pad (ops/np_pad.py), behind mx.np.pad: every mode against NumPy's pad, the
constant mode's gradient against numeric gradients."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import np as mnp
from mxnet.base import MXNetError
from opcheck import Case, cases_test

WIDTHS = ((1, 2), (0, 3), (2, 0))

CASES = [
    Case("_npi_pad", lambda x: np.pad(x, WIDTHS), [[(2, 3, 4)]],
         kwargs={"pad_width": WIDTHS, "mode": "constant"}, ref_kwargs=False,
         name="np_pad_constant"),
    Case("_npi_pad", lambda x: np.pad(x, ((2, 1),), constant_values=1.5), [[(3,)]],
         kwargs={"pad_width": ((2, 1),), "constant_value": 1.5}, ref_kwargs=False,
         name="np_pad_broadcast_width"),
]
test_np_pad_constant = cases_test(CASES)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "maximum",
                                  "minimum"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_modes_match_numpy(mode, dtype):
    x = np.random.RandomState(0).uniform(0, 50, (2, 3, 4)).astype(dtype)
    got = mnp.pad(mnp.array(x, dtype=dtype), WIDTHS, mode=mode)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.asnumpy(), np.pad(x, WIDTHS, mode=mode))


def test_constant_gradient_in_np_mode_with_grad_req_add():
    x = mnp.array(np.random.RandomState(1).uniform(-1, 1, (2, 3)))
    x.attach_grad("add")
    x.grad[:] = 1.0
    head = np.random.RandomState(2).uniform(-1, 1, (5, 4))
    with mx.autograd.record():
        y = mnp.pad(x, ((1, 2), (0, 1)))
    y.backward(mnp.array(head))
    np.testing.assert_allclose(x.grad.asnumpy(), 1.0 + head[1:3, 0:3], rtol=1e-6)


def test_other_modes_have_no_gradient_as_in_mxnet():
    x = mnp.ones((2, 2))
    x.attach_grad()
    with mx.autograd.record():
        y = mnp.pad(x, ((1, 1), (1, 1)), mode="edge")
    with pytest.raises(MXNetError, match="edge"):
        y.backward()
        x.grad.asnumpy()


@pytest.mark.parametrize("call,err", [
    (lambda: mnp.pad(mnp.ones((2,)), [1, 1]), TypeError),            # a list, not a tuple
    (lambda: mnp.pad(mnp.ones((2,)), ((1, 1),), mode="wrap"), ValueError),
    (lambda: mnp.pad(mnp.ones((2,)), ((1, 1),), reflect_type="odd"), ValueError),
    (lambda: mnp.pad(mnp.ones((2, 2)), ((1, 1), (1, 1), (1, 1))), MXNetError),
    (lambda: mnp.pad(mnp.ones((2,)), ((-1, 1),)), MXNetError),
])
def test_bad_arguments(call, err):
    with pytest.raises(err):
        call()

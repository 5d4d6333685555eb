"""amp_cast and amp_multicast: dtypes, values and gradients cast back."""
import numpy as np
import pytest

import mxnet as mx
from opcheck import Case, check


def test_amp_cast_float_types():
    x = np.array([1.5, -2.25, 3.0])
    check(Case("amp_cast", lambda a: a.astype(np.float16), kwargs={"dtype": "float16"},
               ref_kwargs=False, inputs=[x], out_dtype=lambda dt: np.float16, grad=False))
    check(Case("amp_cast", lambda a: a.astype(np.float64), kwargs={"dtype": "float64"},
               ref_kwargs=False, inputs=[x], out_dtype=lambda dt: np.float64))


def test_amp_cast_leaves_integers():
    out = mx.nd.amp_cast(mx.nd.array([1, 2], dtype="int32"), dtype="float16")
    assert out.dtype == np.int32 and out.asnumpy().tolist() == [1, 2]


def test_amp_cast_gradient_has_input_dtype():
    x = mx.nd.array([1.0, 2.0], dtype="float32")
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.amp_cast(x, dtype="float16")
    y.backward(mx.nd.array([3.0, 4.0], dtype="float16"))
    assert x.grad.dtype == np.float32 and x.grad.asnumpy().tolist() == [3.0, 4.0]


def test_amp_cast_bfloat16_rounds_to_nearest_even():
    # 1 + 2^-8 lies halfway between two bfloat16 values: it rounds to the even one, 1.0;
    # 1 + 3 * 2^-8 rounds up to 1 + 2^-6; ints pass unchanged
    x = mx.nd.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5], dtype="float32")
    y = mx.nd.amp_cast(x, dtype="bfloat16")
    assert y.dtype == mx.base.bfloat16
    np.testing.assert_array_equal(y.asnumpy().astype(np.float32), [1.0, 1 + 2 ** -6, -2.5])
    i = mx.nd.amp_cast(mx.nd.array([3], dtype="int32"), dtype="bfloat16")
    assert i.dtype == np.int32


@pytest.mark.parametrize("narrow,want", [(False, np.float32), (True, np.float16)])
def test_amp_multicast(narrow, want):
    a = mx.nd.array([1.5], dtype="float32")
    b = mx.nd.array([2.0], dtype="float16")
    c = mx.nd.array([3], dtype="int32")
    outs = mx.nd.amp_multicast(a, b, c, num_outputs=3, cast_narrow=narrow)
    assert [o.dtype for o in outs] == [want, want, np.int32]
    s = mx.sym.amp_multicast(mx.sym.var("a"), mx.sym.var("b"), num_outputs=2,
                             cast_narrow=narrow)
    souts = s.eval(a=a, b=b)
    assert [o.dtype for o in souts] == [want, want]


def test_amp_multicast_gradients_cast_back():
    a = mx.nd.array([1.5], dtype="float32")
    b = mx.nd.array([2.0], dtype="float16")
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        x, y = mx.nd.amp_multicast(a, b, num_outputs=2)
        z = x * y
    z.backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float16
    assert a.grad.asscalar() == 2.0 and b.grad.asscalar() == 1.5

"""The imperative dispatcher (ndarray/dispatch.py): its per-call caches answer as the
operator itself does; a given out= of another shape is refused."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.ndarray import dispatch
from mxnet.test_utils import assert_almost_equal
from mxnet.operator.registry import get_op


def test_call_meta_cache_tells_params_apart():
    op = get_op("FullyConnected")
    with_bias = op.parse({"num_hidden": 4})
    no_bias = op.parse({"num_hidden": 4, "no_bias": True})
    for _ in range(3):          # cached answers equal the operator's own
        assert dispatch._call_meta(op, with_bias) == (3, 1)
        assert dispatch._call_meta(op, no_bias) == (2, 1)
    split = get_op("SliceChannel")
    for n in (2, 3):
        p = split.parse({"num_outputs": n})
        assert dispatch._call_meta(split, p) == (1, n)
        assert dispatch._call_meta(split, p) == (1, n)


@pytest.mark.parametrize("call", [
    lambda x, o: mx.nd.relu(x, out=o),                                       # body result
    lambda x, o: mx.nd.LayerNorm(x, mx.nd.ones(4), mx.nd.zeros(4), out=o),   # writes out
    lambda x, o: mx.nd.batch_dot(x, x, transpose_b=True, out=o),
])
def test_out_of_another_shape_is_an_mxnet_error(call):
    """An out= array whose shape the result neither has nor broadcasts into is refused
    with an MXNetError naming both shapes, and later calls still work."""
    x = mx.nd.array(np.random.RandomState(0).rand(2, 3, 4))
    with pytest.raises(mx.base.MXNetError, match=r"shape \(2, 3, 5\)"):
        call(x, mx.nd.zeros((2, 3, 5))).wait_to_read()
    assert_almost_equal(mx.nd.relu(x).asnumpy(), np.maximum(x.asnumpy(), 0))


@pytest.mark.parametrize("call,expected", [
    (lambda x, o: mx.nd.relu(x, out=o), "float32"),
    (lambda x, o: mx.nd.elemwise_add(x, x, out=o), "float32"),
    (lambda x, o: mx.nd.sum(x, axis=2, out=o), "float32"),
    (lambda x, o: mx.nd.argmax(x, axis=2, out=o), "float32"),   # MXNet's argmax: float
    (lambda x, o: mx.nd.Cast(x, dtype="float64", out=o), "float64"),
    (lambda x, o: mx.nd.zeros_like(x, out=o), "float32"),
])
def test_out_of_another_dtype_is_an_mxnet_error(call, expected):
    """As in MXNet 1.9.1, whose type inference refuses it ("Incompatible attr ... at
    0-th output: expected float32, got float16"), an out= of another dtype than the
    call's output is an MXNetError, not a silent cast; the array is left untouched."""
    x = mx.nd.array(np.random.RandomState(0).rand(2, 3, 4))
    shape = call(x, None).shape
    o = mx.nd.full(shape, 7, dtype="int32")
    with pytest.raises(mx.base.MXNetError,
                       match=f"out= has dtype int32.*expected {expected}, got int32"):
        call(x, o).wait_to_read()
    assert (o.asnumpy() == 7).all()
    good = mx.nd.zeros(shape, dtype=expected)
    call(x, good)
    assert_almost_equal(good.asnumpy(), call(x, None).asnumpy())


def test_out_decides_an_open_output_dtype():
    """Where the call leaves its output type open (a sampler without dtype), the given
    out= decides it, as MXNet's inference does; copyto casts into its destination."""
    o16 = mx.nd.zeros((500,), dtype="float16")
    mx.nd.random.uniform(2, 3, shape=(500,), out=o16)
    v = o16.asnumpy()
    assert v.dtype == np.float16 and v.min() >= 2 and v.max() <= 3 and v.std() > 0.1
    o64 = mx.nd.zeros((50,), dtype="int64")
    mx.nd.random.randint(0, 3, shape=(50,), out=o64)
    assert o64.dtype == np.int64 and set(np.unique(o64.asnumpy())) <= {0, 1, 2}
    x = mx.nd.array([1.5, -2.25])
    x.copyto(o16[:2])
    assert_almost_equal(o16[:2].asnumpy(), np.array([1.5, -2.25], np.float16))

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

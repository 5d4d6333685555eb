"""Shape inference under NumPy shape semantics (mx.util.np_shape / use_np_shape): 0 is
a real zero-size dimension and -1 an unknown one, while legacy mode reads 0 as
unknown. References: NumPy's own shapes and values (np.indices)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.executor.partial_shape import merge_dims, unknown_marker


def _index_array_reference(shape):
    return np.stack(np.indices(shape), axis=-1) if shape else np.zeros((0,))


@pytest.mark.parametrize("shape", [(), (0, 0, 0), (2, 0), (2, 3)])
def test_zero_size_arrays_bind_under_np_shape(shape):
    data = mx.sym.Variable("data")
    sym = mx.sym.contrib.index_array(data)
    with mx.util.np_shape(True):
        ex = sym.bind(mx.cpu(), args={"data": mx.nd.ones(shape)},
                      args_grad={"data": mx.nd.ones(shape)})
        ex.forward(is_train=True)
        want = _index_array_reference(shape)
        assert ex.outputs[0].shape == want.shape
        np.testing.assert_array_equal(ex.outputs[0].asnumpy(), want)
        ex.backward(mx.nd.ones(want.shape))
        np.testing.assert_array_equal(ex.grad_dict["data"].asnumpy(), np.zeros(shape))


def test_zero_is_a_size_under_np_shape_and_unknown_in_legacy_mode():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    s = mx.sym.elemwise_add(a, b)
    with mx.util.np_shape(True):
        assert s.infer_shape(a=(0, 3)) == ([(0, 3), (0, 3)], [(0, 3)], [])
        assert s.infer_shape_partial(a=(-1, 3)) == ([(-1, 3), (-1, 3)], [(-1, 3)], [])
        with pytest.raises(MXNetError):
            s.infer_shape(a=(0, 3), b=(2, 3))
    assert s.infer_shape_partial(a=(0, 3)) == ([(0, 3), (0, 3)], [(0, 3)], [])
    assert s.infer_shape(a=(0, 3), b=(2, 3)) == ([(2, 3), (2, 3)], [(2, 3)], [])


def test_merge_dims_reads_the_marker_of_the_pass():
    with unknown_marker(-1):
        assert merge_dims((0, -1), (-1, 5)) == (0, 5)
        with pytest.raises(ValueError):
            merge_dims((0, 4), (2, 4))
    assert merge_dims((0, 4), (2, 0)) == (2, 4)


def test_gluon_deferred_init_under_np_shape():
    from mxnet.gluon import nn
    with mx.util.np_shape(True), mx.util.np_array(True):
        net = nn.Dense(5)
        net.initialize()
        net.hybridize()
        out = net(mx.np.ones((2, 3)))
        assert out.shape == (2, 5)
        assert net.weight.shape == (5, 3)


def test_a_legacy_graph_loaded_under_np_shape_reads_its_zeros_as_unknown():
    data = mx.sym.var("data")
    weight = mx.sym.var("weight", shape=(8, 0))       # legacy: input size unknown
    text = mx.sym.FullyConnected(data, weight, num_hidden=8).tojson()
    with mx.util.np_shape(True):
        net = mx.sym.load_json(text)
        args, outs, _ = net.infer_shape(data=(2, 5))
        assert args == [(2, 5), (8, 5), (8,)] and outs == [(2, 8)]
        saved = net.tojson()                  # now marked as np_shape: -1 stays unknown
        assert mx.sym.load_json(saved).infer_shape(data=(2, 5))[0][1] == (8, 5)
    args, _, _ = mx.sym.load_json(text).infer_shape(data=(2, 5))
    assert args[1] == (8, 5)

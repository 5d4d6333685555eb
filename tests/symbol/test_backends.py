"""Subgraph backends: MXNet 1.9.1's oneDNN backend names leave a graph as it is (the
executor applies oneDNN itself), an unknown one warns and leaves it unchanged for
optimize_for (MXNet logs and goes on) and is an error for get_backend_symbol, and the
C-API test backends say why they cannot run."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import gluon
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal


def _net():
    x = mx.sym.var("x")
    c = mx.sym.Convolution(x, num_filter=4, kernel=(3, 3), name="c")
    return mx.sym.Activation(mx.sym.BatchNorm(c, name="bn"), act_type="relu")


def _run(sym, values):
    ex = sym.simple_bind(mx.cpu(), grad_req="null", x=values["x"].shape)
    for name, arr in list(ex.arg_dict.items()) + list(ex.aux_dict.items()):
        arr[:] = values[name]
    return ex.forward()[0].asnumpy()


@pytest.mark.parametrize("backend", ["MKLDNN", "MKLDNN_QUANTIZE"])
def test_onednn_backends_keep_the_function(backend):
    sym = _net()
    part = sym.optimize_for(backend)
    assert part is not sym
    assert part.list_arguments() == sym.list_arguments()
    assert part.list_auxiliary_states() == sym.list_auxiliary_states()
    rs = np.random.RandomState(0)
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(x=(2, 3, 8, 8))[0]))
    shapes.update(zip(sym.list_auxiliary_states(), sym.infer_shape(x=(2, 3, 8, 8))[2]))
    values = {k: rs.uniform(0.5, 1.5, s).astype(np.float32) for k, s in shapes.items()}
    assert_almost_equal(_run(part, values), _run(sym, values))
    assert sym.get_backend_symbol(backend).tojson() == sym.tojson()


def test_unknown_and_c_api_backends():
    sym = _net()
    with pytest.warns(UserWarning, match="cannot be found"):
        assert sym.optimize_for("foo").tojson() == sym.tojson()
    with pytest.raises(MXNetError, match="not found"):
        sym.get_backend_symbol("foo")
    with pytest.raises(MXNetError, match="C API"):
        sym.optimize_for("default")


def test_gluon_hybridize_and_optimize_for_with_a_backend():
    x = mx.nd.array(np.random.RandomState(1).randn(2, 5))
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(4, activation="relu"), gluon.nn.Dense(3))
    net.initialize()
    want = net(x).asnumpy()
    net.hybridize(backend="MKLDNN")
    assert_almost_equal(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert_almost_equal(net.optimize_for(x, backend="MKLDNN").asnumpy(), want,
                        rtol=1e-5, atol=1e-6)
    with pytest.raises(MXNetError, match="C API"):
        net.hybridize(backend="default_v2")

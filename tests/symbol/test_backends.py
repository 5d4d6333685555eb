"""Subgraph backends: MXNet 1.9.1's oneDNN backend names leave a graph as it is (the
executor applies oneDNN itself), an unknown one warns and leaves it unchanged for
optimize_for (MXNet logs and goes on) and is an error for get_backend_symbol, and the
C-API backends default/default_v2 group the operators named through the emulated
_LIB.MXSetSubgraphPropertyOpNames[V2] into _CachedOp nodes computing what the nodes
did (against the unpartitioned graph, forward and backward)."""
import ctypes
import json

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
    with pytest.raises(MXNetError, match="none are set"):
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
    with pytest.raises(MXNetError, match="none are set"):
        net.hybridize(backend="default_v2")


def _set_names(backend, names, v2=True):
    from mxnet.base import _LIB, c_str, c_str_array, check_call, mx_uint
    fn = _LIB.MXSetSubgraphPropertyOpNamesV2 if v2 else _LIB.MXSetSubgraphPropertyOpNames
    check_call(fn(c_str(backend), mx_uint(len(names)), c_str_array(names)))


def _remove_names(backend, v2=True):
    from mxnet.base import _LIB, c_str, check_call
    fn = _LIB.MXRemoveSubgraphPropertyOpNamesV2 if v2 else _LIB.MXRemoveSubgraphPropertyOpNames
    check_call(fn(c_str(backend)))


def _cycle_net():
    # exp feeds sin (grouped) and cos (not): grouping exp, sin and the add would make
    # the group feed itself through cos, so the add cannot join exp's group
    x = mx.sym.var("x")
    e = mx.sym.exp(x)
    return mx.sym.BatchNorm(mx.sym.sin(e) + mx.sym.cos(e), name="bn") * 2


def _run_train(sym, values):
    args = {k: mx.nd.array(v) for k, v in values.items() if k in sym.list_arguments()}
    aux = {k: mx.nd.ones(v.shape) for k, v in values.items()
           if k in sym.list_auxiliary_states()}
    grads = {k: mx.nd.zeros(a.shape) for k, a in args.items()}
    ex = sym.bind(mx.cpu(), args=args, args_grad=grads, aux_states=aux)
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward([mx.nd.ones(out.shape)])
    return out, {k: g.asnumpy() for k, g in grads.items()}, \
        {k: a.asnumpy() for k, a in aux.items()}


@pytest.mark.parametrize("backend", ["default", "default_v2"])
def test_default_backends_group_named_operators(backend):
    sym = _cycle_net()
    _set_names(backend, ["exp", "sin", "elemwise_add", "BatchNorm"])
    try:
        part = sym.optimize_for(backend)
    finally:
        _remove_names(backend)
    ops = [n["op"] for n in json.loads(part.tojson())["nodes"]]
    assert ops.count("_CachedOp") == 2 and "cos" in ops and "exp" not in ops
    assert part.list_inputs() == sym.list_inputs()
    assert part.list_auxiliary_states() == sym.list_auxiliary_states()
    rs = np.random.RandomState(3)
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(x=(2, 3))[0]))
    shapes.update(zip(sym.list_auxiliary_states(), sym.infer_shape(x=(2, 3))[2]))
    values = {k: rs.uniform(-1, 1, s).astype(np.float32) for k, s in shapes.items()}
    (o1, g1, a1), (o2, g2, a2) = _run_train(sym, values), _run_train(part, values)
    assert_almost_equal(o1, o2)
    for k in g1:
        assert_almost_equal(g1[k], g2[k])
    for k in a1:
        assert_almost_equal(a1[k], a2[k])
    assert mx.sym.load_json(part.tojson()).tojson() == part.tojson()


def test_build_by_op_names_and_the_bind_environment(monkeypatch):
    from mxnet.base import _LIB, SymbolHandle, c_str, c_str_array, check_call, mx_uint
    sym = _cycle_net()
    out = SymbolHandle()
    check_call(_LIB.MXBuildSubgraphByOpNames(sym.handle, c_str("default"), mx_uint(1),
                                             c_str_array(["sin"]), ctypes.byref(out)))
    part = mx.sym.Symbol(out)
    assert [n["op"] for n in json.loads(part.tojson())["nodes"]].count("_CachedOp") == 1
    # MXNET_SUBGRAPH_BACKEND partitions what bind / simple_bind get (the first API's names)
    _set_names("default", ["cos"], v2=False)
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "default")
    try:
        ex = sym.simple_bind(mx.cpu(), x=(2, 3), grad_req="null")
    finally:
        _remove_names("default", v2=False)
    assert any(s.op.name == "_CachedOp" for s in ex._fsteps)
    with pytest.raises(MXNetError, match="not a symbol handle"):
        mx.sym.Symbol(ctypes.c_void_p(12345))

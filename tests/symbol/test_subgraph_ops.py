"""Nodes that run the subgraph they hold: MXNet 1.9.1's fused oneDNN nodes in a symbol
it exported after optimize_for('MKLDNN') (against MXNet's output for that file), and
_CachedOp built from a symbol's JSON (against the symbol itself, forward and
backward)."""
import json

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal

from common import fixture_path


def _fused():
    with open(fixture_path("subgraph", "onednn_fused-symbol.json")) as f:
        text = f.read()
    return text, np.load(fixture_path("subgraph", "onednn_fused.npz"))


def test_mxnet_onednn_fused_symbol_runs_as_mxnet_ran_it():
    text, data = _fused()
    sym = mx.sym.load_json(text)
    ops = [n["op"] for n in json.loads(sym.tojson())["nodes"]]
    assert ops.count("_sg_mkldnn_conv") == 2 and ops.count("_sg_mkldnn_fully_connected") == 1
    args = {k[4:]: mx.nd.array(data[k]) for k in data.files if k.startswith("arg_")}
    aux = {k[4:]: mx.nd.array(data[k]) for k in data.files if k.startswith("aux_")}
    assert sorted(sym.list_arguments()) == sorted(args)
    assert sorted(sym.list_auxiliary_states()) == sorted(aux)
    ex = sym.bind(mx.cpu(), args=args, aux_states=aux, grad_req="null")
    assert_almost_equal(ex.forward()[0].asnumpy(), data["out"], rtol=1e-5, atol=1e-5)
    # shapes come out of the subgraphs too
    _, outs, aux_shapes = sym.infer_shape(data=(2, 3, 8, 8))
    assert outs == [(2, 5)] and aux_shapes == [(4,), (4,)]


def test_quantized_onednn_node_says_not_implemented():
    text, _ = _fused()
    doc = json.loads(text)
    node = next(n for n in doc["nodes"] if n["op"] == "_sg_mkldnn_conv")
    node.setdefault("attrs", {})["quantized"] = "true"
    with pytest.raises(NotImplementedError, match="quantized"):
        mx.sym.load_json(json.dumps(doc))


def _batchnorm_net():
    data = mx.sym.var("data")
    return mx.sym.BatchNorm(mx.sym.FullyConnected(data, num_hidden=6, name="fc"),
                            fix_gamma=False, name="bn")


def _two_batchnorms():
    # the second BatchNorm's arguments come after the first one's moving statistics:
    # the _CachedOp node's auxiliary states sit among its inputs
    data = mx.sym.var("data")
    one = mx.sym.BatchNorm(mx.sym.FullyConnected(data, num_hidden=6, name="fc"),
                           fix_gamma=False, name="bn1")
    return mx.sym.broadcast_add(mx.sym.BatchNorm(one * 2, fix_gamma=False, name="bn2"),
                                data.sum())


@pytest.mark.parametrize("make", [_batchnorm_net, _two_batchnorms])
def test_cached_op_node_matches_its_graph(make):
    orig = make()
    inputs = [mx.sym.var(n) for n in orig.list_inputs()]
    sub = mx.sym._internal._CachedOp(*inputs, subgraph=orig.tojson())
    assert sub.list_inputs() == orig.list_inputs()
    assert sub.list_arguments() == orig.list_arguments()
    assert sub.list_auxiliary_states() == orig.list_auxiliary_states()
    assert mx.sym.load_json(sub.tojson()).list_auxiliary_states() == \
        orig.list_auxiliary_states()
    rs = np.random.RandomState(0)
    arg_shapes, _, aux_shapes = orig.infer_shape(data=(4, 3))
    assert sub.infer_shape(data=(4, 3)) == (arg_shapes, orig.infer_shape(data=(4, 3))[1],
                                            aux_shapes)
    values = {n: rs.uniform(0.5, 1.5, s) for n, s in zip(orig.list_arguments(), arg_shapes)}
    results = []
    for sym in (orig, sub):
        args = {n: mx.nd.array(v) for n, v in values.items()}
        aux = {n: mx.nd.ones(s) for n, s in zip(orig.list_auxiliary_states(), aux_shapes)}
        grads = {n: mx.nd.zeros(s) for n, s in zip(orig.list_arguments(), arg_shapes)}
        ex = sym.bind(mx.cpu(), args=args, args_grad=grads, aux_states=aux)
        out = ex.forward(is_train=True)[0].asnumpy()
        ex.backward([mx.nd.array(np.linspace(-1, 1, out.size).reshape(out.shape))])
        results.append((out, {n: g.asnumpy() for n, g in grads.items()},
                        {n: a.asnumpy() for n, a in aux.items()}))
    (o1, g1, a1), (o2, g2, a2) = results
    assert_almost_equal(o1, o2, rtol=1e-5, atol=1e-6)
    for n in g1:
        assert_almost_equal(g1[n], g2[n], rtol=1e-4, atol=1e-5)
    for n in a1:            # the moving statistics were updated alike
        assert_almost_equal(a1[n], a2[n], rtol=1e-5, atol=1e-6)
        assert not np.allclose(a1[n], 1)


def test_cached_op_called_imperatively():
    orig = _two_batchnorms()
    names = orig.list_inputs()
    arg_shapes, _, aux_shapes = orig.infer_shape(data=(4, 3))
    shapes = dict(zip(orig.list_arguments(), arg_shapes))
    shapes.update(zip(orig.list_auxiliary_states(), aux_shapes))
    rs = np.random.RandomState(1)
    arrays = [mx.nd.array(rs.uniform(0.5, 1.5, shapes[n])) for n in names]
    got = mx.nd._internal._CachedOp(*arrays, subgraph=orig.tojson())
    want = orig.bind(mx.cpu(), args=dict(zip(names, arrays)), grad_req="null",
                     aux_states={n: a for n, a in zip(names, arrays)
                                 if n in orig.list_auxiliary_states()}).forward()[0]
    assert_almost_equal(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)

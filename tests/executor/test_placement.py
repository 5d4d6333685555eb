"""Device placement by ctx_group (bind/simple_bind's group2ctx, executor/placement.py)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.executor.graph import Graph
from mxnet.executor.placement import place_nodes


@pytest.fixture(autouse=True)
def _own_names():
    with mx.name.NameManager():
        yield


def _two_stage():
    with mx.AttrScope(ctx_group="stage1"):
        data = mx.sym.var("data")
        h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=4, name="fc1"),
                              act_type="relu")
    with mx.AttrScope(ctx_group="stage2"):
        out = mx.sym.BatchNorm(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="bn")
    return out


def test_simple_bind_places_arrays_by_group():
    net = _two_stage()
    g2c = {"stage1": mx.cpu(1), "stage2": mx.cpu(2)}
    ex = net.simple_bind(mx.cpu(0), group2ctx=g2c, data=(2, 5))
    where = {n: a.context for n, a in zip(net.list_arguments(), ex.arg_arrays)}
    assert where == {"data": mx.cpu(1), "fc1_weight": mx.cpu(1), "fc1_bias": mx.cpu(1),
                     "fc2_weight": mx.cpu(2), "fc2_bias": mx.cpu(2), "bn_gamma": mx.cpu(2),
                     "bn_beta": mx.cpu(2)}
    assert all(g.context == where[n] for n, g in zip(net.list_arguments(), ex.grad_arrays))
    assert [a.context for a in ex.aux_arrays] == [mx.cpu(2)] * 2
    assert ex.outputs[0].context == mx.cpu(2)
    # the same numbers as an executor on one context
    plain = net.simple_bind(mx.cpu(0), data=(2, 5))
    rng = np.random.RandomState(1)
    for name in net.list_arguments():
        v = rng.uniform(-1, 1, ex.arg_dict[name].shape)
        ex.arg_dict[name][:] = v
        plain.arg_dict[name][:] = v
    for e in (ex, plain):
        e.forward(is_train=True)
        e.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), plain.outputs[0].asnumpy(), rtol=1e-6)
    for a, b in zip(ex.grad_arrays, plain.grad_arrays):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-7)


def test_ungrouped_nodes_follow_inputs_then_readers():
    a, b = mx.sym.var("a"), mx.sym.var("b")      # no group: placed by their reader
    with mx.AttrScope(ctx_group="dev1"):
        s = (a + b) * 3
    out = s + mx.sym.var("c")                     # no group: follows its first input
    g = Graph(out)
    placed = dict(zip([n.name for n in g.nodes],
                      place_nodes(g, mx.cpu(0), {"dev1": mx.cpu(1)})))
    assert placed["a"] == placed["b"] == mx.cpu(1)
    assert placed[out.name] == mx.cpu(1) and placed["c"] == mx.cpu(1)
    assert set(place_nodes(g, mx.cpu(0), None)) == {mx.cpu(0)}


def test_bind_checks_devices():
    with mx.AttrScope(ctx_group="dev1"):
        x = mx.sym.var("x") * 2
    arrays = {"x": mx.nd.ones((2,), ctx=mx.cpu(1))}
    ex = x.bind(mx.cpu(0), args=arrays, group2ctx={"dev1": mx.cpu(1)})
    assert ex.forward()[0].asnumpy().tolist() == [2, 2]
    with pytest.raises(mx.MXNetError):          # without group2ctx: must be on ctx
        x.bind(mx.cpu(0), args=arrays)


@pytest.mark.skipif(mx.context.num_gpus() > 0, reason="needs a machine without a GPU")
def test_a_group_on_a_missing_gpu_is_refused_and_an_unused_one_ignored():
    """(Placements over a CPU and GPUs are tested in test_placed.py.)"""
    with mx.AttrScope(ctx_group="dev1"):
        x = mx.sym.var("x") * 2
    with pytest.raises(mx.MXNetError, match="no CUDA GPU"):
        x.simple_bind(mx.cpu(0), group2ctx={"dev1": mx.gpu(0)}, x=(2,))
    y = mx.sym.var("y") * 2                     # no node in group dev1
    ex = y.simple_bind(mx.cpu(0), group2ctx={"dev1": mx.gpu(0)}, y=(2,))
    ex.arg_dict["y"][:] = 1
    assert ex.forward()[0].asnumpy().tolist() == [2, 2]

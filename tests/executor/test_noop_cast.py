"""The no-op cast pass (executor/noop_cast.py): after type inference, readers of an
amp_cast / amp_multicast output whose dtype is its input's read the input itself;
casts that change the type, and graph outputs, stay. Outputs and gradients equal the
same graph bound without casts (NumPy-free reference: the graph is the identity
there), and an AMP network's hybridized gradients equal its imperative ones."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon


def _ops(ex):
    return [n.op.name for n in ex._graph.nodes if n.op is not None]


def _bind(sym, shapes, dtypes=None):
    rng = np.random.RandomState(0)
    dtypes = dtypes or {}
    args = {k: mx.nd.array(rng.randn(*s), dtype=dtypes.get(k, "float32"))
            for k, s in shapes.items()}
    grads = {k: mx.nd.zeros(s, dtype=dtypes.get(k, "float32")) for k, s in shapes.items()}
    return sym.bind(mx.cpu(), args, args_grad=grads)


def _run(ex, head_shape):
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones(head_shape)])
    return ([o.asnumpy() for o in ex.outputs],
            {k: g.asnumpy() for k, g in ex.grad_dict.items()})


def test_same_type_casts_are_bypassed_and_change_no_value():
    x, w = mx.sym.var("x"), mx.sym.var("w")
    fc = mx.sym.FullyConnected(mx.sym.amp_cast(x, dtype="float32"),
                               mx.sym.amp_cast(w, dtype="float32"), no_bias=True,
                               num_hidden=3)
    plain = mx.sym.FullyConnected(x, w, no_bias=True, num_hidden=3)
    shapes = {"x": (4, 5), "w": (3, 5)}
    ex, ref = _bind(fc, shapes), _bind(plain, shapes)
    assert "amp_cast" not in _ops(ex)
    assert ex.memory_plan.planned_bytes <= ref.memory_plan.planned_bytes
    (out,), grads = _run(ex, (4, 3))
    (rout,), rgrads = _run(ref, (4, 3))
    np.testing.assert_array_equal(out, rout)
    for k in shapes:
        np.testing.assert_array_equal(grads[k], rgrads[k])


def test_casts_that_change_the_type_and_output_casts_stay():
    x = mx.sym.var("x")
    half = mx.sym.amp_cast(x, dtype="float16")                   # changes the type
    back = mx.sym.amp_cast(mx.sym.relu(half), dtype="float16")   # no-op, but an output
    ex = _bind(mx.sym.Group([back, mx.sym.amp_cast(half, dtype="float32")]),
               {"x": (2, 3)})
    assert _ops(ex).count("amp_cast") == 3
    assert ex.outputs[0].dtype == np.float16 and ex.outputs[1].dtype == np.float32


def test_multicast_keeps_only_the_outputs_that_cast():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    m = mx.sym.amp_multicast(a, b, num_outputs=2)        # a float16, b float32 -> float32
    out = mx.sym.elemwise_add(m[0], m[1]) * 2
    ex = _bind(out, {"a": (2, 2), "b": (2, 2)}, {"a": "float16"})
    g = ex._graph
    cast = [i for i, n in enumerate(g.nodes) if n.op is not None
            and n.op.name == "amp_multicast"]
    assert len(cast) == 1
    add = next(i for i, n in enumerate(g.nodes) if n.op is not None
               and n.op.name == "elemwise_add")
    src = [g.nodes[g.entry_node[e]] for e in g.node_inputs[add]]
    assert src[0].op.name == "amp_multicast" and src[1].op is None   # b read directly
    outs, grads = _run(ex, (2, 2))
    a_val = ex.arg_dict["a"].asnumpy().astype(np.float32)
    np.testing.assert_allclose(outs[0], (a_val + ex.arg_dict["b"].asnumpy()) * 2,
                               rtol=1e-6)
    np.testing.assert_allclose(grads["b"], np.full((2, 2), 2.0))
    assert grads["a"].dtype == np.float16
    np.testing.assert_allclose(grads["a"], np.full((2, 2), 2.0))


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
def test_amp_network_gradients_equal_the_imperative_run(target):
    from mxnet.base import bfloat16
    if target == "bfloat16" and bfloat16 is None:
        pytest.skip("no ml_dtypes")
    from mxnet.contrib import amp
    from mxnet.contrib.amp import amp as amp_impl
    amp_impl._reset()
    amp.init(target_dtype=target)
    try:
        grads = {}
        for hybrid in (False, True):
            mx.random.seed(1)
            net = gluon.nn.HybridSequential()
            net.add(gluon.nn.Conv2D(4, 3, in_channels=2), gluon.nn.BatchNorm(in_channels=4),
                    gluon.nn.Activation("relu"), gluon.nn.Conv2D(3, 3, in_channels=4),
                    gluon.nn.Flatten(), gluon.nn.Dense(5))
            net.initialize(mx.init.Xavier(), ctx=mx.cpu())
            if hybrid:
                net.hybridize(static_alloc=True, static_shape=True)
            x = mx.nd.array(np.random.RandomState(2).randn(3, 2, 8, 8))
            with autograd.record():
                loss = net(x).astype("float32").sum()
            loss.backward()
            grads[hybrid] = [p.grad().asnumpy() for p in net.collect_params().values()
                             if p.grad_req != "null"]
            if hybrid:      # the casts left in the bound graph all change the type
                (entry,) = [e for pool in net._cached_op._pools.values() for e in pool]
                g = entry.ex._graph
                casts = [i for i, n in enumerate(g.nodes)
                         if n.op is not None and n.op.name == "amp_cast"]
                assert casts
                for i in casts:
                    assert g.dtypes[g.entry(i)] != g.dtypes[g.node_inputs[i][0]]
        for a, b in zip(grads[True], grads[False]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    finally:
        amp_impl._reset()


def test_a_cast_read_as_an_auxiliary_state_stays():
    """Bypassing it would make the variable an auxiliary state of the graph instead of
    an argument, and the bound arrays follow the symbol's own lists."""
    bn = mx.sym.BatchNorm(mx.sym.var("data"), mx.sym.var("g"), mx.sym.var("b"),
                          mx.sym.amp_cast(mx.sym.var("mm"), dtype="float32"),
                          mx.sym.var("mv"), name="bn")
    ex = bn.simple_bind(mx.cpu(), data=(2, 3, 4, 4))
    assert _ops(ex) == ["amp_cast", "BatchNorm"]
    assert ex._graph.arg_names == bn.list_arguments()
    ex.forward(is_train=True)
    assert ex.outputs[0].shape == (2, 3, 4, 4)

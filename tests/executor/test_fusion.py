"""The executor's fusion pass: Convolution/FullyConnected + Activation(relu) run as one
oneDNN call where the intermediate is needed by nothing else, with the same outputs and
gradients as the two operators run apart."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.backend import onednn
from mxnet.operator import kernels_onednn as KO

pytestmark = pytest.mark.skipif(not onednn.available(), reason="libdnnl not available")


def _net(extra_head=False):
    data = mx.sym.var("data")
    c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    r = mx.sym.Activation(c, act_type="relu", name="r1")
    f = mx.sym.FullyConnected(r, num_hidden=6, name="fc")
    r2 = mx.sym.relu(f, name="r2")
    t = mx.sym.Activation(mx.sym.FullyConnected(r2, num_hidden=5, name="fc2"),
                          act_type="tanh", name="t")
    out = mx.sym.SoftmaxOutput(t, name="sm")
    return mx.sym.Group([out, c]) if extra_head else out


def _bind(sym, fuse=True):
    ex = sym.simple_bind(mx.cpu(), data=(2, 3, 5, 5), grad_req="write")
    rng = np.random.RandomState(3)
    for name, arr in ex.arg_dict.items():
        arr[:] = rng.randint(0, 5, arr.shape) if name == "sm_label" else rng.randn(*arr.shape)
    if not fuse:
        ex._fsteps = ex._plain_fsteps
    return ex


def _run(ex):
    ex.forward(is_train=True)
    ex.backward()
    return [ex.outputs[0].asnumpy()] + [g.asnumpy() for g in ex.grad_arrays if g is not None]


def test_pairs_fuse_and_match_the_unfused_run(monkeypatch):
    calls = []
    real = {"conv": KO.K.conv_forward, "fc": KO.K.fc_forward}
    monkeypatch.setattr(KO.K, "conv_forward", lambda *a, **k: (
        calls.append(("conv", k.get("relu"))), real["conv"](*a, **k))[1])
    monkeypatch.setattr(KO.K, "fc_forward", lambda *a, **k: (
        calls.append(("fc", k.get("relu"))), real["fc"](*a, **k))[1])
    with KO.forced():
        fused, plain = _bind(_net()), _bind(_net(), fuse=False)
        assert [s.then.node.name for s in fused._fsteps if hasattr(s, "then")] == ["r1", "r2"]
        got = _run(fused)
        assert ("conv", True) in calls and ("fc", True) in calls
        calls.clear()
        want = _run(plain)
        assert ("conv", True) not in calls and ("fc", True) not in calls
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_an_intermediate_read_elsewhere_is_not_fused():
    ex = _bind(_net(extra_head=True))
    assert [s.then.node.name for s in ex._fsteps if hasattr(s, "then")] == ["r2"]


def test_declined_fusion_runs_both_operators():
    # Below oneDNN's break-even the fused kernel declines: the pair runs apart.
    fused, plain = _bind(_net()), _bind(_net(), fuse=False)
    for a, b in zip(_run(fused), _run(plain)):
        np.testing.assert_array_equal(a, b)

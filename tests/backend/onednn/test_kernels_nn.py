"""oneDNN Pooling, BatchNorm, LayerNorm, FullyConnected, softmax, Activation and LRN
adapters against the NumPy operator bodies."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import mxnet as mx  # noqa: E402
from mxnet.backend import onednn  # noqa: E402

pytestmark = pytest.mark.skipif(not onednn.available(), reason="oneDNN (libdnnl) absent")

from mxnet.operator.kernels_onednn import OPS  # noqa: E402
from onednn_helpers import both_backward, both_forward, close, ctx_for, params, rand  # noqa

POOL_CASES = [
    # shape, pool kwargs, expect oneDNN (False: the adapter must decline)
    ((2, 3, 8, 8), dict(kernel=(2, 2), stride=(2, 2)), True),
    ((2, 3, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1)), True),
    ((2, 3, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg"), True),
    ((2, 3, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                        count_include_pad=False), True),
    ((2, 3, 10, 10), dict(kernel=(3, 3), stride=(2, 2), pooling_convention="full"), True),
    ((2, 3, 10, 10), dict(kernel=(3, 3), stride=(2, 2), pooling_convention="full",
                          pool_type="avg", count_include_pad=False), True),
    ((2, 3, 10, 10), dict(kernel=(3, 3), stride=(2, 2), pooling_convention="full",
                          pool_type="avg"), False),
    ((2, 3, 7, 7), dict(kernel=(2, 2), stride=(2, 2)), True),          # last row left out
    ((2, 3, 6, 5), dict(global_pool=True, kernel=(1, 1)), True),
    ((2, 3, 6, 5), dict(global_pool=True, pool_type="avg"), True),
    ((2, 3, 11), dict(kernel=(3,), stride=(2,), pad=(1,)), True),         # 1-D
    ((1, 2, 6, 6, 6), dict(kernel=(2, 2, 2), stride=(2, 2, 2), pool_type="avg"), True),
    ((2, 3, 8, 8), dict(kernel=(2, 2), stride=(2, 2), pool_type="sum"), False),
    ((64, 32, 28, 28), dict(kernel=(2, 2), stride=(2, 2)), True),
    # channels in whole blocks of 16: the primitive runs on channel-blocked copies
    ((2, 16, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1)), True),
    ((2, 32, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg"), True),
    ((2, 16, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                         count_include_pad=False), True),
    ((2, 16, 7, 7), dict(kernel=(2, 2), stride=(2, 2)), True),
    ((2, 32, 6, 5), dict(global_pool=True, kernel=(1, 1)), True),
    ((2, 16, 11), dict(kernel=(3,), stride=(2,), pad=(1,)), True),        # 1-D
    ((1, 16, 6, 6, 6), dict(kernel=(2, 2, 2), stride=(2, 2, 2)), True),  # 3-D
    ((2, 48, 10, 10), dict(kernel=(3, 3), stride=(2, 2), pooling_convention="full",
                           pool_type="avg", count_include_pad=False), True),
]


@pytest.mark.parametrize("shape,kw,supported", POOL_CASES)
def test_pooling_forward_backward(shape, kw, supported):
    p = params("Pooling", **kw)
    x = rand(*shape)
    ref, got, _, _ = both_forward("Pooling", p, [x])
    if not supported:
        assert got is NotImplemented
        return
    assert got is not NotImplemented
    close(ref[0], got[0], atol=1e-5)
    dy = rand(*ref[0].shape)
    gref, ggot = both_backward("Pooling", p, [dy], [x], ref)
    close(gref[0], ggot[0], atol=1e-5)


@pytest.mark.parametrize("channels", [3, 16])
def test_max_pooling_ties_go_to_the_first_maximum(channels):
    """Integer-valued data has ties inside windows: the gradient goes to one element
    per window, the first maximum, as in the NumPy operator (plain and channel-blocked
    layouts)."""
    p = params("Pooling", kernel=(3, 3), stride=(1, 1), pad=(1, 1))
    x = np.random.randint(0, 3, size=(2, channels, 7, 7)).astype(np.float32)
    ref, got, _, _ = both_forward("Pooling", p, [x])
    close(ref[0], got[0])
    dy = rand(*ref[0].shape)
    gref, ggot = both_backward("Pooling", p, [dy], [x], ref)
    close(gref[0], ggot[0], atol=1e-5)


BN_CASES = [
    ((4, 3, 5, 5), dict()),
    ((4, 3, 5, 5), dict(fix_gamma=False)),
    ((4, 3, 5, 5), dict(fix_gamma=False, use_global_stats=True)),
    ((6, 5), dict(fix_gamma=False, eps=1e-5)),
    ((2, 4, 3, 6), dict(fix_gamma=False, axis=-1)),
    ((2, 3, 4, 5, 2), dict(fix_gamma=False, momentum=0.5)),
]


@pytest.mark.parametrize("shape,kw", BN_CASES)
@pytest.mark.parametrize("is_train", [True, False])
def test_batchnorm_forward_backward(shape, kw, is_train):
    p = params("BatchNorm", **kw)
    c = shape[p.axis % len(shape)]
    x = rand(*shape) * 2 + 1
    gamma, beta = rand(c), rand(c)
    mm, mv = rand(c), np.abs(rand(c)) + 0.5
    ref, got, aux_np, aux_dn = both_forward("BatchNorm", p, [x, gamma, beta], [mm, mv],
                                            is_train=is_train)
    assert got is not NotImplemented
    for a, b in zip(ref, got):
        close(a, b, atol=1e-4)
    for a, b in zip(aux_np, aux_dn):
        close(a, b, atol=1e-5)
    dy = rand(*shape)
    gref, ggot = both_backward("BatchNorm", p, [dy, None, None], [x, gamma, beta], ref,
                               [mm, mv])
    for a, b in zip(gref, ggot):
        close(a, b, rtol=1e-3, atol=1e-3)


FC_CASES = [
    ((5, 7), dict(num_hidden=4)),
    ((5, 3, 2, 2), dict(num_hidden=6, no_bias=True)),
    ((2, 3, 7), dict(num_hidden=5, flatten=False)),
    ((64, 3136), dict(num_hidden=128)),
]


@pytest.mark.parametrize("shape,kw", FC_CASES)
def test_fully_connected_forward_backward(shape, kw):
    p = params("FullyConnected", **kw)
    feat = shape[-1] if not p.flatten else int(np.prod(shape[1:]))
    inputs = [rand(*shape), rand(p.num_hidden, feat)]
    if not p.no_bias:
        inputs.append(rand(p.num_hidden))
    ref, got, _, _ = both_forward("FullyConnected", p, inputs)
    close(ref[0], got[0], rtol=1e-4, atol=1e-3)
    dy = rand(*ref[0].shape)
    gref, ggot = both_backward("FullyConnected", p, [dy], inputs, ref)
    for a, b in zip(gref, ggot):
        close(a, b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,axis", [((4, 10), -1), ((3, 5, 4), 2), ((2, 3, 4, 1), 2)])
def test_softmax_forward_backward(name, shape, axis):
    p = params(name, axis=axis)
    x = rand(*shape) * 3
    ref, got, _, _ = both_forward(name, p, [x])
    close(ref[0], got[0], atol=1e-5)
    dy = rand(*shape)
    gref, ggot = both_backward(name, p, [dy], [None], ref)
    close(gref[0], ggot[0], atol=1e-5)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,axis", [((3, 5, 4), 1), ((2, 3, 4, 5), 0)])
def test_softmax_over_an_outer_axis_falls_back(name, shape, axis):
    # oneDNN's softmax across strided rows is far slower than the NumPy body
    p = params(name, axis=axis)
    x = rand(*shape)
    assert OPS[name][0](ctx_for(), p, [x], []) is NotImplemented
    from mxnet.operator.registry import get_op
    y = get_op(name).forward(ctx_for(), p, [x], [])
    assert OPS[name][1](ctx_for(True, [True], [shape]), p, [rand(*shape)], [None], y,
                        []) is NotImplemented


def test_softmax_with_temperature_falls_back():
    p = params("softmax", temperature=2.0)
    assert OPS["softmax"][0](ctx_for(), p, [rand(3, 4)], []) is NotImplemented


def get_op_forward(p, x):
    from mxnet.operator.registry import get_op
    return get_op("Pooling").forward(ctx_for(True), p, [x.copy()], [])[0]


@pytest.mark.parametrize("channels", [3, 32])
@pytest.mark.parametrize("kw", [dict(kernel=(2, 2), stride=(2, 2)),
                                dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1))])
def test_max_pooling_backward_uses_the_training_forwards_workspace(kw, channels,
                                                                   monkeypatch):
    from mxnet.backend.onednn import kernels as K
    p = params("Pooling", **kw)
    x = rand(2, channels, 9, 9)
    y = get_op_forward(p, x)
    used = []
    real = K.pool_backward
    monkeypatch.setattr(K, "pool_backward",
                        lambda *a, ws=None: (used.append(ws is not None), real(*a, ws=ws)))
    got = OPS["Pooling"][0](ctx_for(True), p, [x], [], out=[np.empty_like(y)])
    close(y, got[0], atol=0, rtol=0)
    dy = rand(*y.shape)
    gref, ggot = both_backward("Pooling", p, [dy], [x], got)
    close(gref[0], ggot[0], atol=1e-6)
    assert used == [True]


@pytest.mark.parametrize("blocked_refused", [False, True])
@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pooling_of_channels_that_do_not_fill_blocks(pool_type, blocked_refused,
                                                     monkeypatch):
    """LeNet's 20 channels: pooled on the channel-blocked layout padded to whole blocks
    (oneDNN's plain pooling was 14x slower); where oneDNN has no blocked
    implementation but its refused reference one, the plain layout is asked for. Both
    agree with the NumPy body, forward and backward."""
    from mxnet.backend.onednn import kernels as K, primitive as P
    P.clear_cache()
    layouts = []
    real = K._pool_md

    def pool_md(shape, dt=K.L.F32, blocked=True):
        if blocked and blocked_refused:
            raise K.NotSupported("no blocked implementation, for the test")
        layouts.append(blocked)
        return real(shape, dt, blocked)
    monkeypatch.setattr(K, "_pool_md", pool_md)
    p = params("Pooling", kernel=(2, 2), stride=(2, 2), pool_type=pool_type)
    x = rand(4, 20, 12, 12)
    ref, got, _, _ = both_forward("Pooling", p, [x])
    close(ref[0], got[0], atol=1e-6)
    dy = rand(*ref[0].shape)
    gref, ggot = both_backward("Pooling", p, [dy], [x], ref)
    close(gref[0], ggot[0], atol=1e-6)
    assert layouts and set(layouts) == {not blocked_refused}
    P.clear_cache()


def test_max_pooling_workspace_is_not_used_after_other_values_were_written():
    """A forward that did not go through oneDNN (or the user) wrote other values where
    a kept workspace's input and output lie: backward must recompute it."""
    from mxnet.operator.registry import get_op
    p = params("Pooling", kernel=(2, 2), stride=(2, 2))
    x = rand(2, 3, 8, 8)
    y = np.empty((2, 3, 4, 4), np.float32)
    OPS["Pooling"][0](ctx_for(True), p, [x], [], out=[y])
    x[...] = rand(*x.shape)                   # new data in the same buffers
    y[...] = get_op("Pooling").forward(ctx_for(True), p, [x.copy()], [])[0]
    dy = rand(*y.shape)
    gref, ggot = both_backward("Pooling", p, [dy], [x], [y])
    close(gref[0], ggot[0], atol=1e-6)


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "softrelu"])
def test_activation_forward_backward(act):
    p = params("Activation", act_type=act)
    x = rand(4, 5, 6) * 3
    ref, got, _, _ = both_forward("Activation", p, [x])
    dy = rand(*x.shape)
    gref, ggot = both_backward("Activation", p, [dy], [None], ref)
    if act == "softrelu":   # oneDNN's soft_relu is inaccurate for x < 0: NumPy keeps it
        assert got is NotImplemented and ggot is NotImplemented
        return
    close(ref[0], got[0], rtol=1e-6, atol=1e-7)
    close(gref[0], ggot[0], rtol=1e-5, atol=1e-6)


def test_activation_in_place():
    p = params("Activation", act_type="relu")
    x = rand(3, 4)
    want = np.maximum(x, 0)
    got = OPS["Activation"][0](ctx_for(), p, [x], [], out=[x])
    assert got[0] is x
    close(want, x)
    dy = rand(3, 4)
    g = dy.copy()                               # backward written over dy
    assert OPS["Activation"][1](ctx_for(True), p, [g], [None], [x], [], in_grad=[g])[0] \
        is g
    close(dy * (want > 0), g)


def test_relu_operator_forward_backward():
    """The relu operator (not Activation) on oneDNN matches its NumPy body, in place
    too."""
    p = params("relu")
    x = rand(4, 5, 6) * 3
    ref, got, _, _ = both_forward("relu", p, [x])
    assert got is not NotImplemented
    close(ref[0], got[0], rtol=0, atol=0)
    dy = rand(*x.shape)
    gref, ggot = both_backward("relu", p, [dy], [None], ref)
    assert ggot is not NotImplemented
    close(gref[0], ggot[0], rtol=0, atol=0)
    y = x.copy()
    assert OPS["relu"][0](ctx_for(), p, [y], [], out=[y])[0] is y
    close(ref[0], y, rtol=0, atol=0)
    g = dy.copy()                               # the gradient written over dy
    assert OPS["relu"][1](ctx_for(True), p, [g], [None], ref, [], in_grad=[g])[0] is g
    close(gref[0], g, rtol=0, atol=0)


def test_relu_operator_keeps_nan():
    """oneDNN's ReLU maps NaN to 0; MXNet's relu keeps NaN and gives a NaN gradient
    there, so calls with NaN go to the NumPy body."""
    p = params("relu")
    x = rand(3, 4)
    x[1, 2] = np.nan
    assert OPS["relu"][0](ctx_for(), p, [x], []) is NotImplemented
    y = np.maximum(x, 0)
    assert OPS["relu"][1](ctx_for(True), p, [rand(3, 4)], [None], [y], []) \
        is NotImplemented


@pytest.mark.parametrize("nsize", [3, 5])
def test_lrn_forward_backward(nsize):
    p = params("LRN", nsize=nsize, alpha=1e-2, beta=0.75, knorm=2.0)
    x = rand(2, 7, 5, 5)
    ref, got, _, _ = both_forward("LRN", p, [x])
    for a, b in zip(ref, got):
        close(a, b, atol=1e-5)
    dy = rand(*x.shape)
    gref, ggot = both_backward("LRN", p, [dy, None], [x], ref)
    close(gref[0], ggot[0], atol=1e-5)


def test_lrn_even_size_falls_back():
    p = params("LRN", nsize=4)
    assert OPS["LRN"][0](ctx_for(), p, [rand(1, 5, 3, 3)], []) is NotImplemented


@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 16), (300, 64)])
@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_layer_norm_forward_backward(shape, eps):
    p = params("LayerNorm", eps=eps)
    d = shape[-1]
    x = rand(*shape) * 3 + 2
    gamma, beta = rand(d), rand(d)
    ref, got, _, _ = both_forward("LayerNorm", p, [x, gamma, beta])
    assert got is not NotImplemented
    for a, b in zip(ref, got):          # the data, the mean, the std
        close(a, b, atol=1e-5)
    dy = rand(*shape)
    gref, ggot = both_backward("LayerNorm", p, [dy], [x, gamma, beta], ref)
    for a, b in zip(gref, ggot):
        close(a, b, rtol=1e-4, atol=1e-4)
    # gradients asked for one at a time, and written into given arrays
    for i in range(3):
        need = [j == i for j in range(3)]
        given = [np.full_like(a, np.nan) if n else None for a, n in zip(gref, need)]
        _, part = both_backward("LayerNorm", p, [dy], [x, gamma, beta], ref, need=need,
                                in_grad=given)
        assert part[i] is given[i]
        close(gref[i], part[i], rtol=1e-4, atol=1e-4)
        assert all(part[j] is None for j in range(3) if j != i)


def test_layer_norm_over_another_axis_falls_back():
    p = params("LayerNorm", axis=1)
    x = rand(4, 6, 5)
    assert OPS["LayerNorm"][0](ctx_for(), p, [x, rand(6), rand(6)], []) is NotImplemented
    with pytest.raises(mx.base.MXNetError):
        mx.nd.LayerNorm(mx.nd.array(x), mx.nd.ones(5), mx.nd.zeros(5), axis=3)

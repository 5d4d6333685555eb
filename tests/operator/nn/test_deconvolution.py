"""Deconvolution against a direct-loop NumPy reference (scatter each input position),
numeric gradients, target_shape/adj rules, shape inference and MXNet's golden cases."""
import itertools

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(3)


@pytest.mark.parametrize("case", fixture_cases_for("Deconvolution"))
def test_fixture(case):
    run_fixture_case(case)


def ref_pads(in_size, kernel, stride, dilate, pad, adj, target):
    """(pad, adj) per dim, MXNet's rule for target_shape written out independently."""
    if not target or not any(target):
        return list(pad), list(adj)
    pads, adjs = [], []
    for i, t in enumerate(target):
        full = stride[i] * (in_size[i] - 1) + dilate[i] * (kernel[i] - 1) + 1
        total = full - t
        pads.append((total + 1) // 2)
        adjs.append(total % 2)
    return pads, adjs


def ref_deconv(x, w, b, stride, pad, dilate, adj, groups):
    n, c = x.shape[:2]
    kernel = w.shape[2:]
    sp = len(kernel)
    fg = w.shape[1]
    f = fg * groups
    cg = c // groups
    full = [stride[i] * (x.shape[2 + i] - 1) + dilate[i] * (kernel[i] - 1) + 1 + adj[i]
            for i in range(sp)]
    y = np.zeros((n, f) + tuple(full))
    for o in itertools.product(*(range(v) for v in x.shape[2:])):
        win = tuple(slice(o[i] * stride[i], o[i] * stride[i] + dilate[i] * (kernel[i] - 1) + 1,
                          dilate[i]) for i in range(sp))
        for ci in range(c):
            g = ci // cg
            v = x[(slice(None), ci) + o].reshape((n,) + (1,) * (sp + 1))
            y[(slice(None), slice(g * fg, (g + 1) * fg)) + win] += v * w[ci]
    crop = tuple(slice(pad[i], full[i] - pad[i]) for i in range(sp))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y += b.reshape((1, f) + (1,) * sp)
    return y


CONFIGS = [
    # data shape, num_filter, kernel, stride, dilate, pad, adj, target, groups
    ((2, 3, 4, 4), 4, (3, 3), (1, 1), (1, 1), (0, 0), (0, 0), None, 1),
    ((2, 4, 4, 5), 3, (3, 3), (2, 2), (1, 1), (1, 1), (1, 0), None, 1),
    ((2, 4, 3, 3), 4, (2, 2), (1, 1), (1, 1), (0, 0), (0, 0), None, 2),
    ((1, 2, 3, 4), 2, (3, 2), (2, 3), (2, 1), (1, 1), (0, 2), None, 1),
    ((2, 3, 5, 5), 2, (3, 3), (2, 2), (1, 1), (0, 0), (0, 0), (10, 9), 1),
    ((2, 3, 5, 5), 2, (4, 4), (3, 3), (1, 1), (0, 0), (0, 0), (14, 15), 1),
    ((2, 3, 6), 4, (3,), (2,), (1,), (1,), (1,), None, 1),     # 1-D
    ((2, 4, 3, 4), 6, (1, 1), (1, 1), (1, 1), (0, 0), (0, 0), None, 2),   # 1x1: one GEMM
    ((2, 3, 3, 4), 2, (1, 1), (2, 3), (1, 1), (0, 0), (1, 0), None, 1),   # strided 1x1
    ((1, 2, 3, 2, 3), 2, (2, 2, 3), (2, 1, 2), (1, 1, 1), (0, 1, 1), (1, 0, 0), None, 1),
]


@pytest.mark.parametrize("shape,nf,kernel,stride,dilate,pad,adj,target,groups", CONFIGS)
def test_forward_vs_reference(shape, nf, kernel, stride, dilate, pad, adj, target, groups):
    x = rs.randn(*shape)
    w = rs.randn(shape[1], nf // groups, *kernel)
    b = rs.randn(nf)
    kw = dict(kernel=kernel, stride=stride, dilate=dilate, num_filter=nf, num_group=groups,
              no_bias=False)
    kw.update(dict(target_shape=target) if target else dict(pad=pad, adj=adj))
    y = nd.Deconvolution(nd.array(x), nd.array(w), nd.array(b), **kw)
    p, a = ref_pads(shape[2:], kernel, stride, dilate, pad, adj, target)
    ref = ref_deconv(x, w, b, stride, p, dilate, a, groups)
    if target:
        assert y.shape[2:] == tuple(target)
    assert y.shape == ref.shape
    assert_almost_equal(y.asnumpy(), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,nf,kernel,stride,dilate,pad,adj,target,groups",
                         [CONFIGS[1], CONFIGS[2], CONFIGS[3], CONFIGS[5], CONFIGS[6],
                          CONFIGS[7]])
def test_numeric_gradient(shape, nf, kernel, stride, dilate, pad, adj, target, groups):
    shape = (1,) + shape[1:]
    kw = dict(kernel=kernel, stride=stride, dilate=dilate, num_filter=nf, num_group=groups,
              no_bias=False)
    kw.update(dict(target_shape=target) if target else dict(pad=pad, adj=adj))
    check_numeric_gradient(lambda x, w, b: nd.Deconvolution(x, w, b, **kw),
                           [rs.randn(*shape), rs.randn(shape[1], nf // groups, *kernel),
                            rs.randn(nf)], numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_default_has_no_bias():
    s = mx.sym.Deconvolution(mx.sym.var("data"), kernel=(3, 3), num_filter=4, name="d")
    assert s.list_arguments() == ["data", "d_weight"]
    args, outs, _ = s.infer_shape(data=(2, 3, 7, 7))
    assert args == [(2, 3, 7, 7), (3, 4, 3, 3)] and outs == [(2, 4, 9, 9)]
    s = mx.sym.Deconvolution(mx.sym.var("data"), kernel=(3, 3), num_filter=6, num_group=3,
                             no_bias=False, name="d")
    args, outs, _ = s.infer_shape(data=(2, 6, 7, 7))
    assert args == [(2, 6, 7, 7), (6, 2, 3, 3), (6,)] and outs == [(2, 6, 9, 9)]
    with pytest.raises(MXNetError):
        nd.Deconvolution(nd.ones((1, 3, 4, 4)), nd.ones((3, 4, 3, 3)), nd.ones(4),
                         kernel=(3, 3), num_filter=4)


@pytest.mark.parametrize("kw,msg", [
    (dict(kernel=(3, 3), stride=(2, 2), target_shape=(12, 12)), "too big target"),
    (dict(kernel=(3, 3), stride=(2, 2), adj=(2, 2)), "adj"),
    (dict(kernel=(3, 3), stride=(1, 1), target_shape=(4, 6)), "adj"),
    (dict(kernel=(3, 3), pad=(4, 4)), "pad"),
    (dict(kernel=(3, 3), layout="NHWC"), "layout"),
    (dict(kernel=(3, 3), stride=(0, 0)), "stride"),
])
def test_bad_parameters(kw, msg):
    with pytest.raises(MXNetError, match=msg):
        nd.Deconvolution(nd.ones((2, 3, 5, 5)), nd.ones((3, 4, 3, 3)), num_filter=4,
                         **kw).asnumpy()


def test_wrong_weight_shape():
    with pytest.raises(MXNetError, match="weight"):
        nd.Deconvolution(nd.ones((2, 3, 5, 5)), nd.ones((4, 3, 3, 3)), kernel=(3, 3),
                         num_filter=4)


# --- large strides: the block path ---------------------------------------------------------
def ref_deconv_grads(x, w, dy, stride, pad, adj, groups):
    """(dx, dw, db) of ref_deconv (dilate 1) by the same scatter loop run backwards:
    each input position's window of the un-cropped output gradient."""
    n, c = x.shape[:2]
    kernel = w.shape[2:]
    sp = len(kernel)
    fg = w.shape[1]
    cg = c // groups
    full = [stride[i] * (x.shape[2 + i] - 1) + kernel[i] + adj[i] for i in range(sp)]
    dyf = np.zeros(dy.shape[:2] + tuple(full))
    dyf[(slice(None), slice(None)) +
        tuple(slice(pad[i], full[i] - pad[i]) for i in range(sp))] = dy
    dx, dw = np.zeros_like(x), np.zeros_like(w)
    for o in itertools.product(*(range(v) for v in x.shape[2:])):
        win = tuple(slice(o[i] * stride[i], o[i] * stride[i] + kernel[i]) for i in range(sp))
        for ci in range(c):
            g = ci // cg
            d = dyf[(slice(None), slice(g * fg, (g + 1) * fg)) + win]   # (n, fg, *kernel)
            dx[(slice(None), ci) + o] = (d * w[ci]).reshape(n, -1).sum(axis=1)
            dw[ci] += np.tensordot(x[(slice(None), ci) + o], d, axes=(0, 0))
    return dx, dw, dy.sum(axis=(0,) + tuple(range(2, dy.ndim)))


BLOCK_CONFIGS = [
    # data shape, num_filter, kernel, stride, pad, adj, target, groups
    ((2, 3, 3, 4), 4, (5, 5), (4, 4), (0, 0), (0, 0), None, 1),      # K % s != 0
    ((2, 3, 3, 4), 4, (5, 3), (4, 4), (2, 1), (3, 1), None, 1),      # pad, adj, K < s
    ((2, 3, 3, 4), 4, (8, 8), (4, 4), (2, 2), (0, 0), None, 1),      # FCN's 2s, s/2
    ((2, 3, 3, 4), 4, (8, 8), (4, 4), (0, 0), (0, 0), (13, 14), 1),  # target_shape
    ((2, 4, 3, 3), 6, (6, 9), (3, 4), (1, 2), (0, 1), None, 2),      # groups
    ((2, 4, 3, 3), 4, (8, 8), (4, 4), (2, 2), (0, 0), None, 4),      # depthwise
    ((2, 3, 5), 4, (9,), (8,), (2,), (3,), None, 1),                  # 1-D
    ((1, 2, 2, 3, 2), 2, (4, 3, 5), (2, 2, 4), (1, 0, 2), (1, 0, 0), None, 1),   # 3-D
    ((2, 3, 2, 3), 5, (32, 32), (16, 16), (8, 8), (0, 0), None, 1),  # FCN-like
    ((2, 2, 4, 5), 2, (4, 4), (4, 4), (5, 6), (0, 0), None, 1),      # pad > stride
]


def _block_run(shape, nf, kernel, stride, pad, adj, target, groups, seed):
    r = np.random.RandomState(seed)
    x = r.randn(*shape)
    w = r.randn(shape[1], nf // groups, *kernel)
    b = r.randn(nf)
    kw = dict(kernel=kernel, stride=stride, num_filter=nf, num_group=groups, no_bias=False)
    kw.update(dict(target_shape=target) if target else dict(pad=pad, adj=adj))
    args = [nd.array(v) for v in (x, w, b)]
    for a in args:
        a.attach_grad()
    with mx.autograd.record():
        y = nd.Deconvolution(*args, **kw)
    dy = r.randn(*y.shape)
    y.backward(nd.array(dy))
    p, a = ref_pads(shape[2:], kernel, stride, (1,) * len(kernel), pad, adj, target)
    return x, w, b, dy, p, a, y, args


@pytest.mark.parametrize("shape,nf,kernel,stride,pad,adj,target,groups", BLOCK_CONFIGS)
def test_block_path_vs_reference(monkeypatch, shape, nf, kernel, stride, pad, adj, target,
                                 groups):
    """Large strides run by blocks (one GEMM over stride-sized blocks of the output):
    its output and all three gradients against the scatter loops, on the NumPy body
    (oneDNN handles small strides itself, and is kept out here)."""
    from mxnet.operator import kernels_onednn
    from mxnet.operator.nn import deconvolution as dc
    monkeypatch.setitem(kernels_onednn.MIN_WORK, "Deconvolution", float("inf"))
    assert dc.use_blocks(kernel, stride, (1,) * len(kernel))
    calls = []
    for name in ("_block_forward", "_block_backward"):
        fn = getattr(dc, name)
        monkeypatch.setattr(dc, name, lambda *a, _fn=fn, _n=name: calls.append(_n) or _fn(*a))
    x, w, b, dy, p, a, y, (gx, gw, gb) = _block_run(shape, nf, kernel, stride, pad, adj,
                                                     target, groups, len(shape) + nf)
    # (the CPU kernel may split a batch across threads: one call per part)
    assert sorted(set(calls)) == ["_block_backward", "_block_forward"]
    ref = ref_deconv(x, w, b, stride, p, (1,) * len(kernel), a, groups)
    if target:
        assert y.shape[2:] == tuple(target)
    assert y.shape == ref.shape
    assert_almost_equal(y.asnumpy(), ref, rtol=1e-4, atol=1e-4)
    dx, dw, db = ref_deconv_grads(x, w, dy, stride, p, a, groups)
    assert_almost_equal(gx.grad.asnumpy(), dx, rtol=1e-4, atol=1e-4)
    assert_almost_equal(gw.grad.asnumpy(), dw, rtol=1e-4, atol=1e-4)
    assert_almost_equal(gb.grad.asnumpy(), db, rtol=1e-4, atol=1e-4)


def test_block_path_numeric_gradient(monkeypatch):
    from mxnet.operator import kernels_onednn
    monkeypatch.setitem(kernels_onednn.MIN_WORK, "Deconvolution", float("inf"))
    kw = dict(kernel=(6, 5), stride=(4, 4), pad=(1, 2), adj=(1, 0), num_filter=3,
              no_bias=False)
    check_numeric_gradient(lambda x, w, b: nd.Deconvolution(x, w, b, **kw),
                           [rs.randn(1, 2, 2, 3), rs.randn(2, 3, 6, 5), rs.randn(3)],
                           numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_block_path_only_grads_asked_and_chunks(monkeypatch):
    """Batch chunks (a tiny workspace gives one sample each) sum the weight gradient;
    a gradient that is not asked for is not computed."""
    from mxnet.operator import kernels_onednn
    from mxnet.operator.nn import deconvolution as dc
    monkeypatch.setitem(kernels_onednn.MIN_WORK, "Deconvolution", float("inf"))
    monkeypatch.setattr(dc, "BLOCK_CHUNK_MB", 0)
    r = np.random.RandomState(5)
    x, w = r.randn(3, 2, 2, 3), r.randn(2, 3, 8, 8)
    kw = dict(kernel=(8, 8), stride=(4, 4), pad=(2, 2), num_filter=3)
    ref = ref_deconv(x, w, None, (4, 4), (2, 2), (1, 1), (0, 0), 1)
    dy = r.randn(*ref.shape)
    dx, dw, _ = ref_deconv_grads(x, w, dy, (4, 4), (2, 2), (0, 0), 1)
    for need_x in (True, False):
        xa, wa = nd.array(x), nd.array(w)
        if need_x:
            xa.attach_grad()
        wa.attach_grad()
        with mx.autograd.record():
            y = nd.Deconvolution(xa, wa, **kw)
        y.backward(nd.array(dy))
        assert_almost_equal(y.asnumpy(), ref, rtol=1e-4, atol=1e-4)
        assert_almost_equal(wa.grad.asnumpy(), dw, rtol=1e-4, atol=1e-4)
        if need_x:
            assert_almost_equal(xa.grad.asnumpy(), dx, rtol=1e-4, atol=1e-4)


def test_block_path_in_hybridized_conv2d_transpose():
    """FCN's upsampler as a hybridized Gluon layer (a bound graph) gives the imperative
    result and gradients."""
    net = mx.gluon.nn.Conv2DTranspose(4, kernel_size=16, padding=4, strides=8,
                                      in_channels=3, use_bias=False)
    net.initialize(mx.init.Normal(1.0))
    x = nd.array(rs.randn(2, 3, 2, 3))
    outs, grads = [], []
    for hybrid in (False, True):
        if hybrid:
            net.hybridize()
        with mx.autograd.record():
            y = net(x)
        y.backward()
        outs.append(y.asnumpy())
        grads.append(net.weight.grad().asnumpy())
    assert outs[0].shape == (2, 4, 16, 24)
    assert_almost_equal(outs[1], outs[0], rtol=1e-5, atol=1e-5)
    assert_almost_equal(grads[1], grads[0], rtol=1e-5, atol=1e-5)
    ref = ref_deconv(x.asnumpy(), net.weight.data().asnumpy(), None, (8, 8), (4, 4), (1, 1),
                     (0, 0), 1)
    assert_almost_equal(outs[0], ref, rtol=1e-4, atol=1e-4)

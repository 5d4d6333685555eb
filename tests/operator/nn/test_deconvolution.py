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

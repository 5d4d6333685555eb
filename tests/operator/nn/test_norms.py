"""LayerNorm, InstanceNorm, GroupNorm, L2Normalization and LRN against NumPy
references, numeric gradients and MXNet 1.9.1's golden cases."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from mxnet.test_utils import assert_almost_equal
from opcheck import Case, check
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(13)


@pytest.mark.parametrize("case", fixture_cases_for("LayerNorm", "InstanceNorm", "GroupNorm",
                                                   "L2Normalization", "LRN"))
def test_fixture(case):
    run_fixture_case(case)


def normalize(x, axes, eps):
    m = x.mean(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)


def bshape(ndim, axis, n):
    return tuple(n if i == axis % ndim else 1 for i in range(ndim))


@pytest.mark.parametrize("shape,axis", [((2, 3, 5), -1), ((2, 4, 3), 1), ((3, 2, 2), 0),
                                        ((4, 6), -1)])
def test_layer_norm(shape, axis):
    c = shape[axis]
    x, g, b = rs.randn(*shape), rs.uniform(0.5, 1.5, c), rs.randn(c)

    def ref(x, g, b):
        bs = bshape(x.ndim, axis, c)
        return normalize(x, axis, 1e-5) * g.reshape(bs) + b.reshape(bs)
    check(Case("LayerNorm", ref, kwargs={"axis": axis}, ref_kwargs=False, inputs=[x, g, b]))


def test_layer_norm_output_mean_var():
    x = rs.randn(2, 3, 4)
    out = nd.LayerNorm(nd.array(x), nd.ones((4,)), nd.zeros((4,)), output_mean_var=True,
                       eps=1e-3)
    assert len(out) == 3 and out[1].shape == (2, 3, 1) and out[2].shape == (2, 3, 1)
    assert_almost_equal(out[1].asnumpy(), x.mean(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert_almost_equal(out[2].asnumpy(), np.sqrt(x.var(-1, keepdims=True) + 1e-3),
                        rtol=1e-5)


@pytest.mark.parametrize("op, path", [("LayerNorm", "body"), ("LayerNorm", "onednn"),
                                      ("GroupNorm", "body")])
def test_parameter_gradients_sum_many_rows_accurately(op, path, monkeypatch):
    # gamma's and beta's gradients sum over every row: in a float32 running sum over
    # 4096 rows the error reaches ~4e-4 (MXNet's test_layer_norm allows 1e-3 at this
    # shape in float32); the body sums in float64 (GroupNorm here: 8 groups of one
    # channel each, gamma per group). oneDNN's LayerNorm (which takes this call where
    # it is installed) accumulates in float32 in blocks whose layout depends on the
    # CPU's kernel (3e-5 on an AVX2 EPYC): held to 1e-4
    from mxnet.operator import kernels_onednn
    if path == "body":
        monkeypatch.setitem(kernels_onednn.MIN_WORK, "LayerNorm", float("inf"))
    elif kernels_onednn.try_runtime() is None:
        pytest.skip("oneDNN is not installed")
    tol = 2e-5 if path == "body" else 1e-4
    rng = np.random.RandomState(3)
    x = rng.randn(4096, 512).astype(np.float32) if op == "LayerNorm" else \
        rng.randn(4096, 8, 64).astype(np.float32)
    dy = rng.randn(*x.shape).astype(np.float32)
    c = 512 if op == "LayerNorm" else 8
    gamma, beta = nd.array(rng.randn(c)), nd.array(rng.randn(c))
    data = nd.array(x)
    for a in (data, gamma, beta):
        a.attach_grad()
    kwargs = {"axis": -1} if op == "LayerNorm" else {"num_groups": 8}
    with mx.autograd.record():
        y = getattr(nd, op)(data, gamma, beta, eps=1e-3, **kwargs)
    y.backward(nd.array(dy))
    xhat = normalize(x.astype(np.float64), x.ndim - 1, 1e-3)
    sum_axes = (0,) if op == "LayerNorm" else (0, 2)
    assert_almost_equal(gamma.grad.asnumpy(), (dy * xhat).sum(axis=sum_axes),
                        rtol=tol, atol=tol)
    assert_almost_equal(beta.grad.asnumpy(), dy.astype(np.float64).sum(axis=sum_axes),
                        rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 2, 3)])
def test_instance_norm(shape):
    c = shape[1]
    x, g, b = rs.randn(*shape), rs.uniform(0.5, 1.5, c), rs.randn(c)

    def ref(x, g, b):
        axes = tuple(range(2, x.ndim))
        bs = bshape(x.ndim, 1, c)
        return normalize(x, axes, 1e-3) * g.reshape(bs) + b.reshape(bs)
    check(Case("InstanceNorm", ref, inputs=[x, g, b]))


@pytest.mark.parametrize("groups", [1, 2, 4])
@pytest.mark.parametrize("shape", [(2, 4, 3), (2, 4, 2, 2)])
def test_group_norm(groups, shape):
    x, g, b = rs.randn(*shape), rs.uniform(0.5, 1.5, groups), rs.randn(groups)

    def ref(x, g, b):
        n = x.shape[0]
        xr = normalize(x.reshape(n, groups, -1), 2, 1e-5)
        return (xr * g.reshape(1, -1, 1) + b.reshape(1, -1, 1)).reshape(x.shape)
    check(Case("GroupNorm", ref, kwargs={"num_groups": groups}, ref_kwargs=False,
               inputs=[x, g, b]))


def test_group_norm_output_mean_var():
    x = rs.randn(2, 4, 3)
    out = nd.GroupNorm(nd.array(x), nd.ones((2,)), nd.zeros((2,)), num_groups=2,
                       output_mean_var=True)
    xr = x.reshape(2, 2, -1)
    assert out[1].shape == (2, 2)
    assert_almost_equal(out[1].asnumpy(), xr.mean(-1), rtol=1e-5, atol=1e-6)
    assert_almost_equal(out[2].asnumpy(), np.sqrt(xr.var(-1) + 1e-5), rtol=1e-5)


@pytest.mark.parametrize("mode,axes", [("instance", (1, 2, 3)), ("channel", (1,)),
                                       ("spatial", (2, 3))])
def test_l2_normalization(mode, axes):
    x = rs.randn(2, 3, 2, 2)
    check(Case("L2Normalization",
               lambda a: a / np.sqrt((a * a).sum(axis=axes, keepdims=True) + 1e-10),
               kwargs={"mode": mode}, ref_kwargs=False, inputs=[x]))


def test_l2_normalization_2d_instance():
    x = rs.randn(3, 4)
    check(Case("L2Normalization",
               lambda a: a / np.sqrt((a * a).sum(1, keepdims=True) + 0.5),
               kwargs={"eps": 0.5}, ref_kwargs=False, inputs=[x]))


def ref_lrn(x, nsize, alpha, beta, knorm):
    half = (nsize - 1) // 2
    sq = np.pad(x * x, ((0, 0), (half, half), (0, 0), (0, 0)))
    s = sum(sq[:, i:i + x.shape[1]] for i in range(2 * half + 1))
    return x * (knorm + alpha / nsize * s) ** -beta


@pytest.mark.parametrize("nsize", [1, 3, 4, 5])
def test_lrn(nsize):
    x = rs.randn(2, 6, 2, 3)
    kw = dict(nsize=nsize, alpha=0.3, beta=0.75, knorm=1.5)
    check(Case("LRN", lambda a: ref_lrn(a, **kw), kwargs=kw, ref_kwargs=False, inputs=[x]))


def test_lrn_2d_is_nc11():
    # MXNet 1.9.1's CPU build takes 2-D (N, C) data as (N, C, 1, 1) (checked against the
    # oracle); 3-D stays an error
    x = rs.randn(2, 5)
    kw = dict(nsize=3, alpha=2.0, beta=0.75, knorm=2.0)
    check(Case("LRN", lambda a: ref_lrn(a.reshape(2, 5, 1, 1), **kw).reshape(2, 5),
               kwargs=kw, ref_kwargs=False, inputs=[x]))


def test_hidden_outputs_and_shapes():
    cases = [("LayerNorm", {}, (2, 3, 4), [(2, 3, 4), (4,), (4,)],
              [(2, 3, 4), (2, 3, 1), (2, 3, 1)]),
             ("InstanceNorm", {}, (2, 3, 4), [(2, 3, 4), (3,), (3,)],
              [(2, 3, 4), (2, 3), (2, 3)]),
             ("GroupNorm", {"num_groups": 2}, (2, 4, 3), [(2, 4, 3), (2,), (2,)],
              [(2, 4, 3), (2, 2), (2, 2)]),
             ("L2Normalization", {}, (2, 3, 4), [(2, 3, 4)], [(2, 3, 4), (2,)]),
             ("LRN", {"nsize": 3}, (2, 3, 4, 4), [(2, 3, 4, 4)], [(2, 3, 4, 4)] * 2)]
    for name, kw, d, ins_want, outs_want in cases:
        op = get_op(name)
        p = op.parse(kw)
        ins, outs, aux = op.infer_shape(p, [d] + [None] * (len(ins_want) - 1))
        assert ins == ins_want and outs == outs_want and aux == [], name
        assert op.num_visible_outputs(p) == 1
        assert len(op.outputs(p)) == len(outs_want)
        y = getattr(nd, name)(*[nd.array(rs.rand(*s)) for s in ins_want], **kw)
        assert isinstance(y, mx.nd.NDArray) and y.shape == d


def test_errors():
    with pytest.raises(MXNetError):
        nd.LayerNorm(nd.ones((2, 3)), nd.ones((2,)), nd.ones((2,)))
    with pytest.raises(MXNetError):
        nd.LayerNorm(nd.ones((2, 3)), nd.ones((3,)), nd.ones((3,)), axis=2)
    with pytest.raises(MXNetError):
        nd.InstanceNorm(nd.ones((2, 3)), nd.ones((3,)), nd.ones((3,)))
    with pytest.raises(MXNetError):
        nd.GroupNorm(nd.ones((2, 6, 2)), nd.ones((4,)), nd.ones((4,)), num_groups=4)
    with pytest.raises(MXNetError):
        nd.GroupNorm(nd.ones((2, 4, 2)), nd.ones((4,)), nd.ones((4,)), num_groups=2)
    with pytest.raises(MXNetError):
        nd.L2Normalization(nd.ones((2, 3)), mode="channel")
    with pytest.raises(MXNetError):
        nd.L2Normalization(nd.ones((2, 3)), mode="pixel")
    with pytest.raises(MXNetError):
        nd.LRN(nd.ones((2, 3, 4)), nsize=3)
    with pytest.raises(MXNetError):
        nd.LRN(nd.ones((2, 3, 4, 4)))                  # nsize is required


@pytest.mark.parametrize("shape", [(3, 40, 100), (2048, 256)])
def test_layer_norm_numpy_body_on_rows(shape):
    # the body's BLAS routes over the last axis (operator/nn/norms.py _standardize,
    # _norm_grad, _param_grads), called directly: in an executor with oneDNN these
    # sizes go to its adapter
    from mxnet.operator.registry import OpContext, get_op
    op = get_op("LayerNorm")
    p = op.parse({"eps": 1e-3})
    rng = np.random.RandomState(7)
    d = shape[-1]
    x = (rng.randn(*shape) * 2 + 5).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, d).astype(np.float32)
    beta = rng.randn(d).astype(np.float32)
    dy = rng.randn(*shape).astype(np.float32)
    ctx = OpContext(np, mx.cpu(), True, [True] * 3, [x.shape, (d,), (d,)])
    y, mean, std = op.forward(ctx, p, [x, gamma, beta], [])
    x64 = x.astype(np.float64)
    xhat = normalize(x64, -1, 1e-3)
    assert_almost_equal(y, xhat * gamma + beta, rtol=1e-5, atol=1e-5)
    assert_almost_equal(mean, x64.mean(-1, keepdims=True), rtol=1e-6, atol=1e-6)
    assert_almost_equal(std, np.sqrt(x64.var(-1, keepdims=True) + 1e-3), rtol=1e-6)
    dx, dgamma, dbeta = op.backward(ctx, p, [dy], [x, gamma, beta], [y, mean, std], [])
    g = dy.astype(np.float64) * gamma
    inv = 1 / np.sqrt(x64.var(-1, keepdims=True) + 1e-3)
    want_dx = inv * (g - g.mean(-1, keepdims=True) -
                     xhat * (g * xhat).mean(-1, keepdims=True))
    assert_almost_equal(dx, want_dx, rtol=1e-4, atol=1e-5)
    axes = tuple(range(x.ndim - 1))
    assert_almost_equal(dgamma, (dy * xhat).sum(axis=axes), rtol=2e-5, atol=2e-5)
    assert_almost_equal(dbeta, dy.astype(np.float64).sum(axis=axes), rtol=2e-5, atol=2e-5)


def ref_norm_grads(x, dy, gamma_b, axes, eps, param_axes):
    """float64 (dx, dgamma, dbeta) of y = gamma * normalize(x over axes) + beta."""
    xhat = normalize(x, axes, eps)
    inv = 1 / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    g = dy * gamma_b
    dx = inv * (g - g.mean(axis=axes, keepdims=True) -
                xhat * (g * xhat).mean(axis=axes, keepdims=True))
    return dx, (dy * xhat).sum(axis=param_axes), dy.sum(axis=param_axes)


@pytest.mark.parametrize("op", ["InstanceNorm", "GroupNorm"])
def test_instance_and_group_norm_numpy_body_on_rows(op):
    # sizes whose statistics take the per-row BLAS route (_trailing_rows), called on the
    # operator body directly
    from mxnet.operator.registry import OpContext
    rng = np.random.RandomState(5)
    shape, k = ((4, 8, 20, 20), 8) if op == "InstanceNorm" else ((4, 8, 16, 16), 4)
    p = get_op(op).parse({} if op == "InstanceNorm" else {"num_groups": k})
    x = (rng.randn(*shape) * 3 + 7).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, k).astype(np.float32)
    beta = rng.randn(k).astype(np.float32)
    dy = rng.randn(*shape).astype(np.float32)
    ctx = OpContext(np, mx.cpu(), True, [True] * 3, [shape, (k,), (k,)])
    outs = get_op(op).forward(ctx, p, [x, gamma, beta], [])
    # rows: (sample, channel) for InstanceNorm, (sample, group) for GroupNorm
    xr = x.astype(np.float64).reshape(shape[0], k, -1)
    eps = p.eps
    xhat = normalize(xr, 2, eps)
    want = xhat * gamma.reshape(1, k, 1) + beta.reshape(1, k, 1)
    assert_almost_equal(outs[0].reshape(xr.shape), want, rtol=1e-5, atol=1e-5)
    assert_almost_equal(outs[1].reshape(shape[0], k), xr.mean(axis=2), rtol=1e-6,
                        atol=1e-5)
    dx, dgamma, dbeta = get_op(op).backward(ctx, p, [dy], [x, gamma, beta], outs, [])
    wdx, wdg, wdb = ref_norm_grads(xr, dy.astype(np.float64).reshape(xr.shape),
                                   gamma.reshape(1, k, 1), 2, eps, (0, 2))
    assert_almost_equal(dx.reshape(xr.shape), wdx, rtol=1e-4, atol=1e-5)
    assert_almost_equal(dgamma, wdg, rtol=2e-5, atol=2e-5)
    assert_almost_equal(dbeta, wdb, rtol=2e-5, atol=2e-5)

"""The cuDNN adapters' channels-last paths (the executor's GPU layout) without a GPU.

A stand-in CuPy over NumPy carries the arrays; the real libcudnn makes every
descriptor; the cuDNN compute calls are replaced by NumPy stand-ins that first check
that each descriptor describes the memory of the array it comes with (cuDNN would
read it so: dims and strides of tensors, KRSC format of the filter), then compute the
operation on the arrays' logical views with MXNet's own CPU operators. So these tests
check the adapters' part: which bytes go to cuDNN with which descriptor, the
transposes of plain arrays, filters and filter gradients, 'add' destinations. What
cuDNN computes on NHWC data is checked on a GPU (test_channels_last_gpu.py).
BatchNorm's channels-last calls run pymxnet's own kernels (backend/bn_channels_last.py),
here compiled for the host (tests/cuda_on_host.HostKernels), or, with
MXNET_CUDNN_BN_CHANNELS_LAST=1, the cuDNN stand-ins."""
import itertools

import numpy as np
import pytest

import mxnet as mx
from mxnet.backend.cudnn import _lib as L
from mxnet.backend.cudnn import descriptors as D
from mxnet.backend.cudnn import kernels as K
from mxnet.operator import kernels_cudnn as KC
from mxnet.operator.registry import OpContext, get_op

from mxnet.backend import bn_channels_last as NHWC

from cudnn_stand_in import LIB, WHY, FakeArray, wrap, install_numeric_kernels, \
    conv_grads as _conv_grads

pytestmark = pytest.mark.skipif(LIB is None, reason=f"libcudnn not loadable: {WHY[:200]}")
BIAS_GRADIENT = K.conv_backward_bias        # before the stand-ins replace it


@pytest.fixture(autouse=True)
def stand_ins(monkeypatch):
    install_numeric_kernels(monkeypatch)
    yield


@pytest.fixture(params=["own kernels", "cudnn"])
def bn_path(request, monkeypatch, host_raw_kernels):
    """BatchNorm's channels-last path: pymxnet's kernels on the host, or cuDNN's."""
    if request.param == "cudnn":
        monkeypatch.setenv("MXNET_CUDNN_BN_CHANNELS_LAST", "1")
    else:
        monkeypatch.setattr(NHWC, "raw_kernel", host_raw_kernels)

        def plain_only(stand_in):       # channels-last data must not reach cuDNN
            def call(x4, *args, **kwargs):
                assert x4.flags.c_contiguous, "channels-last BatchNorm went to cuDNN"
                return stand_in(x4, *args, **kwargs)
            return call
        for name in ("bn_forward_training", "bn_forward_inference", "bn_backward"):
            monkeypatch.setattr(K, name, plain_only(getattr(K, name)))
    return request.param


def _cl_bytes(a):
    """``a`` (logical NCHW) as the executor holds a channels-last entry: an array of
    the same shape whose bytes are NHWC."""
    return wrap(np.ascontiguousarray(np.asarray(a).transpose(0, 2, 3, 1)).reshape(a.shape))


def _logical(mem):
    n, c, h, w = mem.shape
    return np.asarray(mem).reshape(n, h, w, c).transpose(0, 3, 1, 2)


def _as(a, cl):
    return _cl_bytes(a) if cl else wrap(np.ascontiguousarray(a))


def _read(mem, cl):
    return _logical(mem) if cl else np.asarray(mem)


def _rand(*shape, seed=0, dtype=np.float32):
    return np.random.RandomState(seed).standard_normal(shape).astype(dtype)


def _fwd_ctx(flags_in, flags_out, is_train=True):
    ctx = OpContext(np, None, is_train=is_train)
    ctx.layout = (tuple(flags_in), tuple(flags_out))
    return ctx


def _bwd_ctx(og, ins, outd, tg, req, need=None, shapes=None):
    ctx = OpContext(np, None, is_train=True, need_grad=need, in_shapes=shapes, req=req)
    ctx.layout = (tuple(og), tuple(ins), tuple(outd), tuple(tg))
    return ctx


FLAGS = list(itertools.product([True, False], repeat=2))


@pytest.mark.parametrize("x_cl,y_cl", FLAGS)
@pytest.mark.parametrize("kw", [
    dict(kernel=(3, 3), pad=(1, 1), num_filter=16),
    dict(kernel=(1, 1), stride=(2, 2), num_filter=8, no_bias=True),
    dict(kernel=(3, 3), num_filter=16, num_group=2, dilate=(2, 1)),
])
def test_convolution_forward(x_cl, y_cl, kw):
    p = get_op("Convolution").parse(kw)
    x = _rand(2, 8, 7, 6)
    w = _rand(kw["num_filter"], 8 // kw.get("num_group", 1), *kw["kernel"], seed=1)
    args = [x, w] + ([] if kw.get("no_bias") else [_rand(kw["num_filter"], seed=2)])
    want = mx.nd.Convolution(*[mx.nd.array(a) for a in args], **kw).asnumpy()
    y = _as(np.full(want.shape, np.nan, np.float32), y_cl)
    ins = [_as(x, x_cl)] + [wrap(a) for a in args[1:]]
    res = KC.conv_forward(_fwd_ctx([x_cl, False, False][:len(ins)], [y_cl]), p, ins, [],
                          out=[y])
    assert res[0] is y
    np.testing.assert_allclose(_read(y, y_cl), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x_cl,dx_cl", FLAGS)
@pytest.mark.parametrize("add", [False, True])
@pytest.mark.parametrize("k", [3, 1])
def test_convolution_backward(x_cl, dx_cl, add, k):
    kw = dict(kernel=(k, k), pad=(k // 2, k // 2), stride=(2, 2), num_filter=16)
    p = get_op("Convolution").parse(kw)
    x, w, b = _rand(2, 8, 7, 6), _rand(16, 8, k, k, seed=1), _rand(16, seed=2)
    xn, wn, bn = (mx.nd.array(a) for a in (x, w, b))
    for a in (xn, wn, bn):
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Convolution(xn, wn, bn, **kw)
    dy = _rand(*y.shape, seed=3)
    y.backward(mx.nd.array(dy))
    old = [_rand(*a.shape, seed=9) for a in (x, w, b)]     # what 'add' adds to
    req = ["add" if add else "write"] * 3
    dx = _as(old[0].copy(), dx_cl)
    dw, db = wrap(old[1].copy()), wrap(old[2].copy())
    ctx = _bwd_ctx([x_cl], [x_cl, False, False], [x_cl], [dx_cl, False, False], req,
                   need=[True] * 3, shapes=[x.shape, w.shape, b.shape])
    res = KC.conv_backward(ctx, p, [_as(dy, x_cl)], [_as(x, x_cl), wrap(w), wrap(b)],
                           [None], [], in_grad=[dx, dw, db])
    for got, dst, cl, ref, base in zip(res, (dx, dw, db), (dx_cl, False, False),
                                       (xn.grad, wn.grad, bn.grad), old):
        want = ref.asnumpy() + (base if add else 0)
        # an 'add' destination is added into by the kernel itself (``accumulates``)
        assert got is dst
        np.testing.assert_allclose(_read(dst, cl), want, rtol=1e-4, atol=1e-4)


def test_convolution_backward_only_the_data_gradient():
    kw = dict(kernel=(3, 3), pad=(1, 1), num_filter=8, no_bias=True)
    p = get_op("Convolution").parse(kw)
    x, w = _rand(1, 8, 5, 5), _rand(8, 8, 3, 3, seed=1)
    dy = _rand(1, 8, 5, 5, seed=2)
    want = _conv_grads(K.geometry((1, 8, 5, 5), (8, 8, 3, 3), (1, 8, 5, 5), (1, 1),
                                  (1, 1), (1, 1), 1, np.float32), x, w, dy)[0]
    dx = _as(np.zeros_like(x), True)
    ctx = _bwd_ctx([True], [True, False], [True], [True, False], ["write", "null"],
                   need=[True, False], shapes=[x.shape, w.shape])
    res = KC.conv_backward(ctx, p, [_as(dy, True)], [_as(x, True), wrap(w)], [None], [],
                           in_grad=[dx, None])
    assert res[1] is None
    np.testing.assert_allclose(_logical(dx), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x_cl,y_cl", FLAGS)
@pytest.mark.parametrize("kw", [
    dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max"),
    dict(kernel=(2, 2), stride=(2, 2), pool_type="avg"),
    dict(kernel=(1, 1), global_pool=True, pool_type="avg"),
])
def test_pooling_forward_and_backward(x_cl, y_cl, kw):
    p = get_op("Pooling").parse(kw)
    x = _rand(2, 8, 6, 6)
    xn = mx.nd.array(x)
    xn.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling(xn, **kw)
    dy = _rand(*y.shape, seed=1)
    y.backward(mx.nd.array(dy))
    ym = _as(np.zeros(y.shape, np.float32), y_cl)
    KC.pool_forward(_fwd_ctx([x_cl], [y_cl]), p, [_as(x, x_cl)], [], out=[ym])
    np.testing.assert_allclose(_read(ym, y_cl), y.asnumpy(), rtol=1e-5, atol=1e-5)
    dx = _as(np.zeros_like(x), x_cl)
    ctx = _bwd_ctx([y_cl], [x_cl], [y_cl], [x_cl], ["write"], shapes=[x.shape])
    KC.pool_backward(ctx, p, [_as(dy, y_cl)], [_as(x, x_cl)], [ym], [], in_grad=[dx])
    np.testing.assert_allclose(_read(dx, x_cl), xn.grad.asnumpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("x_cl,y_cl", FLAGS)
def test_batchnorm_training_forward_and_backward(x_cl, y_cl, bn_path):
    kw = dict(fix_gamma=False, momentum=0.9, eps=1e-3)
    p = get_op("BatchNorm").parse(kw)
    x, gamma, beta = _rand(4, 8, 3, 5), _rand(8, seed=1), _rand(8, seed=2)
    mm, mv = np.zeros(8, np.float32), np.ones(8, np.float32)
    nds = [mx.nd.array(a) for a in (x, gamma, beta)]
    for a in nds:
        a.attach_grad()
    rm, rv = mx.nd.array(mm), mx.nd.array(mv)
    with mx.autograd.record():
        y = mx.nd.BatchNorm(*nds, rm, rv, **kw)
    dy = _rand(*x.shape, seed=3)
    y.backward(mx.nd.array(dy))
    ym = _as(np.zeros_like(x), y_cl)
    mean, invstd = wrap(np.zeros(8, np.float32)), wrap(np.zeros(8, np.float32))
    aux = [wrap(mm.copy()), wrap(mv.copy())]
    KC.bn_forward(_fwd_ctx([x_cl, False, False], [y_cl, False, False]), p,
                  [_as(x, x_cl), wrap(gamma), wrap(beta)], aux, out=[ym, mean, invstd])
    np.testing.assert_allclose(_read(ym, y_cl), y.asnumpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(aux[0], rm.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(aux[1], rv.asnumpy(), rtol=1e-5, atol=1e-6)
    dx = _as(np.zeros_like(x), x_cl)
    dg, db = wrap(np.zeros(8, np.float32)), wrap(np.zeros(8, np.float32))
    ctx = _bwd_ctx([y_cl, False, False], [x_cl, False, False], [y_cl, False, False],
                   [x_cl, False, False], ["write"] * 3, need=[True] * 3,
                   shapes=[x.shape, (8,), (8,)])
    KC.bn_backward(ctx, p, [_as(dy, y_cl), None, None],
                   [_as(x, x_cl), wrap(gamma), wrap(beta)], [ym, mean, invstd], aux,
                   in_grad=[dx, dg, db])
    np.testing.assert_allclose(_read(dx, x_cl), nds[0].grad.asnumpy(), rtol=1e-3,
                               atol=1e-4)
    np.testing.assert_allclose(dg, nds[1].grad.asnumpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, nds[2].grad.asnumpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x_cl,y_cl", FLAGS)
def test_batchnorm_inference(x_cl, y_cl, bn_path):
    kw = dict(fix_gamma=False, eps=1e-3)
    p = get_op("BatchNorm").parse(kw)
    x, gamma, beta = _rand(2, 8, 3, 3), _rand(8, seed=1), _rand(8, seed=2)
    mm, mv = _rand(8, seed=3), np.abs(_rand(8, seed=4)) + 0.5
    want = mx.nd.BatchNorm(*[mx.nd.array(a) for a in (x, gamma, beta, mm, mv)],
                           **kw).asnumpy()
    ym = _as(np.zeros_like(x), y_cl)
    out = [ym, wrap(np.zeros(8, np.float32)), wrap(np.zeros(8, np.float32))]
    KC.bn_forward(_fwd_ctx([x_cl, False, False], [y_cl, False, False], is_train=False),
                  p, [_as(x, x_cl), wrap(gamma), wrap(beta)], [wrap(mm), wrap(mv)],
                  out=out)
    np.testing.assert_allclose(_read(ym, y_cl), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("accumulate", [False, True])
def test_bias_gradient_of_channels_last_data_sums_its_rows(monkeypatch, accumulate):
    seen = []

    def column_sums(cp, m, out):            # stands in for the CUDA kernel
        assert m.flags.c_contiguous and m.shape == (2 * 3 * 5, 16)
        seen.append(m.shape)
        out += np.asarray(m, np.float64).sum(axis=0).astype(np.float32)
        return True
    monkeypatch.setattr(K, "channel_sum", column_sums)
    dy = _rand(2, 16, 3, 5)
    db = wrap(_rand(16, seed=1))
    base = np.array(db)
    BIAS_GRADIENT(_logical(_cl_bytes(dy)), db, accumulate=accumulate)
    assert seen
    np.testing.assert_allclose(db, dy.sum(axis=(0, 2, 3)) + (base if accumulate else 0),
                               rtol=1e-5, atol=1e-5)


def test_batchnorm_on_channels_last_data_uses_the_persistent_mode(monkeypatch):
    cl = _logical(_cl_bytes(_rand(2, 8, 3, 3)))
    assert K.bn_mode(cl) == L.BATCHNORM_SPATIAL_PERSISTENT
    assert K.bn_mode(np.zeros((2, 8, 3, 3))) == L.BATCHNORM_SPATIAL
    monkeypatch.setenv("MXNET_CUDNN_BN_PERSISTENT", "0")
    assert K.bn_mode(cl) == L.BATCHNORM_SPATIAL


@pytest.mark.parametrize("name,kw,ok", [
    ("Convolution", dict(kernel=(3, 3), num_filter=8), True),
    ("Convolution", dict(kernel=(3, 3), num_filter=8, cudnn_off=True), False),
    ("Convolution", dict(kernel=(3, 3), num_filter=8, layout="NHWC"), False),
    ("Convolution", dict(kernel=(3, 3), num_filter=8, num_group=2), False),
    ("BatchNorm", dict(), True),
    ("BatchNorm", dict(axis=3), False),
    ("Pooling", dict(kernel=(2, 2), stride=(2, 2), pool_type="max"), True),
    ("Pooling", dict(kernel=(2, 2), pool_type="sum"), False),
])
def test_channels_last_capable(name, kw, ok):
    p = get_op(name).parse(kw)
    x = (2, 8, 6, 6)
    ins = [x] + ([(8, 8, 3, 3), (8,)] if name == "Convolution" else [(8,)] * 4)
    outs = [{"Convolution": (2, 8, 4, 4), "Pooling": (2, 8, 3, 3)}.get(name, x)]
    got = KC.channels_last_capable(name, p, ins, outs)
    assert got == (((0,), (0,)) if ok else None)
    # 5-D data (3-D convolution) stays plain
    assert KC.channels_last_capable(name, p, [(2, 8, 4, 6, 6)], [(2, 8, 4, 4, 4)]) is None


def test_descriptors_of_channels_last_views_are_nhwc():
    a = _logical(_cl_bytes(_rand(2, 16, 3, 5)))
    _, dims, strides = D.describe_tensor(LIB, D.tensor_of(LIB, a))
    assert dims == (2, 16, 3, 5) and strides == (240, 1, 80, 16)
    g = K.geometry((2, 16, 3, 5), (8, 16, 3, 3), (2, 8, 3, 5), (1, 1), (1, 1), (1, 1), 1,
                   np.float32, nhwc=True)
    assert g is not K.geometry((2, 16, 3, 5), (8, 16, 3, 3), (2, 8, 3, 5), (1, 1),
                               (1, 1), (1, 1), 1, np.float32)
    assert D.describe_filter(LIB, g.w)[1] == L.TENSOR_NHWC
    assert D.describe_tensor(LIB, g.y)[2] == D.nhwc_strides((2, 8, 3, 5))
    assert isinstance(wrap(np.zeros(1)), FakeArray)

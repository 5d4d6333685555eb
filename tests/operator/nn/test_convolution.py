"""Convolution against a direct-loop NumPy reference, numeric gradients, shape
inference and MXNet 1.9.1's golden cases."""
import itertools

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(7)


@pytest.mark.parametrize("case", fixture_cases_for("Convolution"))
def test_fixture(case):
    run_fixture_case(case)


# --- an independent reference: one output position at a time -------------------------
def out_size(size, k, s, d, p):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def ref_conv(x, w, b, stride, pad, dilate, groups):
    n, c = x.shape[:2]
    f, kernel = w.shape[0], w.shape[2:]
    sp = len(kernel)
    xpad = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in pad))
    osz = [out_size(x.shape[2 + i], kernel[i], stride[i], dilate[i], pad[i]) for i in range(sp)]
    y = np.zeros((n, f) + tuple(osz))
    cg, fg = c // groups, f // groups
    for o in itertools.product(*(range(v) for v in osz)):
        win = tuple(slice(o[i] * stride[i], o[i] * stride[i] + dilate[i] * (kernel[i] - 1) + 1,
                          dilate[i]) for i in range(sp))
        for j in range(f):
            g = j // fg
            patch = xpad[(slice(None), slice(g * cg, (g + 1) * cg)) + win]
            y[(slice(None), j) + o] = (patch * w[j]).reshape(n, -1).sum(axis=1)
    if b is not None:
        y += b.reshape((1, f) + (1,) * sp)
    return y


def ref_conv_grads(x, w, dy, stride, pad, dilate, groups):
    """d(sum(dy * conv(x, w)))/dx and /dw by scattering each output position back."""
    n, c = x.shape[:2]
    f, kernel = w.shape[0], w.shape[2:]
    sp = len(kernel)
    xpad = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in pad))
    dxpad, dw = np.zeros_like(xpad), np.zeros_like(w)
    cg, fg = c // groups, f // groups
    for o in itertools.product(*(range(v) for v in dy.shape[2:])):
        win = tuple(slice(o[i] * stride[i], o[i] * stride[i] + dilate[i] * (kernel[i] - 1) + 1,
                          dilate[i]) for i in range(sp))
        for j in range(f):
            g = j // fg
            cs = slice(g * cg, (g + 1) * cg)
            gy = dy[(slice(None), j) + o].reshape((n,) + (1,) * (sp + 1))
            dxpad[(slice(None), cs) + win] += gy * w[j]
            dw[j] += (gy * xpad[(slice(None), cs) + win]).sum(axis=0)
    crop = tuple(slice(p, p + s) for p, s in zip(pad, x.shape[2:]))
    return dxpad[(slice(None), slice(None)) + crop], dw


CONFIGS = [
    # data shape, num_filter, kernel, stride, dilate, pad, groups
    ((2, 3, 7, 7), 4, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 4, 7, 6), 6, (3, 2), (2, 1), (1, 2), (1, 0), 2),
    ((1, 3, 8, 8), 2, (2, 2), (3, 3), (1, 1), (2, 2), 1),
    ((2, 3, 9, 5), 4, (3, 3), (2, 3), (2, 1), (0, 3), 1),
    ((2, 4, 6, 6), 4, (3, 3), (1, 1), (1, 1), (1, 1), 4),      # depthwise
    ((2, 3, 5, 5), 4, (1, 1), (1, 1), (1, 1), (0, 0), 1),      # 1x1 (one GEMM, no columns)
    ((2, 4, 7, 6), 6, (1, 1), (2, 3), (1, 1), (0, 0), 2),      # strided, grouped 1x1
    ((3, 4, 5, 5), 2, (1, 1), (1, 1), (2, 2), (1, 0), 1),      # 1x1 padded: im2col
    ((2, 3, 5, 5), 2, (2, 2), (1, 1), (1, 1), (2, 2), 1),      # padded past the kernel
    ((2, 3, 9), 5, (1,), (2,), (1,), (0,), 1),                 # 1-D pointwise
    ((1, 2, 3, 4, 5), 4, (1, 1, 1), (1, 2, 2), (1, 1, 1), (0, 0, 0), 2),   # 3-D pointwise
    ((2, 3, 10), 4, (3,), (2,), (1,), (1,), 1),                # 1-D
    ((2, 4, 9), 2, (4,), (1,), (2,), (3,), 2),
    ((1, 2, 5, 4, 6), 3, (2, 3, 2), (1, 2, 2), (2, 1, 1), (1, 1, 0), 1),   # 3-D
]


@pytest.mark.parametrize("shape,nf,kernel,stride,dilate,pad,groups", CONFIGS)
@pytest.mark.parametrize("no_bias", [False, True])
def test_forward_backward_vs_reference(shape, nf, kernel, stride, dilate, pad, groups,
                                       no_bias):
    x = rs.randn(*shape)
    w = rs.randn(nf, shape[1] // groups, *kernel)
    b = None if no_bias else rs.randn(nf)
    kw = dict(kernel=kernel, stride=stride, dilate=dilate, pad=pad, num_filter=nf,
              num_group=groups, no_bias=no_bias)
    ins = [nd.array(x), nd.array(w)] + ([] if no_bias else [nd.array(b)])
    for a in ins:
        a.attach_grad()
    with mx.autograd.record():
        y = nd.Convolution(*ins, **kw)
    ref = ref_conv(x, w, b, stride, pad, dilate, groups)
    assert y.shape == ref.shape and y.dtype == np.float32
    assert_almost_equal(y.asnumpy(), ref, rtol=1e-4, atol=1e-4)
    dy = rs.randn(*ref.shape)
    y.backward(nd.array(dy))
    dx, dw = ref_conv_grads(x, w, dy, stride, pad, dilate, groups)
    assert_almost_equal(ins[0].grad.asnumpy(), dx, rtol=1e-4, atol=1e-4)
    assert_almost_equal(ins[1].grad.asnumpy(), dw, rtol=1e-4, atol=1e-4)
    if not no_bias:
        assert_almost_equal(ins[2].grad.asnumpy(), dy.sum(axis=(0,) + tuple(range(2, dy.ndim))),
                            rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,nf,kernel,stride,dilate,pad,groups", CONFIGS)
@pytest.mark.parametrize("gather_max", [0, 1 << 30])
def test_forward_by_gather_and_by_phase_split_buffer(monkeypatch, shape, nf, kernel, stride,
                                                     dilate, pad, groups, gather_max):
    # the NumPy body's two im2col routes (im2col.GATHER_MAX_COLUMNS picks by size),
    # each forced in turn, on float64 data (no oneDNN: it takes float32 only)
    from mxnet.operator.nn import im2col
    monkeypatch.setattr(im2col, "GATHER_MAX_COLUMNS", gather_max)
    x, w, b = rs.randn(*shape), rs.randn(nf, shape[1] // groups, *kernel), rs.randn(nf)
    y = nd.Convolution(nd.array(x, dtype="float64"), nd.array(w, dtype="float64"),
                       nd.array(b, dtype="float64"), kernel=kernel, stride=stride,
                       dilate=dilate, pad=pad, num_filter=nf, num_group=groups)
    assert_almost_equal(y.asnumpy(), ref_conv(x, w, b, stride, pad, dilate, groups),
                        rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape,nf,kernel,stride,dilate,pad,groups", CONFIGS)
@pytest.mark.parametrize("gather_max", [0, 1 << 30])
@pytest.mark.parametrize("need", [(True, True), (True, False), (False, True)])
def test_backward_by_gather_and_by_phase_split_buffer(monkeypatch, shape, nf, kernel, stride,
                                                      dilate, pad, groups, gather_max, need):
    from mxnet.operator.nn import im2col
    from mxnet.operator.nn.convolution import conv_windows
    from mxnet.operator.registry import OpContext
    monkeypatch.setattr(im2col, "GATHER_MAX_COLUMNS", gather_max)
    x, w = rs.randn(*shape), rs.randn(nf, shape[1] // groups, *kernel)
    p = mx.operator.registry.get_op("Convolution").parse(dict(
        kernel=kernel, stride=stride, dilate=dilate, pad=pad, num_filter=nf,
        num_group=groups))
    win = conv_windows(p, x.shape)
    dy = rs.randn(shape[0], nf, *win.out_size)
    ctx = OpContext(np, mx.cpu(), True, [need[0], need[1], True], [x.shape, w.shape])
    dx, dw, db = im2col.conv_backward(ctx, win, dy, x, w, groups, need_data=need[0],
                                      need_weight=need[1], need_bias=True, in_shape=x.shape)
    rdx, rdw = ref_conv_grads(x, w, dy, stride, pad, dilate, groups)
    assert (dx is None) != need[0] and (dw is None) != need[1]
    if need[0]:
        assert_almost_equal(dx, rdx, rtol=1e-10, atol=1e-10)
    if need[1]:
        assert_almost_equal(dw, rdw, rtol=1e-10, atol=1e-10)
    assert_almost_equal(db, dy.sum(axis=(0,) + tuple(range(2, dy.ndim))), rtol=1e-10,
                        atol=1e-10)


@pytest.mark.parametrize("shape,nf,kernel,stride,dilate,pad,groups", [
    ((2, 4, 5, 5), 4, (3, 3), (2, 1), (1, 1), (1, 1), 2),
    ((1, 2, 6), 2, (3,), (1,), (2,), (2,), 1),
    ((1, 2, 3, 4, 3), 2, (2, 2, 2), (1, 1, 2), (1, 1, 1), (0, 1, 1), 1),
])
def test_numeric_gradient(shape, nf, kernel, stride, dilate, pad, groups):
    kw = dict(kernel=kernel, stride=stride, dilate=dilate, pad=pad, num_filter=nf,
              num_group=groups)
    check_numeric_gradient(lambda x, w, b: nd.Convolution(x, w, b, **kw),
                           [rs.randn(*shape), rs.randn(nf, shape[1] // groups, *kernel),
                            rs.randn(nf)], numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_dtypes(dtype):
    x, w, b = rs.randn(2, 3, 6, 6), rs.randn(4, 3, 3, 3), rs.randn(4)
    y = nd.Convolution(nd.array(x, dtype=dtype), nd.array(w, dtype=dtype),
                       nd.array(b, dtype=dtype), kernel=(3, 3), pad=(1, 1), num_filter=4)
    assert y.dtype == dtype
    tol = 1e-2 if dtype == np.float16 else 1e-10
    xs, ws, bs = (a.astype(dtype).astype(np.float64) for a in (x, w, b))
    assert_almost_equal(y.asnumpy().astype(np.float64),
                        ref_conv(xs, ws, bs, (1, 1), (1, 1), (1, 1), 1), rtol=tol, atol=tol)


def test_batch_chunks_match_single_pass(monkeypatch):
    """Small column chunks (several GEMMs over the batch) give the same results."""
    from mxnet.operator.nn import im2col
    x, w, b = rs.randn(5, 3, 6, 6), rs.randn(4, 3, 3, 3), rs.randn(4)
    dy = rs.randn(5, 4, 3, 3)

    def run():
        ins = [nd.array(a) for a in (x, w, b)]
        for a in ins:
            a.attach_grad()
        with mx.autograd.record():
            y = nd.Convolution(*ins, kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=4)
        y.backward(nd.array(dy))
        return [y.asnumpy()] + [a.grad.asnumpy() for a in ins]

    whole = run()
    monkeypatch.setattr(im2col, "CHUNK_BYTES", 1)
    for a, b_ in zip(run(), whole):
        assert_almost_equal(a, b_, rtol=1e-5, atol=1e-5)


def test_only_weight_gradient():
    x, w = nd.array(rs.randn(2, 3, 5, 5)), nd.array(rs.randn(2, 3, 3, 3))
    w.attach_grad()
    with mx.autograd.record():
        y = nd.Convolution(x, w, kernel=(3, 3), num_filter=2, no_bias=True)
    y.backward()
    _, dw = ref_conv_grads(x.asnumpy().astype(np.float64), w.asnumpy().astype(np.float64),
                           np.ones(y.shape), (1, 1), (0, 0), (1, 1), 1)
    assert_almost_equal(w.grad.asnumpy(), dw, rtol=1e-4, atol=1e-4)


def test_symbol_infers_parameter_shapes():
    s = mx.sym.Convolution(mx.sym.var("data"), kernel=(3, 3), num_filter=6, num_group=3,
                           name="c")
    assert s.list_arguments() == ["data", "c_weight", "c_bias"]
    args, outs, _ = s.infer_shape(data=(2, 6, 7, 7))
    assert args == [(2, 6, 7, 7), (6, 2, 3, 3), (6,)] and outs == [(2, 6, 5, 5)]
    s = mx.sym.Convolution(mx.sym.var("data"), kernel=(3,), stride=(2,), pad=(1,),
                           num_filter=4, no_bias=True, name="c")
    assert s.list_arguments() == ["data", "c_weight"]
    args, outs, _ = s.infer_shape(data=(2, 3, 10))
    assert args == [(2, 3, 10), (4, 3, 3)] and outs == [(2, 4, 5)]


def test_parameters_ignored_on_cpu():
    x, w = nd.array(rs.randn(1, 2, 4, 4)), nd.array(rs.randn(2, 2, 3, 3))
    ref = nd.Convolution(x, w, kernel=(3, 3), num_filter=2, no_bias=True).asnumpy()
    y = nd.Convolution(x, w, kernel=(3, 3), num_filter=2, no_bias=True, workspace=1,
                       cudnn_tune="fastest", cudnn_off=True, layout="NCHW")
    assert_almost_equal(y.asnumpy(), ref)


@pytest.mark.parametrize("data,weight,kw,msg", [
    ((2, 3, 7, 7), (4, 3, 9, 9), dict(kernel=(9, 9)), "exceeds input"),
    ((2, 3, 7, 7), (4, 2, 3, 3), dict(kernel=(3, 3)), "weight"),
    # NHWC data (2, 3, 7, 7) has 7 channels: the weight must be (4, 3, 3, 7)
    ((2, 3, 7, 7), (4, 3, 3, 3), dict(kernel=(3, 3), layout="NHWC"), "weight"),
    ((2, 3, 7, 7), (4, 3, 3, 3), dict(kernel=(3, 3), layout="NCW"), "layout"),
    ((2, 3, 7, 7), (4, 3, 3), dict(kernel=(3,)), "3-D"),
    ((2, 3, 7, 7), (4, 3, 3, 3), dict(kernel=(3, 3), stride=(2,)), "stride"),
    ((2, 3, 7, 7), (4, 3, 3, 3), dict(kernel=(3, 3), dilate=(0, 0)), "dilate"),
    ((2, 3, 7, 7), (4, 1, 3, 3), dict(kernel=(3, 3), num_group=2), "divisible"),
    ((1, 1, 3, 3, 3, 3), (4, 1, 1, 1, 1, 1), dict(kernel=(1, 1, 1, 1)), "dimensions"),
])
def test_bad_parameters(data, weight, kw, msg):
    with pytest.raises(MXNetError, match=msg):
        nd.Convolution(nd.ones(data), nd.ones(weight), nd.ones(4), num_filter=4,
                       **kw).asnumpy()


def test_bad_bias_and_dtype():
    with pytest.raises(MXNetError, match="bias"):
        nd.Convolution(nd.ones((1, 3, 5, 5)), nd.ones((4, 3, 3, 3)), nd.ones(5),
                       kernel=(3, 3), num_filter=4)
    with pytest.raises(MXNetError, match="dtype"):
        nd.Convolution(nd.ones((1, 3, 5, 5), dtype="float64"), nd.ones((4, 3, 3, 3)),
                       nd.ones(4), kernel=(3, 3), num_filter=4)


@pytest.mark.parametrize("groups", [1, 2])
def test_batch_parallel_split_matches_serial(monkeypatch, groups):
    """Large convolutions split their batch over threads; the joined data gradient and
    the summed weight/bias gradients equal the single-thread result."""
    from mxnet.operator import kernels_cpu
    rng = np.random.RandomState(3)
    x = rng.standard_normal((5, 4, 9, 8)).astype(np.float32)
    w = rng.standard_normal((6, 4 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    head = rng.standard_normal((5, 6, 9, 8)).astype(np.float32)

    def run():
        xs = [mx.nd.array(a) for a in (x, w, b)]
        for a in xs:
            a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.Convolution(*xs, kernel=(3, 3), pad=(1, 1), num_filter=6,
                                  num_group=groups)
        y.backward(mx.nd.array(head))
        return [y.asnumpy()] + [a.grad.asnumpy() for a in xs]
    monkeypatch.setattr(kernels_cpu, "PARALLEL_MIN_WORK", 1 << 62)
    serial = run()
    monkeypatch.setattr(kernels_cpu, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(kernels_cpu.parallel, "_THREADS", 3)
    split = run()
    for s, p in zip(serial, split):
        np.testing.assert_allclose(p, s, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout,data,kernel", [
    ("NHWC", (2, 6, 7, 4), (3, 2)), ("NDHWC", (1, 5, 4, 6, 2), (2, 3, 3))])
def test_channel_last_layouts_match_channel_first(layout, data, kernel):
    """NHWC/NDHWC (MXNet's GPU layouts; its Convolution has no NWC): data (N, *s, C),
    weight (F, *k, C/g),
    against the channel-first convolution of the moved arrays, forward and gradients."""
    rs = np.random.RandomState(3)
    nd_ = len(kernel)
    c, f = data[-1], 4
    groups = 2 if c % 2 == 0 else 1
    x = rs.randn(*data)
    w = rs.randn(f, *kernel, c // groups)
    b = rs.randn(f)
    kw = dict(kernel=kernel, num_filter=f, num_group=groups, pad=(1,) * nd_)
    first = lambda a: np.moveaxis(a, -1, 1)  # noqa: E731
    last = lambda a: np.moveaxis(a, 1, -1)   # noqa: E731
    runs = []
    for lay, xs, ws in ((layout, x, w), (None, first(x), first(w))):
        arrs = [nd.array(a) for a in (xs, ws, b)]
        for a in arrs:
            a.attach_grad()
        with mx.autograd.record():
            y = nd.Convolution(*arrs, layout=lay, **kw) if lay else \
                nd.Convolution(*arrs, **kw)
            (y * y).sum().backward()
        runs.append([y.asnumpy()] + [a.grad.asnumpy() for a in arrs])
    (y_l, dx_l, dw_l, db_l), (y_f, dx_f, dw_f, db_f) = runs
    assert_almost_equal(y_l, last(y_f), rtol=1e-5, atol=1e-5)
    assert_almost_equal(dx_l, last(dx_f), rtol=1e-5, atol=1e-5)
    assert_almost_equal(dw_l, last(dw_f), rtol=1e-5, atol=1e-5)
    assert_almost_equal(db_l, db_f, rtol=1e-5, atol=1e-5)
    sym = mx.sym.Convolution(mx.sym.var("d"), layout=layout, **kw)
    args, outs, _ = sym.infer_shape(d=data)
    assert args[1] == (f, *kernel, c // groups) and outs[0] == y_l.shape


@pytest.mark.parametrize("size,kernel,stride,dilate,pad,filters,expected", [
    (7, (3, 3), (1, 1), (1, 1), (1, 1), 4, (1, 1)),     # 'same': dy padded as x was
    (7, (3, 3), (1, 1), (1, 1), (0, 0), 4, (2, 2)),     # 'valid': dy padded fully
    (7, (3,), (1,), (2,), (1,), 4, (3,)),               # dilated: dilate*(k-1) - pad
    (7, (2, 2), (1, 1), (1, 1), (2, 2), 4, None),       # padded past the kernel: col2im
    (7, (3, 3), (2, 2), (1, 1), (1, 1), 4, None),       # strided: col2im
    (16, (16, 16), (1, 1), (1, 1), (0, 0), 4, None),    # kernel as large as the image
    (7, (3, 3), (1, 1), (1, 1), (1, 1), 64, None),      # 4 -> 64 channels: columns 16x
])
def test_data_gradient_by_correlation_where_it_applies(size, kernel, stride, dilate, pad,
                                                       filters, expected):
    """With stride 1 the data gradient is a forward correlation of dy (padded by
    dilate*(kernel-1) - pad) whose output is x's size, unless its columns or GEMM
    would be much larger than col2im's; the reference tests above check its
    values."""
    from mxnet.operator.nn import im2col
    in_size = (size,) * len(kernel)
    out = tuple(out_size(i, k, s, d, p)
                for i, k, s, d, p in zip(in_size, kernel, stride, dilate, pad))
    win = im2col.windows(in_size, kernel, stride, dilate, pad, out, True)
    corr = im2col._correlation_windows(win, 4, filters)
    if expected is None:
        assert corr is None
    else:
        assert corr.pad == expected and corr.out_size == in_size and corr.in_size == out


def _params(kernel, pad):
    from mxnet.operator.registry import get_op
    return get_op("Convolution").parse({"kernel": kernel, "pad": pad, "num_filter": 16,
                                        "no_bias": True})


def test_pointwise_convolution_has_its_own_break_even():
    """A 1x1 unpadded convolution's NumPy body is one GEMM: oneDNN (with its layout
    reorders) takes it only from a larger size than other convolutions."""
    from mxnet.backend import onednn
    from mxnet.operator.kernels_onednn import MIN_WORK, blocked_capable
    if not onednn.available():
        pytest.skip("oneDNN (libdnnl) absent")
    assert MIN_WORK["Convolution1x1"] > MIN_WORK["Convolution"]
    data, work = (2, 64, 8, 8), 2 * 64 * 64 * 16        # between the two break-evens
    assert MIN_WORK["Convolution"] <= work < MIN_WORK["Convolution1x1"]
    pointwise = _params((1, 1), ())
    padded = _params((1, 1), (1, 1))
    assert blocked_capable("Convolution", pointwise, [data, (16, 64, 1, 1)],
                           [(2, 16, 8, 8)]) is None
    assert blocked_capable("Convolution", padded, [data, (16, 64, 1, 1)],
                           [(2, 16, 10, 10)]) is not None

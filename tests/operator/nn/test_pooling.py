"""Pooling (max/avg/sum/lp, valid/full, global, 1-D to 3-D) against a loop reference of
MXNet's rules, numeric gradients, tie-breaking, errors and the golden cases."""
import itertools
import math

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(9)


@pytest.mark.parametrize("case", fixture_cases_for("Pooling"))
def test_fixture(case):
    run_fixture_case(case)


def ref_pool(x, kernel, stride, pad, pool_type, convention="valid", include_pad=True, p=2,
             dy=None):
    """Output (and, given dy, the input gradient) by visiting each window; windows are
    clipped at the end of the padded input, as MXNet's CPU kernels do."""
    sp = x.ndim - 2
    size = x.shape[2:]
    rnd = math.ceil if convention == "full" else math.floor
    osz = [rnd((size[i] + 2 * pad[i] - kernel[i]) / stride[i]) + 1 for i in range(sp)]
    y = np.zeros(x.shape[:2] + tuple(osz))
    dx = np.zeros_like(x)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*(range(v) for v in osz)):
            start = [o[i] * stride[i] - pad[i] for i in range(sp)]
            end = [min(start[i] + kernel[i], size[i] + pad[i]) for i in range(sp)]
            lo = [max(s, 0) for s in start]
            hi = [min(e, size[i]) for i, e in enumerate(end)]
            region = x[(n, c) + tuple(slice(a, b) for a, b in zip(lo, hi))]
            sl = (n, c) + tuple(slice(a, b) for a, b in zip(lo, hi))
            g = 0 if dy is None else dy[(n, c) + o]
            if pool_type == "max":
                if region.size == 0:
                    y[(n, c) + o] = np.finfo(np.float32).min
                    continue
                y[(n, c) + o] = region.max()
                first = np.unravel_index(np.argmax(region), region.shape)
                dx[(n, c) + tuple(a + f for a, f in zip(lo, first))] += g
            elif pool_type in ("avg", "sum"):
                div = 1
                if pool_type == "avg":
                    ext = zip(start, end) if include_pad else zip(lo, hi)
                    div = max(int(np.prod([b - a for a, b in ext])), 1)
                y[(n, c) + o] = region.sum() / div
                dx[sl] += g / div
            else:
                s = (region ** p).sum()
                y[(n, c) + o] = s ** (1.0 / p) if p != 3 else np.cbrt(s)
                if region.size:
                    dx[sl] += g * region ** (p - 1) / y[(n, c) + o] ** (p - 1)
    return y, dx


@pytest.mark.parametrize("shape, kernel, layout", [
    ((2, 9, 3), (3,), "NWC"), ((2, 7, 6, 3), (3, 2), "NHWC"),
    ((1, 4, 5, 4, 2), (2, 3, 2), "NDHWC")])
@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_channel_last_layouts(shape, kernel, layout, pool_type):
    # the loop reference works channel-first: move the channel axis there and back
    x = rs.randn(*shape)
    nsp = len(kernel)
    stride, pad = (2,) * nsp, (1,) * nsp
    first = np.moveaxis(x, -1, 1)
    dy_first = rs.randn(*ref_pool(first, kernel, stride, pad, pool_type)[0].shape)
    y_ref, dx_ref = ref_pool(first, kernel, stride, pad, pool_type, dy=dy_first)
    xa = nd.array(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = nd.Pooling(xa, kernel=kernel, stride=stride, pad=pad, pool_type=pool_type,
                       layout=layout)
    y.backward(nd.array(np.moveaxis(dy_first, 1, -1)))
    assert_almost_equal(y.asnumpy(), np.moveaxis(y_ref, 1, -1), rtol=1e-5, atol=1e-6)
    assert_almost_equal(xa.grad.asnumpy(), np.moveaxis(dx_ref, 1, -1), rtol=1e-5, atol=1e-6)
    s = mx.sym.Pooling(mx.sym.var("data"), kernel=kernel, stride=stride, pad=pad,
                       pool_type=pool_type, layout=layout)
    assert s.infer_shape(data=shape)[1] == [y.shape]


CONFIGS = [
    # shape, kernel, stride, pad, convention
    ((2, 2, 6, 6), (2, 2), (2, 2), (0, 0), "valid"),
    ((2, 2, 7, 7), (3, 3), (2, 2), (1, 1), "valid"),
    ((1, 2, 7, 6), (3, 2), (1, 3), (0, 1), "full"),
    ((1, 2, 7, 7), (2, 2), (2, 2), (1, 1), "full"),       # a window wholly in padding
    ((1, 2, 8, 8), (3, 3), (2, 2), (1, 1), "full"),
    ((2, 3, 9), (3,), (2,), (1,), "valid"),
    ((1, 2, 4, 5, 4), (2, 3, 2), (2, 1, 2), (1, 0, 1), "valid"),
]


@pytest.mark.parametrize("shape,kernel,stride,pad,convention", CONFIGS)
@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_forward_backward_vs_reference(shape, kernel, stride, pad, convention, pool_type):
    x = rs.randn(*shape)
    xa = nd.array(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = nd.Pooling(xa, kernel=kernel, stride=stride, pad=pad, pool_type=pool_type,
                       pooling_convention=convention)
    dy = rs.randn(*y.shape)
    y.backward(nd.array(dy))
    ref, dref = ref_pool(x.astype(np.float32).astype(np.float64), kernel, stride, pad,
                         pool_type, convention, dy=dy)
    assert y.shape == ref.shape
    assert_almost_equal(y.asnumpy(), ref, rtol=1e-5, atol=1e-5)
    assert_almost_equal(xa.grad.asnumpy(), dref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("chunk_samples", [1, 2])
@pytest.mark.parametrize("shape,kernel,stride,pad,convention", CONFIGS[1:3] + CONFIGS[4:6])
@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_batch_chunks(monkeypatch, chunk_samples, shape, kernel, stride, pad, convention,
                      pool_type):
    """The padded-buffer paths run a few samples at a time; a batch of 5 split into
    chunks of 1 or 2 (the last one partial) gives the loop reference's results."""
    from mxnet.operator.nn import pooling
    from mxnet.operator.nn.im2col import windows
    shape = (5,) + shape[1:]
    sp = len(kernel)
    rnd = math.ceil if convention == "full" else math.floor
    out = tuple(rnd((shape[2 + i] + 2 * pad[i] - kernel[i]) / stride[i]) + 1
                for i in range(sp))
    win = windows(shape[2:], kernel, stride, (1,) * sp, pad, out)
    per = win.nphase * shape[1] * win.buflen * 4
    monkeypatch.setattr(pooling, "_CHUNK_BYTES", per * chunk_samples)
    x = rs.randn(*shape)
    x[0, 0].flat[:4] = 1.0                 # ties: the first maximum takes the gradient
    xa = nd.array(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = nd.Pooling(xa, kernel=kernel, stride=stride, pad=pad, pool_type=pool_type,
                       pooling_convention=convention)
    dy = rs.randn(*y.shape)
    y.backward(nd.array(dy))
    ref, dref = ref_pool(x.astype(np.float32).astype(np.float64), kernel, stride, pad,
                         pool_type, convention, dy=dy)
    assert_almost_equal(y.asnumpy(), ref, rtol=1e-5, atol=1e-5)
    assert_almost_equal(xa.grad.asnumpy(), dref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("convention", ["valid", "full"])
def test_avg_count_include_pad(include_pad, convention):
    x = rs.randn(2, 2, 8, 7)
    y = nd.Pooling(nd.array(x), kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                   pooling_convention=convention, count_include_pad=include_pad)
    ref, _ = ref_pool(x, (3, 3), (2, 2), (1, 1), "avg", convention, include_pad)
    assert_almost_equal(y.asnumpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp(p):
    x = rs.uniform(0.5, 2.0, (2, 2, 6, 6))
    xa = nd.array(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = nd.Pooling(xa, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="lp",
                       p_value=p)
    dy = rs.randn(*y.shape)
    y.backward(nd.array(dy))
    ref, dref = ref_pool(x, (3, 3), (2, 2), (1, 1), "lp", p=p, dy=dy)
    assert_almost_equal(y.asnumpy(), ref, rtol=1e-4, atol=1e-5)
    assert_almost_equal(xa.grad.asnumpy(), dref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("pool_type,extra", [("max", {}), ("avg", {}), ("sum", {}),
                                             ("lp", dict(p_value=2))])
def test_numeric_gradient(pool_type, extra):
    x = rs.permutation(72).reshape(1, 2, 6, 6) / 10.0 + 0.5     # distinct: no ties
    check_numeric_gradient(
        lambda a: nd.Pooling(a, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                             pool_type=pool_type, **extra), [x], rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum", "lp"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (2, 3, 7), (1, 2, 3, 4, 2)])
def test_global(pool_type, shape):
    x = rs.uniform(0.5, 2.0, shape)
    xa = nd.array(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = nd.Pooling(xa, kernel=(1,) * (len(shape) - 2), global_pool=True,
                       pool_type=pool_type, p_value=2, stride=(3,) * (len(shape) - 2))
    dy = rs.randn(*y.shape)
    y.backward(nd.array(dy))
    ref, dref = ref_pool(x, shape[2:], (1,) * (len(shape) - 2), (0,) * (len(shape) - 2),
                         pool_type, p=2, dy=dy)
    assert y.shape == shape[:2] + (1,) * (len(shape) - 2)
    assert_almost_equal(y.asnumpy(), ref, rtol=1e-5, atol=1e-5)
    assert_almost_equal(xa.grad.asnumpy(), dref, rtol=1e-5, atol=1e-5)


def test_max_gradient_goes_to_first_maximum():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = 5      # a tie inside overlapping windows
    xa = nd.array(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = nd.Pooling(xa, kernel=(3, 3), stride=(1, 1), pool_type="max")
    y.backward()
    _, dref = ref_pool(x, (3, 3), (1, 1), (0, 0), "max", dy=np.ones(y.shape))
    assert_almost_equal(xa.grad.asnumpy(), dref)
    assert xa.grad.asnumpy().sum() == 4


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_dtypes(dtype):
    x = rs.randint(-5, 5, (1, 2, 4, 4))
    for pool_type in ("max", "sum"):
        y = nd.Pooling(nd.array(x, dtype=dtype), kernel=(2, 2), stride=(2, 2),
                       pool_type=pool_type)
        assert y.dtype == dtype
        ref, _ = ref_pool(x.astype(np.float64), (2, 2), (2, 2), (0, 0), pool_type)
        assert_almost_equal(y.asnumpy().astype(np.float64), ref)


def test_integer_data_is_refused():
    # MXNet 1.9.1 pools floating point data only (MXNetError for int32)
    with pytest.raises(mx.base.MXNetError):
        nd.Pooling(nd.ones((1, 2, 4, 4), dtype="int32"), kernel=(2, 2)).wait_to_read()


@pytest.mark.parametrize("kernel,pad", [((2, 2), (2, 2)), ((2, 3), (2, 1)), ((3,), (3,))])
def test_pad_must_be_smaller_than_kernel(kernel, pad):
    # MXNet 1.9.1 refuses pad >= kernel in any dimension (a window of padding only)
    x = nd.ones((1, 1, 5, 7)) if len(kernel) == 2 else nd.ones((1, 1, 5))
    for pool_type in ("max", "avg"):
        with pytest.raises(mx.base.MXNetError):
            nd.Pooling(x, kernel=kernel, pad=pad, pool_type=pool_type).wait_to_read()
    # pad = kernel - 1 is fine: 2x2 windows over 5x7 padded by 1 -> 6x8
    assert nd.Pooling(nd.ones((1, 1, 5, 7)), kernel=(2, 2), pad=(1, 1)).shape == (1, 1, 6, 8)


def test_symbol_shape():
    s = mx.sym.Pooling(mx.sym.var("data"), kernel=(3, 3), stride=(2, 2),
                       pooling_convention="full")
    assert s.list_arguments() == ["data"]
    _, outs, _ = s.infer_shape(data=(2, 3, 6, 6))
    assert outs == [(2, 3, 3, 3)]


@pytest.mark.parametrize("shape,kw,msg", [
    ((2, 3, 7, 7), dict(kernel=(8, 8)), "exceeds"),
    ((2, 3, 7, 7), dict(kernel=(2,)), "kernel"),
    ((2, 3, 7, 7), dict(), "kernel"),
    ((2, 3, 7, 7), dict(kernel=(2, 2), stride=(2,)), "stride"),
    ((2, 3, 7, 7), dict(kernel=(2, 2), pool_type="lp"), "p_value"),
    ((2, 3, 7, 7), dict(kernel=(2, 2), layout="NWC"), "layout"),
    ((2, 3, 7, 7), dict(kernel=(2, 2), pooling_convention="same"), "1-D"),
    ((2, 3, 7), dict(kernel=(2,), pad=(1,), pooling_convention="same"), "pad"),
    ((3, 7), dict(kernel=(2,)), "3-D"),
    ((1, 1, 2, 2, 2, 2), dict(kernel=(2, 2, 2, 2)), "3-D"),
])
def test_bad_parameters(shape, kw, msg):
    with pytest.raises(MXNetError, match=msg):
        nd.Pooling(nd.ones(shape), **kw).asnumpy()


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
@pytest.mark.parametrize("n,k,s", [(10, 2, 2), (11, 2, 2), (11, 3, 2), (7, 2, 3)])
def test_same_convention_1d(pool_type, n, k, s):
    # MXNet 1.9.1's 'same': ceil(n / s) windows from 0, clipped at the input's end
    x = np.random.RandomState(0).randn(2, 3, n).astype(np.float32)
    reduce = {"max": np.max, "avg": np.mean, "sum": np.sum}[pool_type]
    want = np.stack([reduce(x[:, :, i * s:i * s + k], axis=2)
                     for i in range(-(-n // s))], axis=2)
    got = nd.Pooling(nd.array(x), kernel=(k,), stride=(s,), pad=(0, 0, 0),
                     pool_type=pool_type, pooling_convention="same")
    assert_almost_equal(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pool_type,p_value", [("avg", 2), ("sum", 2), ("lp", 2), ("lp", 3)])
def test_float16_sums_accumulate_in_float32(pool_type, p_value):
    """As MXNet's kernels (AccType): float16 avg/sum/lp pooling and their gradients are
    the float32 results rounded once, so no window sum rounds to 0 or overflows
    (MXNet's test_pooling_versions compares float16 runs with NaN unequal)."""
    rs = np.random.RandomState(5)
    x = (rs.normal(size=(3, 2, 12, 12)) * 3).astype(np.float16)   # both runs: same values
    dy_shape = None
    res = {}
    for dt in (np.float16, np.float32):
        xd = mx.nd.array(x, dtype=dt)
        xd.attach_grad()
        with mx.autograd.record():
            y = mx.nd.Pooling(xd, kernel=(4, 5), stride=(2, 1), pool_type=pool_type,
                              p_value=p_value, pooling_convention="full")
        dy_shape = y.shape
        y.backward(mx.nd.array(np.ones(dy_shape) * 0.5, dtype=dt))
        res[dt] = (y.asnumpy(), xd.grad.asnumpy())
    (y16, g16), (y32, g32) = res[np.float16], res[np.float32]
    assert y16.dtype == g16.dtype == np.float16
    assert np.isfinite(y16).all() and np.isfinite(g16).all()
    np.testing.assert_array_equal(y16, y32.astype(np.float16))
    # the gradient reads the float16-rounded output: one float16 rounding apart
    np.testing.assert_allclose(g16.astype(np.float32), g32, rtol=2e-3, atol=1e-3)


def test_float16_max_gradient_accumulates_in_float32(gpu):
    """Max pooling's gradient adds dy over every window an element is the maximum of
    (up to a hundred for overlapping 3-D windows); in float16 that sum drifted ~1 %
    from the CPU's (whose float16 calls run in float32), failing MXNet's
    test_pooling_versions on a GPU with cudnn_off. The operator body (what a GPU runs
    with cudnn_off; emulated here without one) now rounds the float32 sum once."""
    rs = np.random.RandomState(0)
    x = rs.normal(0, 10, (1, 2, 12, 12, 12)).astype(np.float16)
    kw = dict(kernel=(3, 5, 7), pad=(1, 2, 3), stride=(1, 1, 1), pool_type="max")
    grads = {}
    for name, ctx, dt, extra in (("ref", mx.cpu(), np.float64, {}),
                                 ("gpu", gpu, np.float16, {"cudnn_off": True})):
        xd = nd.array(x, ctx=ctx, dtype=dt)
        xd.attach_grad()
        with mx.autograd.record():
            y = nd.Pooling(xd, **kw, **extra)
        dy = np.random.RandomState(1).normal(0, 10, y.shape).astype(np.float16)
        y.backward(nd.array(dy, ctx=ctx, dtype=dt))
        grads[name] = xd.grad.asnumpy().astype(np.float64)
    # one float16 rounding of the exact sum (dy is exact in both runs)
    np.testing.assert_allclose(grads["gpu"], grads["ref"], rtol=2 ** -11, atol=1e-3)

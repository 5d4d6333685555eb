"""UpSampling (nearest with several inputs, bilinear through a weight) and Pad
(constant/edge/reflect) against NumPy references, numeric gradients, errors and the
golden cases."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(13)


@pytest.mark.parametrize("case", fixture_cases_for("UpSampling", "Pad", "pad"))
def test_fixture(case):
    run_fixture_case(case)


# --- UpSampling --------------------------------------------------------------------------
def ref_nearest(xs, scale, mode):
    oh = xs[0].shape[2] * scale
    ups = [x.repeat(oh // x.shape[2], axis=2).repeat(oh // x.shape[2], axis=3) for x in xs]
    return sum(ups) if mode == "sum" else np.concatenate(ups, axis=1)


@pytest.mark.parametrize("shapes,scale,mode", [
    ([(2, 3, 3, 4)], 2, "concat"),
    ([(1, 2, 2, 3)], 3, "concat"),
    ([(2, 2, 3, 3), (2, 1, 6, 6), (2, 3, 1, 1)], 2, "concat"),
    ([(2, 2, 3, 3), (2, 2, 1, 1), (2, 2, 6, 6)], 2, "sum"),
])
def test_nearest(shapes, scale, mode):
    xs = [rs.randn(*s) for s in shapes]
    ins = [nd.array(x) for x in xs]
    for a in ins:
        a.attach_grad()
    with mx.autograd.record():
        y = nd.UpSampling(*ins, scale=scale, sample_type="nearest", multi_input_mode=mode)
    ref = ref_nearest(xs, scale, mode)
    assert_almost_equal(y.asnumpy(), ref, rtol=1e-6, atol=1e-6)
    check_numeric_gradient(
        lambda *a: nd.UpSampling(*a, scale=scale, sample_type="nearest",
                                 multi_input_mode=mode),
        [x[:1, :, :, :] for x in xs], rtol=1e-2, atol=1e-3)


def ref_bilinear(x, w, scale):
    """The transposed convolution MXNet's bilinear upsampling is, written as a scatter."""
    n, c, h, wd = x.shape
    k = w.shape[2]
    pad = int(np.ceil((scale - 1) / 2))
    full = np.zeros((n, c, (h - 1) * scale + k, (wd - 1) * scale + k))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * scale:i * scale + k, j * scale:j * scale + k] += \
                x[:, :, i:i + 1, j:j + 1] * w[None, :, 0]
    return full[:, :, pad:pad + h * scale, pad:pad + wd * scale]


@pytest.mark.parametrize("scale", [1, 2, 3, 4])
def test_bilinear(scale):
    k = 2 * scale - scale % 2
    x, w = rs.randn(2, 3, 3, 4), rs.randn(3, 1, k, k)
    y = nd.UpSampling(nd.array(x), nd.array(w), scale=scale, sample_type="bilinear",
                      num_filter=3)
    assert y.shape == (2, 3, 3 * scale, 4 * scale)
    assert_almost_equal(y.asnumpy(), ref_bilinear(x, w, scale), rtol=1e-4, atol=1e-4)
    check_numeric_gradient(
        lambda a, b: nd.UpSampling(a, b, scale=scale, sample_type="bilinear", num_filter=2),
        [x[:1, :2, :2, :3], w[:2]], rtol=1e-2, atol=1e-3)


def test_upsampling_symbol_shapes():
    s = mx.sym.UpSampling(mx.sym.var("x"), mx.sym.var("y"), scale=2, sample_type="nearest")
    assert s.list_arguments() == ["x", "y"]
    _, outs, _ = s.infer_shape(x=(1, 2, 3, 3), y=(1, 3, 6, 6))
    assert outs == [(1, 5, 6, 6)]
    s = mx.sym.UpSampling(mx.sym.var("d"), mx.sym.var("w"), scale=2, sample_type="bilinear",
                          num_filter=2)
    args, outs, _ = s.infer_shape(d=(1, 2, 3, 3))
    assert args == [(1, 2, 3, 3), (2, 1, 4, 4)] and outs == [(1, 2, 6, 6)]


@pytest.mark.parametrize("shapes,kw,msg", [
    ([(1, 2, 3, 3), (1, 3, 6, 6)], dict(multi_input_mode="sum"), "channels"),
    ([(1, 2, 3, 3), (1, 3, 4, 4)], {}, "integer factor"),
    ([(1, 2, 3)], {}, "4-D"),
    ([(1, 2, 3, 3), (1, 2, 3, 3, 3)], {}, "4-D"),
])
def test_nearest_errors(shapes, kw, msg):
    with pytest.raises(MXNetError, match=msg):
        nd.UpSampling(*[nd.ones(s) for s in shapes], scale=2, sample_type="nearest", **kw)


def test_bilinear_errors():
    with pytest.raises(MXNetError, match="weight"):
        nd.UpSampling(nd.ones((1, 2, 3, 3)), nd.ones((2, 1, 3, 3)), scale=2,
                      sample_type="bilinear", num_filter=2)
    with pytest.raises(MXNetError, match="2 inputs"):
        nd.UpSampling(nd.ones((1, 2, 3, 3)), scale=2, sample_type="bilinear", num_filter=2)
    with pytest.raises(MXNetError, match="scale"):
        nd.UpSampling(nd.ones((1, 2, 3, 3)), scale=0, sample_type="nearest")


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_upsampling_takes_floating_point_data_only(dtype):
    # MXNet 1.9.1: "This operation only support floating point types" (oracle)
    with pytest.raises(MXNetError):
        nd.UpSampling(nd.ones((1, 1, 2, 2), dtype=dtype), scale=2,
                      sample_type="nearest").wait_to_read()
    for ok in ("float16", "float64"):
        y = nd.UpSampling(nd.ones((1, 1, 2, 2), dtype=ok), scale=2, sample_type="nearest")
        assert y.dtype == np.dtype(ok) and y.shape == (1, 1, 4, 4)


@pytest.mark.parametrize("num_filter", [None, 1, 4])
def test_bilinear_num_filter_must_match_channels(num_filter):
    # MXNet 1.9.1 fails for any num_filter but the channel count (a shape check, or a
    # crash for the default 0); only num_filter=C computes
    kw = {} if num_filter is None else dict(num_filter=num_filter)
    with pytest.raises(MXNetError):
        nd.UpSampling(nd.ones((1, 2, 2, 2)), nd.ones((2, 1, 4, 4)), scale=2,
                      sample_type="bilinear", **kw)
    assert nd.UpSampling(nd.ones((1, 2, 2, 2)), nd.ones((2, 1, 4, 4)), scale=2,
                         sample_type="bilinear", num_filter=2).shape == (1, 2, 4, 4)


# --- Pad ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("shape,pw", [((2, 3, 4, 5), (0, 0, 0, 0, 1, 2, 3, 1)),
                                      ((1, 2, 3, 4, 3), (0, 0, 0, 0, 1, 2, 3, 1, 2, 2)),
                                      ((1, 1, 4, 5), (0, 0, 0, 0, 3, 3, 0, 4))])
def test_pad(mode, shape, pw):
    x = rs.randn(*shape)
    kw = dict(constant_values=1.5) if mode == "constant" else {}
    ref = np.pad(x, [(pw[2 * i], pw[2 * i + 1]) for i in range(len(shape))], mode=mode, **kw)
    extra = dict(constant_value=1.5) if mode == "constant" else {}
    y = nd.Pad(nd.array(x), mode=mode, pad_width=pw, **extra)
    assert_almost_equal(y.asnumpy(), ref, rtol=1e-6, atol=1e-6)
    check_numeric_gradient(lambda a: nd.pad(a, mode=mode, pad_width=pw, **extra), [x],
                           rtol=1e-2, atol=1e-3)


def test_pad_float64():
    x = rs.randn(1, 1, 3, 3)
    y = nd.Pad(nd.array(x, dtype=np.float64), mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 1, 1))
    assert y.dtype == np.float64
    assert_almost_equal(y.asnumpy(), np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], "edge"))


@pytest.mark.parametrize("shape,kw,msg", [
    ((3, 4), dict(mode="constant", pad_width=(1, 1, 1, 1)), "4-D and 5-D"),
    ((1, 2, 3, 3), dict(mode="constant", pad_width=(1, 1, 0, 0, 1, 1, 1, 1)), "first two"),
    ((1, 2, 3, 3), dict(mode="constant", pad_width=(0, 0, 1, 1)), "2\\*ndim"),
    ((1, 2, 3, 3), dict(mode="reflect", pad_width=(0, 0, 0, 0, 3, 0, 1, 1)), "smaller"),
])
def test_pad_errors(shape, kw, msg):
    with pytest.raises(MXNetError, match=msg):
        nd.Pad(nd.ones(shape), **kw)


def test_pad_integer_rejected():
    with pytest.raises(MXNetError, match="floating"):
        nd.Pad(nd.ones((1, 1, 2, 2), dtype="int32"), mode="constant",
               pad_width=(0, 0, 0, 0, 1, 1, 1, 1))

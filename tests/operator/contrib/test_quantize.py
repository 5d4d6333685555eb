"""quantize / quantize_v2 / dequantize: formulas, round trips within quantization error,
dtypes and errors (values are also compared with MXNet 1.9.1 fixtures)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal

nd = mx.nd


@pytest.mark.parametrize("out_type", ["int8", "uint8"])
def test_round_trip_within_one_step(out_type):
    rng = np.random.RandomState(0)
    x = rng.uniform(-2, 3, (50,)).astype(np.float32)
    if out_type == "uint8":
        x = np.abs(x)
    q, lo, hi = nd.contrib.quantize_v2(nd.array(x), out_type=out_type)
    assert q.dtype == np.dtype(out_type) and lo.shape == (1,) and hi.dtype == np.float32
    back = nd.contrib.dequantize(q, lo, hi).asnumpy()
    real = np.abs(x).max()
    step = real / (127.5 if out_type == "int8" else 255.5)
    assert np.abs(back - x).max() <= step * 0.51 + 1e-6


def test_quantize_v1_formula():
    x = np.array([2.99, 1.5, -0.3, 0.0, -2.99, 0.2], np.float32)
    q, lo, hi = nd.contrib.quantize(nd.array(x), nd.array([-1.0]), nd.array([3.0]),
                                    out_type="int8")
    want = np.sign(x) * np.minimum(np.floor(np.abs(x) * np.float32(127 / 3) + 0.5), 127)
    assert q.asnumpy().tolist() == want.astype(np.int8).tolist()
    assert lo.asnumpy().tolist() == [-3.0] and hi.asnumpy().tolist() == [3.0]
    q, lo, hi = nd.contrib.quantize(nd.array(x), nd.array([-1.0]), nd.array([3.0]))
    assert q.dtype == np.uint8 and q.asnumpy().tolist() == [254, 128, 0, 0, 0, 17]
    assert lo.asnumpy().tolist() == [-1.0]


def test_quantize_v2_calibration_and_auto():
    x = nd.array([-3.0, -0.01, 0.2, 2.2])
    q, lo, hi = nd.contrib.quantize_v2(x, min_calib_range=-1.0, max_calib_range=2.0)
    assert q.asnumpy().tolist() == [-128, -1, 13, 127]      # saturates at -128
    assert (lo.asnumpy().tolist(), hi.asnumpy().tolist()) == ([-2.0], [2.0])
    q, _, _ = nd.contrib.quantize_v2(x, out_type="auto", min_calib_range=0.0,
                                     max_calib_range=2.0)
    assert q.dtype == np.uint8
    assert nd.contrib.quantize_v2(x, out_type="auto")[0].dtype == np.int8


def test_dequantize_needs_int8_or_uint8():
    with pytest.raises(MXNetError, match="int8 or uint8"):
        nd.contrib.dequantize(nd.array([1, 2], dtype="int32"), nd.array([-1.0]),
                              nd.array([1.0]))
    out = nd.contrib.dequantize(nd.array([-128, 17, 127], dtype="int8"), nd.array([-1.0]),
                                nd.array([3.0]))
    assert_almost_equal(out.asnumpy(), np.array([-128, 17, 127]) * 3 / 127.5)


def test_requantize():
    q32 = np.array([100000, -2000000, 300, 2147483647, -2147483647], np.int32)
    real = q32 * (5.0 / 2147483647.0)
    out, lo, hi = nd.contrib.requantize(nd.array(q32, dtype="int32"), nd.array([-5.0]),
                                        nd.array([5.0]), min_calib_range=-0.001,
                                        max_calib_range=0.002)
    want = np.clip(np.rint(real.astype(np.float32) * np.float32(127 / 0.002)), -128, 127)
    assert out.dtype == np.int8 and out.asnumpy().tolist() == want.tolist()
    assert hi.asnumpy().tolist() == [np.float32(0.002)]
    # Uncalibrated: the data's own symmetric range.
    out, lo, hi = nd.contrib.requantize(nd.array(q32, dtype="int32"), nd.array([-5.0]),
                                        nd.array([5.0]))
    assert (lo.asnumpy()[0], hi.asnumpy()[0]) == (-5.0, 5.0)
    assert out.asnumpy().tolist()[3:] == [127, -127]
    with pytest.raises(MXNetError, match="int32"):
        nd.contrib.requantize(nd.array([1.0]), nd.array([-1.0]), nd.array([1.0]))

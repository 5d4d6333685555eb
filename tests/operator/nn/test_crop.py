"""Crop: explicit window, centre crop, crop to a second input's size."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from opcheck import check_op

rs = np.random.RandomState(12)
# MXNet's Crop takes float32 only; gradients are checked in float32 too
F32 = dict(dtypes=(np.float32,), grad_dtype=np.float32, eps=1e-2, grad_rtol=1e-2,
           grad_atol=1e-3)


def test_crop_offset():
    x = rs.uniform(size=(2, 3, 5, 6))
    check_op("Crop", [x], lambda a: a[:, :, 1:3, 2:5],
             {"num_args": 1, "h_w": (2, 3), "offset": (1, 2)}, **F32)


def test_crop_center():
    x = rs.uniform(size=(1, 2, 6, 7))
    check_op("Crop", [x], lambda a: a[:, :, 2:4, 2:5],
             {"num_args": 1, "h_w": (2, 3), "center_crop": True}, **F32)


def test_crop_like():
    x, like = rs.uniform(size=(1, 2, 5, 5)), rs.uniform(size=(1, 1, 3, 2))
    check_op("Crop", [x, like], lambda a, b: a[:, :, 1:4, 2:4],
             {"num_args": 2, "offset": (1, 2)}, grad_nodes=[0], **F32)


def test_crop_out_of_bounds():
    with pytest.raises(MXNetError):
        mx.nd.Crop(mx.nd.ones((1, 1, 4, 4)), num_args=1, h_w=(3, 3), offset=(2, 0))


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32"])
def test_crop_float32_only(dtype):
    with pytest.raises(MXNetError, match="Crop"):
        mx.nd.Crop(mx.nd.ones((1, 1, 4, 4), dtype=dtype), num_args=1, h_w=(2, 2))

"""Crop: explicit window, centre crop, crop to a second input's size."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from opcheck import Case, check

rs = np.random.RandomState(12)
# MXNet's Crop takes float32 only
F32 = dict(dtypes=("float32",))


def test_crop_offset():
    x = rs.uniform(size=(2, 3, 5, 6))
    check(Case("Crop", lambda a: a[:, :, 1:3, 2:5],
               kwargs={"num_args": 1, "h_w": (2, 3), "offset": (1, 2)}, ref_kwargs=False,
               inputs=[x], **F32))


def test_crop_center():
    x = rs.uniform(size=(1, 2, 6, 7))
    check(Case("Crop", lambda a: a[:, :, 2:4, 2:5],
               kwargs={"num_args": 1, "h_w": (2, 3), "center_crop": True}, ref_kwargs=False,
               inputs=[x], **F32))


def test_crop_like():
    x, like = rs.uniform(size=(1, 2, 5, 5)), rs.uniform(size=(1, 1, 3, 2))
    check(Case("Crop", lambda a, b: a[:, :, 1:4, 2:4],
               kwargs={"num_args": 2, "offset": (1, 2)}, ref_kwargs=False, inputs=[x, like],
               grad_inputs=[0], **F32))


def test_crop_out_of_bounds():
    with pytest.raises(MXNetError):
        mx.nd.Crop(mx.nd.ones((1, 1, 4, 4)), num_args=1, h_w=(3, 3), offset=(2, 0))


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32"])
def test_crop_float32_only(dtype):
    with pytest.raises(MXNetError, match="Crop"):
        mx.nd.Crop(mx.nd.ones((1, 1, 4, 4), dtype=dtype), num_args=1, h_w=(2, 2))

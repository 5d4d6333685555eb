"""GridGenerator, BilinearSampler and SpatialTransformer against a per-pixel NumPy
reference (zero padding outside the source) and numeric gradients."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from opcheck import F32_64, Case, check

rs = np.random.RandomState(15)
# MXNet's GridGenerator takes float32 only
F32 = dict(dtypes=("float32",))


def ref_affine_grid(theta, h, w):
    ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    src = np.stack([xs.ravel(), ys.ravel(), np.ones(h * w)])
    return (theta.reshape(-1, 2, 3) @ src).reshape(-1, 2, h, w)


def ref_sample(data, grid):
    n, c, h, w = data.shape
    out = np.zeros((n, c) + grid.shape[2:])
    for b in range(n):
        for i, j in np.ndindex(grid.shape[2:]):
            x = (grid[b, 0, i, j] + 1) * (w - 1) / 2
            y = (grid[b, 1, i, j] + 1) * (h - 1) / 2
            x0, y0 = int(np.floor(x)), int(np.floor(y))
            for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
                for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
                    if 0 <= yy < h and 0 <= xx < w:
                        out[b, :, i, j] += wy * wx * data[b, :, yy, xx]
    return out


def test_grid_generator_affine():
    theta = rs.uniform(-1, 1, (2, 6))
    check(Case("GridGenerator", lambda t: ref_affine_grid(t, 3, 4),
               kwargs={"transform_type": "affine", "target_shape": (3, 4)},
               ref_kwargs=False, inputs=[theta], **F32))


def test_grid_generator_warp():
    flow = rs.uniform(-1, 1, (2, 2, 3, 4))

    def ref(f):
        base = ref_affine_grid(np.array([1.0, 0, 0, 0, 1, 0]), 3, 4)
        scale = np.array([1.5, 1.0]).reshape(1, 2, 1, 1)
        return f / scale + base
    check(Case("GridGenerator", ref, kwargs={"transform_type": "warp"}, ref_kwargs=False,
               inputs=[flow], **F32))


@pytest.mark.parametrize("op,args,kw,bad", [
    ("GridGenerator", [(1, 6)], {"transform_type": "affine", "target_shape": (2, 2)},
     "float64"),
    ("SpatialTransformer", [(1, 1, 3, 3), (1, 6)],
     {"target_shape": (2, 2), "transform_type": "affine", "sampler_type": "bilinear"},
     "float16"),
    ("BilinearSampler", [(1, 1, 3, 3), (1, 2, 2, 2)], {}, "int32"),
])
def test_dtype_support(op, args, kw, bad):
    with pytest.raises(MXNetError, match=op):
        getattr(mx.nd, op)(*[mx.nd.ones(s, dtype=bad) for s in args], **kw)


def test_grid_generator_needs_target_shape():
    with pytest.raises(MXNetError):
        mx.nd.GridGenerator(mx.nd.ones((1, 6)), transform_type="affine")


def test_bilinear_sampler():
    data = rs.uniform(-1, 1, (2, 2, 4, 5))
    # keep sample points off integer pixel positions (the gradient's kinks)
    grid = rs.uniform(-1.2, 1.2, (2, 2, 3, 3))
    check(Case("BilinearSampler", ref_sample, inputs=[data, grid]))


def test_spatial_transformer():
    data = rs.uniform(-1, 1, (1, 2, 4, 5))
    loc = np.array([[0.7, 0.1, 0.05, -0.1, 0.8, 0.02]])
    kw = {"target_shape": (3, 3), "transform_type": "affine", "sampler_type": "bilinear"}
    check(Case("SpatialTransformer", lambda d, t: ref_sample(d, ref_affine_grid(t, 3, 3)),
               kwargs=kw, ref_kwargs=False, inputs=[data, loc], dtypes=F32_64))


def test_bilinear_sampler_float16_computes_in_float32():
    """float16 coordinates keep ~3 digits; the sampler computes float16 in float32 and
    rounds the results once."""
    rs = np.random.RandomState(2)
    data = rs.normal(size=(1, 3, 20, 20)).astype(np.float16)     # both runs: same values
    grid = rs.uniform(-1, 1, size=(1, 2, 6, 6)).astype(np.float16)
    res = {}
    for dt in (np.float16, np.float32):
        d, g = mx.nd.array(data, dtype=dt), mx.nd.array(grid, dtype=dt)
        for a in (d, g):
            a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.BilinearSampler(d, g)
        y.backward(mx.nd.ones(y.shape, dtype=dt))
        res[dt] = (y.asnumpy(), d.grad.asnumpy(), g.grad.asnumpy())
    # float32 on the float16-rounded inputs, rounded to float16: what float16 gives
    for got, want in zip(res[np.float16], res[np.float32]):
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float16), rtol=2e-3,
                                   atol=2e-3)

"""Spatial transformer networks: GridGenerator (sampling grids from affine matrices or
optical flow), BilinearSampler (bilinear sampling of NCHW data at grid points) and
SpatialTransformer (both in one).

Grids have shape (N, 2, H, W): channel 0 is x, channel 1 is y, both normalised to
[-1, 1] over the source's width and height (x = -1 is column 0, x = 1 column W-1).
Samples outside the source read zeros.
"""
import numpy as np

from ..params import Enum, Field, Schema, Shape
from ..registry import Op, ShapeError, register
from ..dtypes import F16_32_64, F32, F32_64, restrict_dtypes
from ..out_contract import adopt_out_contract


class _OptBool(Field):
    """bool or None (cudnn_off: accepted, no effect without cuDNN)."""
    kind = "boolean or None"

    def convert(self, v):
        return None if v is None else bool(v)


def _base_grid(xp, h, w, dtype):
    """(3, h*w): normalised x, y and 1 for every target pixel, row by row."""
    xs = xp.linspace(-1.0, 1.0, w) if w > 1 else xp.full((1,), -1.0)
    ys = xp.linspace(-1.0, 1.0, h) if h > 1 else xp.full((1,), -1.0)
    gx, gy = xp.meshgrid(xs, ys)
    return xp.stack([gx.ravel(), gy.ravel(), xp.ones(h * w)]).astype(dtype)


def _target(opname, p):
    if len(p.target_shape) != 2 or p.target_shape[0] <= 0 or p.target_shape[1] <= 0:
        raise ShapeError(f"{opname}: target_shape must be two positive sizes (h, w), got "
                         f"{tuple(p.target_shape)}")
    return tuple(p.target_shape)


def _affine_grid(xp, theta, h, w):
    base = _base_grid(xp, h, w, theta.dtype)
    return xp.matmul(theta.reshape(-1, 2, 3), base).reshape(-1, 2, h, w)


def _affine_grid_grad(xp, g, h, w):
    base = _base_grid(xp, h, w, g.dtype)
    return xp.matmul(g.reshape(g.shape[0], 2, h * w), base.T).reshape(-1, 6)


@register
@restrict_dtypes(F32)
class GridGenerator(Op):
    """Sampling grid from an affine matrix per sample ((N, 6) -> (N, 2, *target_shape))
    or from a flow field ((N, 2, H, W): pixel displacements added to each pixel's own
    position)."""
    name = "GridGenerator"
    params = Schema(transform_type=Enum(("affine", "warp")), target_shape=Shape((0, 0)))
    backward_uses = ("out_grad",)

    def infer_shape(self, p, in_shapes):
        d = in_shapes[0]
        if p.transform_type == "affine":
            h, w = _target(self.name, p)
            if d is not None and (len(d) != 2 or d[1] != 6):
                raise ShapeError(f"GridGenerator: affine data must be (N, 6), got {tuple(d)}")
            return [d], [None if d is None else (d[0], 2, h, w)], []
        if d is not None and (len(d) != 4 or d[1] != 2):
            raise ShapeError(f"GridGenerator: warp data must be (N, 2, H, W), got {tuple(d)}")
        return [d], [d], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp, x = ctx.xp, inputs[0]
        self.infer_shape(p, [x.shape])
        if p.transform_type == "affine":
            h, w = _target(self.name, p)
            return [_affine_grid(xp, x, h, w)]
        h, w = x.shape[2:]
        base = _base_grid(xp, h, w, x.dtype)[:2].reshape(1, 2, h, w)
        scale = xp.asarray([(w - 1) / 2.0, (h - 1) / 2.0], x.dtype).reshape(1, 2, 1, 1)
        return [(x / scale + base).astype(x.dtype)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp, g = ctx.xp, out_grads[0]
        if p.transform_type == "affine":
            h, w = _target(self.name, p)
            return [_affine_grid_grad(xp, g, h, w)]
        h, w = g.shape[2:]
        scale = xp.asarray([(w - 1) / 2.0, (h - 1) / 2.0], g.dtype).reshape(1, 2, 1, 1)
        return [(g / scale).astype(g.dtype)]


def _corners(xp, grid, h, w):
    """For each of the 4 neighbours: (flat source index, weight, valid mask,
    d weight / d x, d weight / d y) in source pixel units."""
    x = (grid[:, 0] + 1) * (w - 1) / 2.0
    y = (grid[:, 1] + 1) * (h - 1) / 2.0
    x0, y0 = xp.floor(x), xp.floor(y)
    fx, fy = x - x0, y - y0
    out = []
    for dy in (0, 1):
        wy = fy if dy else 1 - fy
        sy = 1.0 if dy else -1.0
        for dx in (0, 1):
            wx = fx if dx else 1 - fx
            sx = 1.0 if dx else -1.0
            xc, yc = x0 + dx, y0 + dy
            ok = (xc >= 0) & (xc <= w - 1) & (yc >= 0) & (yc <= h - 1)
            idx = (xp.clip(yc, 0, h - 1) * w + xp.clip(xc, 0, w - 1)).astype(np.int64)
            out.append((idx, wx * wy * ok, ok, sx * wy * ok, sy * wx * ok))
    return out


def _sample(xp, data, grid):
    n, c, h, w = data.shape
    flat = data.reshape(n, c, h * w)
    res = 0
    for idx, wt, _, _, _ in _corners(xp, grid, h, w):
        vals = xp.take_along_axis(flat, idx.reshape(n, 1, -1), axis=2)
        res = res + vals.reshape((n, c) + grid.shape[2:]) * wt[:, None]
    return xp.asarray(res, dtype=data.dtype)


def _sample_grads(xp, data, grid, g, need_data=True, need_grid=True):
    n, c, h, w = data.shape
    flat = data.reshape(n, c, h * w)
    gflat = g.reshape(n, c, -1)
    gd = xp.zeros((n * c * h * w,), np.float64) if need_data else None
    gx = gy = 0
    offs = (xp.arange(n * c) * (h * w)).reshape(n, c, 1)
    for idx, wt, _, dwx, dwy in _corners(xp, grid, h, w):
        idx = idx.reshape(n, 1, -1)
        if need_data:
            contrib = gflat * wt.reshape(n, 1, -1)
            gd += xp.bincount((idx + offs).ravel(), weights=contrib.ravel().astype(np.float64),
                              minlength=gd.size)
        if need_grid:
            vals = xp.take_along_axis(flat, idx, axis=2)
            s = (gflat * vals).sum(axis=1)
            gx = gx + s * dwx.reshape(n, -1)
            gy = gy + s * dwy.reshape(n, -1)
    grad_data = None if gd is None else gd.reshape(data.shape).astype(data.dtype)
    grad_grid = None
    if need_grid:
        gx = gx * (w - 1) / 2.0
        gy = gy * (h - 1) / 2.0
        grad_grid = xp.stack([gx, gy], axis=1).reshape(grid.shape).astype(grid.dtype)
    return grad_data, grad_grid


@register
@restrict_dtypes(F16_32_64, inputs=(0, 1))
class BilinearSampler(Op):
    """Sample NCHW data bilinearly at the grid's points: (N, C, H, W) and
    (N, 2, Ho, Wo) -> (N, C, Ho, Wo); zeros outside the source."""
    name = "BilinearSampler"
    params = Schema(cudnn_off=_OptBool(None))
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["data", "grid"]

    def infer_shape(self, p, in_shapes):
        d, g = in_shapes
        if d is not None and len(d) != 4:
            raise ShapeError(f"BilinearSampler: data must be NCHW, got {tuple(d)}")
        if g is not None and (len(g) != 4 or g[1] != 2):
            raise ShapeError(f"BilinearSampler: grid must be (N, 2, H, W), got {tuple(g)}")
        if d is None or g is None:
            return in_shapes, [None], []
        if d[0] != g[0]:
            raise ShapeError(f"BilinearSampler: data and grid batch sizes differ "
                             f"({d[0]} and {g[0]})")
        return in_shapes, [(d[0], d[1], g[2], g[3])], []

    def infer_type(self, p, in_types):
        t = in_types[0] if in_types[0] is not None else in_types[1]
        return [t, t], [t], []

    def forward(self, ctx, p, inputs, aux, out=None):
        data, grid = inputs
        self.infer_shape(p, [data.shape, grid.shape])
        return [_sample(ctx.xp, _wide(data), _wide(grid)).astype(data.dtype, copy=False)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        data, grid = inputs
        need = ctx.need_grad or (True, True)
        gd, gg = _sample_grads(ctx.xp, _wide(data), _wide(grid), _wide(out_grads[0]),
                               need[0], need[1])
        return [None if gd is None else gd.astype(data.dtype, copy=False),
                None if gg is None else gg.astype(grid.dtype, copy=False)]


def _wide(a):
    """float16 computed in float32: the source coordinates (up to the image size)
    would keep only ~3 decimal digits in float16, enough to move a sample across a
    pixel border and its grid gradient by a whole pixel's difference."""
    return a.astype(np.float32) if a.dtype == np.float16 else a


@register
@restrict_dtypes(F32_64, inputs=(0, 1))
class SpatialTransformer(Op):
    """Warp NCHW data by an affine matrix per sample (``loc``, (N, 6)) onto a
    ``target_shape`` grid, sampling bilinearly."""
    name = "SpatialTransformer"
    params = Schema(target_shape=Shape((0, 0)), transform_type=Enum(("affine",)),
                    sampler_type=Enum(("bilinear",)), cudnn_off=_OptBool(None))
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["data", "loc"]

    def infer_shape(self, p, in_shapes):
        d, loc = in_shapes
        h, w = _target(self.name, p)
        if d is not None and len(d) != 4:
            raise ShapeError(f"SpatialTransformer: data must be NCHW, got {tuple(d)}")
        if loc is not None and (len(loc) != 2 or loc[1] != 6):
            raise ShapeError(f"SpatialTransformer: loc must be (N, 6), got {tuple(loc)}")
        if d is None:
            return in_shapes, [None], []
        return [d, (d[0], 6)], [(d[0], d[1], h, w)], []

    def infer_type(self, p, in_types):
        t = in_types[0] if in_types[0] is not None else in_types[1]
        return [t, t], [t], []

    def forward(self, ctx, p, inputs, aux, out=None):
        data, loc = inputs
        self.infer_shape(p, [data.shape, loc.shape])
        h, w = _target(self.name, p)
        return [_sample(ctx.xp, data, _affine_grid(ctx.xp, loc, h, w))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        data, loc = inputs
        h, w = _target(self.name, p)
        grid = _affine_grid(xp, loc, h, w)
        need = ctx.need_grad or (True, True)
        gd, gg = _sample_grads(xp, data, grid, out_grads[0], need[0], need[1])
        return [gd, None if gg is None else _affine_grid_grad(xp, gg, h, w).astype(loc.dtype)]


adopt_out_contract(__name__)

"""Correlation (FlowNet's correlation layer): compare patches of two NCHW feature maps
at every displacement up to ``max_displacement``.

With padding ``pad_size`` applied to both inputs, output position (i, j) looks at the
patch centred at (y, x) = (i * stride1 + r, j * stride1 + r), r = max_displacement +
(kernel_size - 1) / 2, of data1 and the patch centred at (y + dy, x + dx) of data2,
dy, dx in {-R..R} * stride2 with R = max_displacement // stride2. Channel (dy, dx)
(row-major over the (2R+1)^2 grid) holds the mean over channels and the kernel window
of the products (``is_multiply``) or of the absolute differences.
"""

from ...base import MXNetError
from ..params import Bool, Int, Schema
from ..registry import Op, ShapeError, register
from ..dtypes import F16_32_64, restrict_dtypes
from ..out_contract import adopt_out_contract


def _geometry(p, h, w):
    if p.kernel_size % 2 == 0:
        raise MXNetError(f"Correlation: kernel_size must be odd, got {p.kernel_size}")
    if p.stride1 < 1 or p.stride2 < 1:
        raise MXNetError("Correlation: stride1 and stride2 must be positive")
    kr = (p.kernel_size - 1) // 2
    border = p.max_displacement + kr
    ph, pw = h + 2 * p.pad_size, w + 2 * p.pad_size
    oh = -(-(ph - 2 * border) // p.stride1)
    ow = -(-(pw - 2 * border) // p.stride1)
    if oh < 1 or ow < 1:
        raise ShapeError(f"Correlation: a {h}x{w} input padded by {p.pad_size} is too small "
                         f"for max_displacement {p.max_displacement} and kernel_size "
                         f"{p.kernel_size}")
    radius = p.max_displacement // p.stride2
    return kr, border, oh, ow, radius


def _displacements(p, radius):
    return [(dy * p.stride2, dx * p.stride2) for dy in range(-radius, radius + 1)
            for dx in range(-radius, radius + 1)]


@register
@restrict_dtypes(F16_32_64, inputs=(0, 1))
class Correlation(Op):
    """Patch correlation of data1 and data2 over a grid of displacements."""
    name = "Correlation"
    params = Schema(kernel_size=Int(1, low=0), max_displacement=Int(1, low=0),
                    stride1=Int(1, low=0), stride2=Int(1, low=0), pad_size=Int(0, low=0),
                    is_multiply=Bool(True))
    backward_uses = ("out_grad", "in_data")

    def arguments(self, p):
        return ["data1", "data2"]

    def outputs(self, p):
        return ["output", "tmp1", "tmp2"]

    def num_visible_outputs(self, p):
        return 1

    def infer_shape(self, p, in_shapes):
        a, b = in_shapes
        s = a if a is not None else b
        if s is None:
            return in_shapes, [None, None, None], []
        if len(s) != 4:
            raise ShapeError(f"Correlation: inputs must be NCHW, got {tuple(s)}")
        if a is not None and b is not None and tuple(a) != tuple(b):
            raise ShapeError(f"Correlation: data1 {tuple(a)} and data2 {tuple(b)} differ")
        _, _, oh, ow, radius = _geometry(p, s[2], s[3])
        d = 2 * radius + 1
        n, c = s[0], s[1]
        ph, pw = s[2] + 2 * p.pad_size, s[3] + 2 * p.pad_size
        tmp = (n, ph, pw, c)
        return [s, s], [(n, d * d, oh, ow), tmp, tmp], []

    def infer_type(self, p, in_types):
        t = in_types[0] if in_types[0] is not None else in_types[1]
        return [t, t], [t, t, t], []

    def _windows(self, xp, p, m, kr, oh, ow, border):
        """Sum of m (N, Hp, Wp) over each kernel window centred at the output's
        sample points: (N, oh, ow)."""
        ys = border + xp.arange(oh) * p.stride1
        xs = border + xp.arange(ow) * p.stride1
        total = 0
        for ky in range(-kr, kr + 1):
            for kx in range(-kr, kr + 1):
                total = total + m[:, (ys + ky)[:, None], (xs + kx)[None, :]]
        return total

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        a, b = inputs
        self.infer_shape(p, [a.shape, b.shape])
        kr, border, oh, ow, radius = _geometry(p, a.shape[2], a.shape[3])
        pad = [(0, 0), (0, 0), (p.pad_size,) * 2, (p.pad_size,) * 2]
        a1, b1 = xp.pad(a, pad), xp.pad(b, pad)
        norm = a.dtype.type(p.kernel_size * p.kernel_size * a.shape[1])
        res = []
        for dy, dx in _displacements(p, radius):
            b2 = _shift(xp, b1, dy, dx)
            m = (a1 * b2 if p.is_multiply else xp.abs(a1 - b2)).sum(axis=1)
            res.append(self._windows(xp, p, m, kr, oh, ow, border))
        outp = (xp.stack(res, axis=1) / norm).astype(a.dtype)
        return [outp, xp.ascontiguousarray(a1.transpose(0, 2, 3, 1)),
                xp.ascontiguousarray(b1.transpose(0, 2, 3, 1))]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        xp = ctx.xp
        a, b = inputs
        kr, border, oh, ow, radius = _geometry(p, a.shape[2], a.shape[3])
        pad = [(0, 0), (0, 0), (p.pad_size,) * 2, (p.pad_size,) * 2]
        a1, b1 = xp.pad(a, pad), xp.pad(b, pad)
        n, c, hp, wp = a1.shape
        norm = p.kernel_size * p.kernel_size * c
        g = out_grads[0] / norm
        ys = border + xp.arange(oh) * p.stride1
        xs = border + xp.arange(ow) * p.stride1
        ga, gb = xp.zeros_like(a1), xp.zeros_like(b1)
        for k, (dy, dx) in enumerate(_displacements(p, radius)):
            # spread each output's gradient over its kernel window: (N, Hp, Wp)
            gm = xp.zeros((n, hp, wp), a.dtype)
            for ky in range(-kr, kr + 1):
                for kx in range(-kr, kr + 1):
                    gm[:, (ys + ky)[:, None], (xs + kx)[None, :]] += g[:, k]
            b2 = _shift(xp, b1, dy, dx)
            if p.is_multiply:
                da, db2 = gm[:, None] * b2, gm[:, None] * a1
            else:
                # ties count as +1 for data1 (and -1 for data2), as MXNet's kernel
                s = xp.where(a1 >= b2, 1, -1).astype(a1.dtype)
                da, db2 = gm[:, None] * s, -gm[:, None] * s
            ga += da
            gb += _shift(xp, db2, -dy, -dx)
        sl = (slice(None), slice(None), slice(p.pad_size, p.pad_size + a.shape[2]),
              slice(p.pad_size, p.pad_size + a.shape[3]))
        return [xp.ascontiguousarray(ga[sl]), xp.ascontiguousarray(gb[sl])]


def _shift(xp, x, dy, dx):
    """out[..., y, x] = x[..., y + dy, x + dx], zero where that falls outside."""
    out = xp.zeros_like(x)
    h, w = x.shape[-2:]
    ys, yd = (slice(dy, h), slice(0, h - dy)) if dy >= 0 else (slice(0, h + dy), slice(-dy, h))
    xs, xd = (slice(dx, w), slice(0, w - dx)) if dx >= 0 else (slice(0, w + dx), slice(-dx, w))
    out[..., yd, xd] = x[..., ys, xs]
    return out


adopt_out_contract(__name__)

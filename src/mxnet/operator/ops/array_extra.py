"""Array operators without a family of their own: cumsum, moments (mean and variance
over axes), khatri_rao (column-wise Kronecker product) and _histogram (the back end
of ``nd.histogram``/``sym.histogram``)."""
import numpy as np

from ...base import MXNetError
from ..params import Any, Bool, DType, Int, IntOrNone, Schema, ShapeOrNone, _literal
from ..registry import Op, ShapeError, register
from .reduce import reduce_axes, reduced_shape
from .shape_utils import norm_axis
from ..dtypes import F32_64, restrict_dtypes
from ..out_contract import adopt_out_contract

_CUMSUM_TYPES = (None, "float16", "float32", "float64", "int32", "int64", "int8")


def _cumsum(xp, a, axis, dtype, out=None):
    """Cumulative sum of a along axis in dtype. A float16 sum adds one element at a
    time, each partial sum rounded to float16 before the next is added, as MXNet's
    kernel (one thread per lane) and NumPy's cumsum do; CuPy's cumsum scans in
    parallel, whose roundings differ by several float16 steps after a few dozen
    elements, so on the GPU float16 goes through backend.half_scan."""
    if np.dtype(dtype) != np.float16 or xp is np or a.size == 0:
        return xp.cumsum(a, axis=axis, dtype=dtype, out=out)
    from ...backend.half_scan import cumsum_half
    res = xp.empty(a.shape, dtype) if out is None else out
    return cumsum_half(xp, a.astype(np.float16, copy=False), axis, res)


@register
class Cumsum(Op):
    """Cumulative sum along ``axis`` (of the flattened array when axis is None)."""
    name = "cumsum"
    params = Schema(axis=IntOrNone(None), dtype=DType(None, enum=_CUMSUM_TYPES))
    backward_uses = ("out_grad",)

    def arguments(self, p):
        return ["a"]

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        if p.axis is None:
            return [s], [(int(np.prod(s)),)], []
        norm_axis(self.name, p.axis, len(s))
        return [s], [tuple(s)], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        return [t], [np.dtype(p.dtype) if p.dtype else t], []

    def forward(self, ctx, p, inputs, aux, out=None):
        a = inputs[0]
        dt = np.dtype(p.dtype) if p.dtype else a.dtype
        if p.axis is None:
            a, axis = a.reshape(-1), 0
        else:
            axis = norm_axis(self.name, p.axis, a.ndim)
        return [_cumsum(ctx.xp, a, axis, dt, None if out is None else out[0])]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        # Each input element feeds every later partial sum: a reversed cumsum.
        xp, g = ctx.xp, out_grads[0]
        shape = tuple(ctx.in_shapes[0])
        axis = 0 if p.axis is None else norm_axis(self.name, p.axis, len(shape))
        rev = xp.flip(_cumsum(xp, xp.flip(g, axis), axis, g.dtype), axis)
        return [rev.reshape(shape)]


@register
class Moments(Op):
    """Mean and variance over ``axes`` (every axis when None)."""
    name = "moments"
    params = Schema(axes=ShapeOrNone(None), keepdims=Bool(False))
    backward_uses = ("out_grad", "in_data", "out_data")

    def outputs(self, p):
        return ["output0", "output1"]

    def _axes(self, p, shape):
        if p.axes is not None and len(p.axes) == 0:
            raise MXNetError("moments: empty axes are not supported; pass every axis "
                             "for global moments")
        return reduce_axes(self.name, shape, p.axes)

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None, None], []
        o = reduced_shape(s, self._axes(p, s), p.keepdims)
        return [s], [o, o], []

    def infer_type(self, p, in_types):
        return [in_types[0]], [in_types[0]] * 2, []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp, x = ctx.xp, inputs[0]
        axes = self._axes(p, x.shape)
        oshape = reduced_shape(x.shape, axes, p.keepdims)
        mean = x.mean(axis=axes, keepdims=True, dtype=np.float64 if x.dtype == np.float16
                      else x.dtype)
        var = xp.square(x - mean).mean(axis=axes)
        return [mean.astype(x.dtype, copy=False).reshape(oshape),
                var.astype(x.dtype, copy=False).reshape(oshape)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        x = inputs[0]
        axes = self._axes(p, x.shape)
        kept = reduced_shape(x.shape, axes, True)
        n = int(np.prod([x.shape[a] for a in axes]))
        gm, gv = (g.reshape(kept) for g in out_grads)
        mean = outputs[0].reshape(kept)
        return [(gm + gv * 2 * (x - mean)) / x.dtype.type(n)]


@register
@restrict_dtypes(F32_64)
class KhatriRao(Op):
    """Column-wise Kronecker product of matrices with equal column counts: the
    (m1*m2*..., n) matrix whose column j is kron(A1[:, j], A2[:, j], ...)."""
    name = "khatri_rao"
    params = Schema(num_args=Int(low=1))
    variadic = "num_args"
    # MXNet 1.9.1 registers no gradient for khatri_rao: differentiating it is an error.

    def infer_shape(self, p, in_shapes):
        if any(s is None for s in in_shapes):
            return in_shapes, [None], []
        for s in in_shapes:
            if len(s) != 2 or s[1] != in_shapes[0][1]:
                raise ShapeError(f"khatri_rao: inputs must be matrices with the same number "
                                 f"of columns, got {[tuple(x) for x in in_shapes]}")
        rows = int(np.prod([s[0] for s in in_shapes]))
        return in_shapes, [(rows, in_shapes[0][1])], []

    def infer_type(self, p, in_types):
        t = next((x for x in in_types if x is not None), None)
        return [t] * len(in_types), [t], []

    def forward(self, ctx, p, inputs, aux, out=None):
        self.infer_shape(p, [a.shape for a in inputs])
        res = inputs[0]
        for a in inputs[1:]:
            res = (res[:, None, :] * a[None, :, :]).reshape(-1, a.shape[1])
        return [ctx.xp.ascontiguousarray(res)]


@register
class Histogram(Op):
    """Counts of the flattened data in bins: ``bin_cnt`` equal bins over ``range``
    (the last bin includes its upper edge; bins are matched against the edges in the
    data's dtype), or the edges given as the ``bins`` input.
    Outputs (counts as int64, bin edges)."""
    name = "_histogram"
    params = Schema(bin_cnt=IntOrNone(None, low=0), range=Any(None))

    def arguments(self, p):
        return ["data"] if p.bin_cnt is not None else ["data", "bins"]

    def outputs(self, p):
        return ["output0", "output1"]

    def _range(self, p):
        r = p.range
        if isinstance(r, str):
            r = _literal(r)
        if r is None or len(r) != 2:
            raise MXNetError("_histogram: bin_cnt needs range=(low, high)")
        lo, hi = float(r[0]), float(r[1])
        if lo > hi:
            raise MXNetError(f"_histogram: range low {lo} exceeds high {hi}")
        return lo, hi

    def infer_shape(self, p, in_shapes):
        if p.bin_cnt is not None:
            self._range(p)
            return in_shapes, [(p.bin_cnt,), (p.bin_cnt + 1,)], []
        b = in_shapes[1]
        return in_shapes, [None if b is None else (b[0] - 1,), b], []

    def infer_type(self, p, in_types):
        t = in_types[0]
        return [t] * len(in_types), [np.dtype(np.int64), t], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp, x = ctx.xp, inputs[0]
        if p.bin_cnt is not None:
            lo, hi = self._range(p)
            # NumPy's edges, computed on the host (bin_cnt + 1 values): CuPy's linspace
            # fuses lo + i * step into one multiply-add, and some of its edges differ
            # from NumPy's in the last bit
            edges = xp.asarray(np.linspace(lo, hi, p.bin_cnt + 1))
            return [self._equal_bins(xp, x.reshape(-1), edges.astype(x.dtype), lo, hi,
                                     p.bin_cnt), edges.astype(x.dtype)]
        edges = inputs[1].astype(np.float64)
        counts, _ = xp.histogram(x.reshape(-1).astype(np.float64), bins=edges)
        return [counts.astype(np.int64), edges.astype(x.dtype)]

    @staticmethod
    def _equal_bins(xp, x, edges, lo, hi, n):
        """Counts over ``n`` equal bins as MXNet assigns them: the bin its position in
        [lo, hi] gives, moved one bin down or up against the edges in the data's own
        dtype. For integer data those edges are truncated ([0, 2, 4, 6, 9] for range
        (0, 9) and 4 bins), so the counts follow the truncated edges, not NumPy's."""
        if n == 0:
            return xp.zeros((0,), np.int64)
        xd = x.astype(np.float64)
        inside = (xd >= lo) & (xd <= hi)
        x, xd = x[inside], xd[inside]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (xd - lo) * n / (hi - lo) if hi > lo else xp.zeros_like(xd)
        t = xp.minimum(t.astype(np.int64), n - 1)
        t -= (x < edges[t]).astype(np.int64)
        t += ((x >= edges[xp.minimum(t + 1, n)]) & (t != n - 1)).astype(np.int64)
        t = t[t >= 0]
        return xp.bincount(t, minlength=n).astype(np.int64)


adopt_out_contract(__name__)

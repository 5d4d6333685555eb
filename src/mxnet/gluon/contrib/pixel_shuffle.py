"""PixelShuffle1D/2D/3D: sub-pixel upsampling blocks (channels traded for resolution),
"""
from ..block import HybridBlock

__all__ = ["PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]


class _PixelShuffle(HybridBlock):
    """(N, C * prod(f), *spatial) -> (N, C, *(spatial[i] * f[i])): each group of
    prod(f) channels becomes an f[0] x f[1] x ... block of output pixels."""
    ndim = None

    def __init__(self, factor):
        super().__init__()
        if isinstance(factor, int):
            factor = (factor,) * self.ndim
        factor = tuple(int(f) for f in factor)
        if len(factor) != self.ndim or any(f < 1 for f in factor):
            raise ValueError(f"{type(self).__name__}: factor must be a positive int or "
                             f"{self.ndim} positive ints, got {factor}")
        self._factors = factor

    def hybrid_forward(self, F, x):
        f, k = self._factors, self.ndim
        # (N, C*prod f, *S) -> (N, C, f0, .., f{k-1}, *S)
        x = x.reshape((0, -4, -1, _prod(f)) + (0,) * k)
        for i in range(k - 1):        # peel one factor off the channel block at a time
            x = x.reshape((0,) * (2 + i) + (-4, f[i], -1) + (0,) * k)
        # interleave: (N, C, S0, f0, S1, f1, ...)
        axes = (0, 1) + tuple(a for i in range(k) for a in (2 + k + i, 2 + i))
        x = F.transpose(x, axes=axes)
        return x.reshape((0, 0) + (-3,) * k)

    def __repr__(self):
        return f"{type(self).__name__}({self._factors if self.ndim > 1 else self._factors[0]})"


def _prod(xs):
    out = 1
    for v in xs:
        out *= v
    return out


class PixelShuffle1D(_PixelShuffle):
    """(N, C*f, W) -> (N, C, W*f)."""
    ndim = 1


class PixelShuffle2D(_PixelShuffle):
    """(N, C*f1*f2, H, W) -> (N, C, H*f1, W*f2)."""
    ndim = 2


class PixelShuffle3D(_PixelShuffle):
    """(N, C*f1*f2*f3, D, H, W) -> (N, C, D*f1, H*f2, W*f3)."""
    ndim = 3

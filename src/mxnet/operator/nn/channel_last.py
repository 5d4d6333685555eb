"""Channel-last layouts (NWC, NHWC, NDHWC) run as their channel-first twins: the
operator's parameters with the channel-first layout, and its arrays moved between
(N, *spatial, C) and (N, C, *spatial). MXNet 1.9.1 had these layouts on the GPU
(cuDNN) for convolution and pooling; here every device computes them this way."""
import functools

from ..params import Params

__all__ = ["FIRST", "channel_first", "to_first", "to_last", "shape_to_first",
           "shape_to_last"]

FIRST = {"NWC": "NCW", "NHWC": "NCHW", "NDHWC": "NCDHW"}


@functools.lru_cache(maxsize=256)
def channel_first(p):
    """The parameters of the channel-first twin of channel-last parameters ``p``."""
    q = Params(p)
    q["layout"] = FIRST[p.layout]
    q.given = p.given
    return q


def to_first(xp, a):
    """(N, *spatial, C) -> (N, C, *spatial), contiguous (a convolution weight
    (F, *kernel, C) likewise becomes (F, C, *kernel))."""
    return xp.ascontiguousarray(xp.moveaxis(a, -1, 1))


def to_last(xp, a):
    """(N, C, *spatial) -> (N, *spatial, C), contiguous."""
    return xp.ascontiguousarray(xp.moveaxis(a, 1, -1))


def shape_to_first(s):
    return None if s is None else tuple(s[:1]) + tuple(s[-1:]) + tuple(s[1:-1])


def shape_to_last(s):
    return None if s is None else tuple(s[:1]) + tuple(s[2:]) + tuple(s[1:2])

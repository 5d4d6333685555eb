"""A stand-in CuPy over NumPy for testing the cuDNN adapters without a GPU: arrays that
look like CuPy ones to the adapters (a device pointer, a device), the few CuPy
functions the adapters call, and the real libcudnn (descriptors need no GPU)."""
import contextlib
import types

import numpy as np

import mxnet as mx
from mxnet.backend.cudnn import _lib as L
from mxnet.backend.cudnn import _runtime as R
from mxnet.backend.cudnn import descriptors as D
from mxnet.backend.cudnn import kernels as K
from mxnet.operator import kernels_cudnn as KC

try:
    LIB, _ = L.load()
except OSError as err:
    LIB, WHY = None, str(err)
else:
    WHY = ""


class FakeArray(np.ndarray):
    """A NumPy array that looks like a CuPy one to the adapters."""
    __module__ = "cupy_fake"

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])

    @property
    def device(self):
        return contextlib.nullcontext(types.SimpleNamespace(id=0))


def wrap(a):
    return np.asarray(a).view(FakeArray)


def fake_cupy():
    cp = types.SimpleNamespace(ndarray=FakeArray)
    cp.empty = lambda shape, dtype=np.float32: wrap(np.full(shape, np.nan, dtype))
    cp.ones = lambda shape, dtype=np.float32: wrap(np.ones(shape, dtype))
    cp.zeros = lambda shape, dtype=np.float32: wrap(np.zeros(shape, dtype))
    cp.float32 = np.float32
    cp.ascontiguousarray = lambda a: wrap(np.ascontiguousarray(a))
    cp.sqrt = lambda a: wrap(np.sqrt(np.asarray(a)))
    cp.divide = lambda a, b, out=None: np.divide(a, np.asarray(b), out=out)
    # the current device, as cupy.cuda.Device() gives it (the adapters key caches by it)
    cp.cuda = types.SimpleNamespace(Device=lambda *a: types.SimpleNamespace(id=0))

    def elementwise(in_params, out_params, body, name):
        def run(mean, invstd, m, eps, mm, mv):
            var = 1.0 / (invstd.astype(np.float64) ** 2) - eps
            mm[...] = mm * m + (1 - m) * mean
            mv[...] = mv * m + (1 - m) * var.astype(mv.dtype)
        return run
    cp.ElementwiseKernel = elementwise
    return cp


# --- numeric stand-ins for cuDNN's compute calls (the channels-last tests) -------------
def _addresses_alike(strides, a):
    """Whether element strides ``strides`` address array ``a``'s memory as its own
    strides do (a unit dimension's stride is never used)."""
    own = [s // a.dtype.itemsize for s in a.strides]
    return all(s == o for s, o, d in zip(strides, own, a.shape) if d != 1)


def _check_tensor(desc, a):
    _, dims, strides = D.describe_tensor(LIB, desc)
    assert dims == a.shape and _addresses_alike(strides, a), (dims, strides, a.strides)


def _check_filter(g, w):
    _, fmt, dims = D.describe_filter(LIB, g.w)
    assert dims == w.shape
    if g.nhwc:        # KRSC memory: the logical KCRS view has channels innermost
        assert fmt == L.TENSOR_NHWC and _addresses_alike(D.nhwc_strides(w.shape), w)
    else:
        assert fmt == L.TENSOR_NCHW and w.flags.c_contiguous


def _nd(a):
    return mx.nd.array(np.asarray(a, dtype=np.float64))


def _conv_kw(g, w):
    pad, stride, dilate, groups, _ = g._conv_args
    return dict(kernel=w.shape[2:], pad=pad, stride=stride, dilate=dilate,
                num_group=groups, num_filter=w.shape[0], no_bias=True)


def conv_grads(g, x, w, dy):
    xn, wn = _nd(x), _nd(w)
    xn.attach_grad()
    wn.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Convolution(xn, wn, **_conv_kw(g, w))
    y.backward(_nd(dy))
    return xn.grad.asnumpy(), wn.grad.asnumpy()


def _put(dst, value, accumulate):
    if accumulate:
        dst[...] += value.astype(dst.dtype)
    else:
        dst[...] = value.astype(dst.dtype)



_POOL_PARAMS = {}


def _pool_ref(descs):
    """MXNet's Pooling with the parameters ``descs`` were made for (recorded by the
    stand-in pool_descriptor)."""
    mode, window, pad, stride = _POOL_PARAMS[descs[0]]
    kw = dict(kernel=window, pad=pad, stride=stride, pooling_convention="valid",
              pool_type="max" if mode == L.POOLING_MAX else "avg",
              count_include_pad=mode == L.POOLING_AVG_INCLUDE)
    return lambda a: mx.nd.Pooling(a, **kw)


def install_runtime(monkeypatch):
    """The adapters' cuDNN runtime as this stand-in CuPy and the real libcudnn; the
    module-level caches emptied for the test (fix_gamma's ones, moving-update kernels,
    descriptors), so no stand-in array or fake handle stays there for the real GPU
    tests that may run later in the same process."""
    rt = R.Runtime.__new__(R.Runtime)
    rt.lib, rt.path, rt.cupy, rt.version = LIB, "test", fake_cupy(), 0
    monkeypatch.setitem(R._state, "rt", rt)
    monkeypatch.setattr(KC, "try_runtime", lambda: rt)
    monkeypatch.setattr(K, "runtime", lambda: rt)
    for cache in ("_ONES", "_MOVING"):
        monkeypatch.setattr(KC, cache, {})
    for cache in ("_algos", "_geometries", "_pool_descs", "_descs"):
        monkeypatch.setattr(K, cache, {})
    return rt


def install_numeric_kernels(monkeypatch):
    """``install_runtime`` and NumPy stand-ins for cuDNN's compute calls: each checks
    that the descriptors describe the memory of the arrays it gets (dims and strides
    of tensors; the filter's format), then computes the operation on the arrays'
    logical views with MXNet's CPU operators."""
    rt = install_runtime(monkeypatch)

    def conv_forward(g, x, w, y, tune, ws, accumulate=False):
        _check_tensor(g.x, x), _check_filter(g, w), _check_tensor(g.y, y)
        ref = mx.nd.Convolution(_nd(x), _nd(w), **_conv_kw(g, w)).asnumpy()
        _put(y, ref, accumulate)

    def conv_backward_data(g, w, dy, dx, tune, ws, accumulate=False):
        _check_filter(g, w), _check_tensor(g.y, dy), _check_tensor(g.x, dx)
        _put(dx, conv_grads(g, np.zeros(dx.shape), w, dy)[0], accumulate)

    def conv_backward_filter(g, x, dy, dw, tune, ws, accumulate=False):
        _check_tensor(g.x, x), _check_tensor(g.y, dy), _check_filter(g, dw)
        _put(dw, conv_grads(g, x, np.zeros(dw.shape), dy)[1], accumulate)

    def conv_backward_bias(dy, db, accumulate=False):
        _put(db, np.asarray(dy, np.float64).sum(axis=(0, 2, 3)), accumulate)

    def add_bias(y, b):
        D.tensor_of(LIB, y)            # a strided descriptor cuDNN accepts
        y[...] += np.asarray(b).reshape(1, -1, 1, 1)

    def pool_forward(descs, x, y):
        _, xd, yd = descs
        _check_tensor(xd, x), _check_tensor(yd, y)
        y[...] = _pool_ref(descs)(_nd(x)).asnumpy()

    def pool_backward(descs, x, y, dy, dx):
        _, xd, yd = descs
        _check_tensor(xd, x), _check_tensor(yd, y), _check_tensor(yd, dy)
        _check_tensor(xd, dx)
        xn = _nd(x)
        xn.attach_grad()
        with mx.autograd.record():
            out = _pool_ref(descs)(xn)
        out.backward(_nd(dy))
        dx[...] = xn.grad.asnumpy()

    def bn_forward_training(x4, y4, scale, bias, eps, save_mean, save_invstd):
        xd, _ = K._bn_descs(LIB, x4, K.bn_mode(x4))
        _check_tensor(xd, x4), _check_tensor(xd, y4)       # one descriptor for both
        x = np.asarray(x4, np.float64)
        mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
        inv = 1 / np.sqrt(var + eps)
        save_mean[...], save_invstd[...] = mean, inv
        y4[...] = ((x - mean[:, None, None]) * inv[:, None, None] *
                   np.asarray(scale)[:, None, None] + np.asarray(bias)[:, None, None])

    def bn_forward_inference(x4, y4, scale, bias, mean, var, eps):
        xd, _ = K._bn_descs(LIB, x4)
        _check_tensor(xd, x4), _check_tensor(xd, y4)
        inv = 1 / np.sqrt(np.asarray(var, np.float64) + eps)
        y4[...] = ((np.asarray(x4, np.float64) - np.asarray(mean)[:, None, None]) *
                   (inv * np.asarray(scale))[:, None, None] +
                   np.asarray(bias)[:, None, None])

    def bn_backward(x4, dy4, dx4, scale, dscale, dbias, eps, mean, invstd):
        xd, _ = K._bn_descs(LIB, x4, K.bn_mode(x4))
        for a in (x4, dy4, dx4):
            _check_tensor(xd, a)
        x, dy = np.asarray(x4, np.float64), np.asarray(dy4, np.float64)
        m = x.shape[0] * x.shape[2] * x.shape[3]
        xh = (x - np.asarray(mean)[:, None, None]) * np.asarray(invstd)[:, None, None]
        db, ds = dy.sum(axis=(0, 2, 3)), (dy * xh).sum(axis=(0, 2, 3))
        dscale[...], dbias[...] = ds, db
        dx4[...] = (np.asarray(scale) * np.asarray(invstd))[:, None, None] / m * (
            m * dy - db[:, None, None] - xh * ds[:, None, None])

    made = K.pool_descriptor

    def pool_descriptor(x_shape, y_shape, mode, window, pad, stride, dtype, nhwc=False):
        descs = made(x_shape, y_shape, mode, window, pad, stride, dtype, nhwc)
        _POOL_PARAMS[descs[0]] = (mode, tuple(window), tuple(pad), tuple(stride))
        return descs

    for fn in (conv_forward, conv_backward_data, conv_backward_filter, conv_backward_bias,
               add_bias, pool_forward, pool_backward, bn_forward_training, bn_forward_inference,
               bn_backward, pool_descriptor):
        monkeypatch.setattr(K, fn.__name__, fn)
    return rt

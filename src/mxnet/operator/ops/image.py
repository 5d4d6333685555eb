"""Image operators (``mx.nd.image`` / ``mx.sym.image``): to_tensor, normalize, resize,
crop, flips, lighting and the random colour/flip augmentations.

Layouts as in MXNet 1.9.1: images are (H, W, C) or batches (N, H, W, C), except
``normalize``, which takes the tensors ``to_tensor`` makes: (C, H, W) or (N, C, H, W).
``resize`` follows OpenCV's interpolation (mx.image.resize). Random operators draw
their factors from the context's generator, one draw per call (one per batch).
"""
import numpy as np

from ...base import MXNetError
from ...backend.image_resize import resize as _resize_hwc
from ..params import Field, Float, Int, Schema, Shape, Bool
from ..registry import Op, ShapeError, register
from ..dtypes import restrict_dtypes
from ..out_contract import adopt_out_contract

_GRAY = np.array([0.299, 0.587, 0.114])
# AlexNet's PCA of ImageNet RGB pixels (the constants MXNet's lighting uses).
_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]])
# RGB <-> YIQ (the rounded inverse MXNet uses) for hue rotation.
_TYIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
_ITYIQ = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])


class _FloatTuple(Field):
    kind = "tuple of <float>"

    def convert(self, v):
        if isinstance(v, (int, float, np.number)):
            return (float(v),)
        return tuple(float(x) for x in v)


def _check_image(opname, shape):
    if shape is not None and len(shape) not in (3, 4):
        raise ShapeError(f"{opname}: expected an (H, W, C) image or an (N, H, W, C) batch, "
                         f"got shape {tuple(shape)}")


def _saturate(xp, y, dtype):
    """y cast to dtype, rounded and clipped for integer types."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return xp.clip(xp.rint(y), info.min, info.max).astype(dtype)
    return y.astype(dtype)


class _ImageOp(Op):
    """One image input, output of the same shape and dtype unless overridden."""
    params = Schema()
    backward_uses = ()

    def infer_shape(self, p, in_shapes):
        _check_image(self.name, in_shapes[0])
        return in_shapes, [in_shapes[0]], []


@register
class ToTensor(_ImageOp):
    """(H, W, C) or (N, H, W, C) pixels in [0, 255] -> float32 (C, H, W) / (N, C, H, W)
    in [0, 1]."""
    name = "_image_to_tensor"

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        _check_image(self.name, s)
        if s is None:
            return in_shapes, [None], []
        s = tuple(s)
        return in_shapes, [s[:-3] + (s[-1],) + s[-3:-1]], []

    def infer_type(self, p, in_types):
        return in_types, [np.dtype(np.float32)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        _check_image(self.name, x.shape)
        y = ctx.xp.moveaxis(x, -1, -3).astype(np.float32) / np.float32(255.0)
        return [ctx.xp.ascontiguousarray(y)]


@register
class Normalize(_ImageOp):
    """(x - mean[c]) / std[c] per channel of (C, H, W) or (N, C, H, W) tensors; one
    value applies to every channel."""
    name = "_image_normalize"
    params = Schema(mean=_FloatTuple((0.0, 0.0, 0.0, 0.0)),
                    std=_FloatTuple((1.0, 1.0, 1.0, 1.0)))
    backward_uses = ("out_grad",)

    def _stats(self, xp, p, x):
        c = x.shape[-3]
        if c > 4:
            raise MXNetError(f"{self.name}: at most 4 channels, got {c}")
        vals = []
        for name in ("mean", "std"):
            v = getattr(p, name)
            if len(v) == 1:
                v = v * c
            elif len(v) < c:
                raise MXNetError(f"{self.name}: {name} has {len(v)} values for {c} channels")
            vals.append(xp.asarray(v[:c], dtype=x.dtype).reshape(c, 1, 1))
        return vals

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        if s is not None and len(s) not in (3, 4):
            raise ShapeError(f"{self.name}: expected a (C, H, W) or (N, C, H, W) tensor, got "
                             f"shape {tuple(s)}")
        return in_shapes, [s], []

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        self.infer_shape(p, [x.shape])
        mean, std = self._stats(ctx.xp, p, x)
        return [((x - mean) / std).astype(x.dtype)]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        g = out_grads[0]
        _, std = self._stats(ctx.xp, p, g)
        return [(g / std).astype(g.dtype)]


@register
@restrict_dtypes(("uint8", "float32", "float64"))
class Resize(_ImageOp):
    """Resize images to ``size`` (w, h), or with one size: a square, or (keep_ratio)
    the shorter side, the other in proportion. ``interp`` is OpenCV's code."""
    name = "_image_resize"
    params = Schema(size=Shape(()), keep_ratio=Bool(False), interp=Int(1))

    def _out_hw(self, p, h, w):
        size = tuple(p.size)
        if len(size) == 2:
            return size[1], size[0]
        if len(size) != 1:
            raise MXNetError(f"{self.name}: size must have 1 or 2 values, got {size}")
        s = size[0]
        if not p.keep_ratio:
            return s, s
        if h <= w:
            return s, int(w * s / h)
        return int(h * s / w), s

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        _check_image(self.name, s)
        if s is None:
            return in_shapes, [None], []
        s = tuple(s)
        oh, ow = self._out_hw(p, s[-3], s[-2])
        return in_shapes, [s[:-3] + (oh, ow, s[-1])], []

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        _check_image(self.name, x.shape)
        oh, ow = self._out_hw(p, x.shape[-3], x.shape[-2])
        imgs = x.reshape((-1,) + x.shape[-3:])
        res = [_resize_hwc(np.asarray(im), ow, oh, p.interp) for im in imgs]
        res = [r[:, :, None] if r.ndim == 2 else r for r in res]
        return [ctx.xp.asarray(np.stack(res).reshape(x.shape[:-3] + (oh, ow, x.shape[-1])),
                               dtype=x.dtype)]


@register
class ImageCrop(_ImageOp):
    """The (height, width) window at column x, row y of each image."""
    name = "_image_crop"
    params = Schema(x=Int(), y=Int(), width=Int(), height=Int())
    backward_uses = ("out_grad",)

    def _check(self, p, s):
        h, w = s[-3], s[-2]
        if p.x < 0 or p.y < 0 or p.width <= 0 or p.height <= 0 or \
                p.x + p.width > w or p.y + p.height > h:
            raise MXNetError(f"{self.name}: a {p.width}x{p.height} window at ({p.x}, {p.y}) "
                             f"does not fit a {w}x{h} image")

    def infer_shape(self, p, in_shapes):
        s = in_shapes[0]
        _check_image(self.name, s)
        if s is None:
            return in_shapes, [None], []
        s = tuple(s)
        self._check(p, s)
        return in_shapes, [s[:-3] + (p.height, p.width, s[-1])], []

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        self.infer_shape(p, [x.shape])
        return [ctx.xp.ascontiguousarray(x[..., p.y:p.y + p.height, p.x:p.x + p.width, :])]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        g = out_grads[0]
        res = ctx.xp.zeros(tuple(ctx.in_shapes[0]), g.dtype)
        res[..., p.y:p.y + p.height, p.x:p.x + p.width, :] = g
        return [res]


class _Flip(_ImageOp):
    axis = -2           # width
    random = False
    backward_uses = ("out_grad",)

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        _check_image(self.name, x.shape)
        if self.random and ctx.rng.random() >= 0.5:
            return [x.copy()]
        return [ctx.xp.ascontiguousarray(ctx.xp.flip(x, self.axis))]


for _nm, _axis, _doc in (("flip_left_right", -2, "left and right"),
                         ("flip_top_bottom", -3, "top and bottom")):
    register(type(f"Image_{_nm}", (_Flip,), {
        "name": f"_image_{_nm}", "axis": _axis,
        "__doc__": f"Swap each image's {_doc}.",
        "backward": lambda self, ctx, p, og, i, o, a, in_grad=None:
            [ctx.xp.ascontiguousarray(ctx.xp.flip(og[0], self.axis))]}))
    register(type(f"Image_random_{_nm}", (_Flip,), {
        "name": f"_image_random_{_nm}", "axis": _axis, "random": True,
        "resources": ("random",),
        "__doc__": f"Swap each image's {_doc} with probability 1/2 (one draw per call)."}))


# --- colour ---------------------------------------------------------------------------
def _lighting(xp, x, alpha):
    rgb = _EIGVEC @ (np.asarray(alpha, np.float64) * _EIGVAL)
    return _saturate(xp, x.astype(np.float64) + xp.asarray(rgb), x.dtype)


def _brightness(xp, x, a):
    return x * a


def _contrast(xp, x, a):
    gray = (x @ xp.asarray(_GRAY)).mean(axis=(-2, -1), keepdims=True)[..., None]
    return x * a + gray * (1 - a)


def _saturation(xp, x, a):
    gray = (x @ xp.asarray(_GRAY))[..., None]
    return x * a + gray * (1 - a)


def _hue(xp, x, a):
    u, w = np.cos(a * np.pi), np.sin(a * np.pi)
    rot = np.array([[1, 0, 0], [0, u, -w], [0, w, u]])
    t = _ITYIQ @ rot @ _TYIQ
    return x @ xp.asarray(t.T)


@register
class AdjustLighting(_ImageOp):
    """Add AlexNet's PCA lighting shift with weights ``alpha`` (one per component)."""
    name = "_image_adjust_lighting"
    params = Schema(alpha=_FloatTuple())

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        _check_image(self.name, x.shape)
        if len(p.alpha) != 3 or x.shape[-1] != 3:
            raise MXNetError(f"{self.name}: needs 3 alpha values and RGB images")
        return [_lighting(ctx.xp, x, p.alpha)]


@register
class RandomLighting(_ImageOp):
    """adjust_lighting with alpha drawn from N(0, alpha_std)."""
    name = "_image_random_lighting"
    params = Schema(alpha_std=Float(0.05))
    resources = ("random",)

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        _check_image(self.name, x.shape)
        alpha = ctx.rng.normal(0, p.alpha_std, size=3) if p.alpha_std > 0 else np.zeros(3)
        return [_lighting(ctx.xp, x, np.asarray(alpha, dtype=np.float64))]


class _RandomFactor(_ImageOp):
    """Blend each image with a colour transform by a factor from U(min, max)."""
    params = Schema(min_factor=Float(), max_factor=Float())
    resources = ("random",)
    fn = None

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        _check_image(self.name, x.shape)
        if p.min_factor > p.max_factor:
            raise MXNetError(f"{self.name}: min_factor {p.min_factor} exceeds max_factor "
                             f"{p.max_factor}")
        a = float(ctx.rng.uniform(p.min_factor, p.max_factor))
        return [_saturate(ctx.xp, type(self).fn(ctx.xp, x.astype(np.float64), a), x.dtype)]


for _nm, _fn, _doc in (("brightness", _brightness, "x * a"),
                       ("contrast", _contrast, "x * a + mean gray * (1 - a)"),
                       ("saturation", _saturation, "x * a + gray(x) * (1 - a)"),
                       ("hue", _hue, "hue rotated by a * 180 degrees")):
    register(type(f"Image_random_{_nm}", (_RandomFactor,), {
        "name": f"_image_random_{_nm}", "fn": staticmethod(_fn),
        "__doc__": f"Random {_nm}: {_doc}, a from U(min_factor, max_factor)."}))


@register
class RandomColorJitter(_ImageOp):
    """Random brightness, contrast, saturation (factors 1 + U(-v, v)) and hue (U(-v, v))
    jitter, each skipped when its value is 0."""
    name = "_image_random_color_jitter"
    params = Schema(brightness=Float(), contrast=Float(), saturation=Float(), hue=Float())
    resources = ("random",)

    def forward(self, ctx, p, inputs, aux, out=None):
        x = inputs[0]
        _check_image(self.name, x.shape)
        y = x.astype(np.float64)
        rng = ctx.rng
        for fn, v in ((_brightness, p.brightness), (_contrast, p.contrast),
                      (_saturation, p.saturation)):
            if v > 0:
                y = fn(ctx.xp, y, 1.0 + float(rng.uniform(-v, v)))
        if p.hue > 0:
            y = _hue(ctx.xp, y, float(rng.uniform(-p.hue, p.hue)))
        return [_saturate(ctx.xp, y, x.dtype)]


adopt_out_contract(__name__)

"""Convolution, transposed convolution, pooling and padding layers (MXNet 1.9.1's
``mx.gluon.nn`` conv layers)."""
from ...base import MXNetError, numeric_types
from ..block import HybridBlock
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
           "Conv3DTranspose", "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D",
           "AvgPool2D", "AvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D"]


def _tuple(value, n):
    return (value,) * n if isinstance(value, numeric_types) else tuple(value)


def _weight_shape(op_name, layout, channels, in_channels, groups, kernel):
    """The weight shape MXNet infers for Convolution/Deconvolution; 0 where in_channels
    is not known yet."""
    if op_name == "Convolution":
        per_group = in_channels // groups if in_channels else 0
        first, second = channels, per_group
    else:
        first, second = in_channels, channels // groups
    if layout.find("C") == 1:                      # NCW, NCHW, NCDHW
        return (first, second) + tuple(kernel)
    return (first,) + tuple(kernel) + (second,)     # channels-last layouts


def _check_conv_args(op_name, channels, in_channels, groups, kernel, strides, dilation,
                     adj):
    """MXNet infers the weight shape when a conv layer is built, so arguments its
    operator rejects fail at construction, not at the first forward."""
    def fail(msg):
        raise MXNetError(f"{op_name}: {msg}")
    if groups <= 0:
        fail(f"groups must be positive, got {groups}")
    if channels <= 0:
        fail(f"channels must be positive, got {channels}")
    if channels % groups or in_channels % groups:
        fail(f"channels ({channels}) and in_channels ({in_channels}) must be multiples "
             f"of groups ({groups})")
    for name, value in (("kernel_size", kernel), ("strides", strides),
                        ("dilation", dilation)):
        if any(v <= 0 for v in value):
            fail(f"{name} must be positive, got {value}")
    if adj is not None and any(a >= s for a, s in zip(adj, strides)):
        fail(f"output_padding {adj} must be smaller than strides {strides}")


class _Conv(HybridBlock):
    """Shared body of the convolution layers."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout,
                 in_channels=0, activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", op_name="Convolution", adj=None, prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            n = len(kernel_size)
            strides, padding, dilation = (_tuple(strides, n), _tuple(padding, n),
                                          _tuple(dilation, n))
            self._op_name = op_name
            self._kwargs = {"kernel": kernel_size, "stride": strides, "dilate": dilation,
                            "pad": padding, "num_filter": channels, "num_group": groups,
                            "no_bias": not use_bias, "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = adj
            _check_conv_args(op_name, channels, in_channels, groups, kernel_size, strides,
                             dilation, adj)
            wshape = _weight_shape(op_name, layout, channels, in_channels, groups,
                                   kernel_size)
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + "_")
            else:
                self.act = None

    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        if bias is None:
            out = op(x, weight, name="fwd", **self._kwargs)
        else:
            out = op(x, weight, bias, name="fwd", **self._kwargs)
        if self.act is not None:
            out = self.act(out)
        return out

    def _alias(self):
        return "conv"

    def __repr__(self):
        k = self._kwargs
        n = len(k["kernel"])
        s = (f"{self.__class__.__name__}({{mapping}}, kernel_size={k['kernel']}, "
             f"stride={k['stride']}")
        if k["pad"] != (0,) * n:
            s += f", padding={k['pad']}"
        if k["dilate"] != (1,) * n:
            s += f", dilation={k['dilate']}"
        if k["num_group"] != 1:
            s += f", groups={k['num_group']}"
        if self.bias is None:
            s += ", bias=False"
        if self.act:
            s += f", {self.act}"
        s += ")"
        shape = self.weight.shape
        return s.format(mapping=f"{shape[1] if shape[1] else None} -> {shape[0]}")


def _conv_kernel(kernel_size, n):
    kernel_size = _tuple(kernel_size, n)
    if len(kernel_size) != n:
        raise AssertionError(f"kernel_size must be a number or a list of {n} ints")
    return kernel_size


class Conv1D(_Conv):
    """1-D convolution over ``(N, C, W)`` inputs (layout 'NCW' only, as in MXNet 1.9.1)."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1,
                 layout="NCW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        if layout != "NCW":
            raise AssertionError("Only supports 'NCW' layout for now")
        super().__init__(channels, _conv_kernel(kernel_size, 1), strides, padding, dilation,
                         groups, layout, in_channels, activation, use_bias,
                         weight_initializer, bias_initializer, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over ``(N, C, H, W)`` inputs (layout 'NCHW' or 'NHWC')."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, layout="NCHW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        if layout not in ("NCHW", "NHWC"):
            raise AssertionError("Only supports 'NCHW' and 'NHWC' layout for now")
        super().__init__(channels, _conv_kernel(kernel_size, 2), strides, padding, dilation,
                         groups, layout, in_channels, activation, use_bias,
                         weight_initializer, bias_initializer, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over ``(N, C, D, H, W)`` inputs (layout 'NCDHW' or 'NDHWC')."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout="NCDHW", activation=None,
                 use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        if layout not in ("NCDHW", "NDHWC"):
            raise AssertionError("Only supports 'NCDHW' and 'NDHWC' layout for now")
        super().__init__(channels, _conv_kernel(kernel_size, 3), strides, padding, dilation,
                         groups, layout, in_channels, activation, use_bias,
                         weight_initializer, bias_initializer, **kwargs)


class _ConvTranspose(_Conv):
    def __init__(self, n, channels, kernel_size, strides, padding, output_padding, dilation,
                 groups, layout, activation, use_bias, weight_initializer, bias_initializer,
                 in_channels, **kwargs):
        kernel_size = _conv_kernel(kernel_size, n)
        output_padding = _tuple(output_padding, n)
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name="Deconvolution", adj=output_padding,
                         **kwargs)
        self.outpad = output_padding


class Conv1DTranspose(_ConvTranspose):
    """1-D transposed convolution (``Deconvolution``), layout 'NCW' only."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0,
                 dilation=1, groups=1, layout="NCW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        if layout != "NCW":
            raise AssertionError("Only supports 'NCW' layout for now")
        super().__init__(1, channels, kernel_size, strides, padding, output_padding,
                         dilation, groups, layout, activation, use_bias, weight_initializer,
                         bias_initializer, in_channels, **kwargs)


class Conv2DTranspose(_ConvTranspose):
    """2-D transposed convolution (``Deconvolution``), layout 'NCHW' or 'NHWC'."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 output_padding=(0, 0), dilation=(1, 1), groups=1, layout="NCHW",
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        if layout not in ("NCHW", "NHWC"):
            raise AssertionError("Only supports 'NCHW' and 'NHWC' layout for now")
        super().__init__(2, channels, kernel_size, strides, padding, output_padding,
                         dilation, groups, layout, activation, use_bias, weight_initializer,
                         bias_initializer, in_channels, **kwargs)


class Conv3DTranspose(_ConvTranspose):
    """3-D transposed convolution (``Deconvolution``), layout 'NCDHW' or 'NDHWC'."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 output_padding=(0, 0, 0), dilation=(1, 1, 1), groups=1, layout="NCDHW",
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        if layout not in ("NCDHW", "NDHWC"):
            raise AssertionError("Only supports 'NCDHW' and 'NDHWC' layout for now")
        super().__init__(3, channels, kernel_size, strides, padding, output_padding,
                         dilation, groups, layout, activation, use_bias, weight_initializer,
                         bias_initializer, in_channels, **kwargs)


class _Pooling(HybridBlock):
    """Shared body of the pooling layers."""

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type,
                 layout, count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        n = len(pool_size)
        if strides is None:
            strides = pool_size
        self._kwargs = {"kernel": pool_size, "stride": _tuple(strides, n),
                        "pad": _tuple(padding, n), "global_pool": global_pool,
                        "pool_type": pool_type, "layout": layout,
                        "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self):
        return "pool"

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self):
        k = self._kwargs
        return (f"{self.__class__.__name__}(size={k['kernel']}, stride={k['stride']}, "
                f"padding={k['pad']}, ceil_mode={k['pooling_convention'] == 'full'}, "
                f"global_pool={k['global_pool']}, pool_type={k['pool_type']}, "
                f"layout={k['layout']})")


def _pool_size(pool_size, n):
    pool_size = _tuple(pool_size, n)
    if len(pool_size) != n:
        raise AssertionError(f"pool_size must be a number or a list of {n} ints")
    return pool_size


def _check_layout(layout, allowed):
    if layout not in allowed:
        raise AssertionError(f"Only {' and '.join(allowed)} layouts are valid for "
                             f"{len(allowed[0]) - 2}D Pooling")


class MaxPool1D(_Pooling):
    """Max pooling over ``(N, C, W)``."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 **kwargs):
        _check_layout(layout, ("NCW", "NWC"))
        super().__init__(_pool_size(pool_size, 1), strides, padding, ceil_mode, False, "max",
                         layout, **kwargs)


class MaxPool2D(_Pooling):
    """Max pooling over ``(N, C, H, W)``."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW",
                 ceil_mode=False, **kwargs):
        _check_layout(layout, ("NCHW", "NHWC"))
        super().__init__(_pool_size(pool_size, 2), strides, padding, ceil_mode, False, "max",
                         layout, **kwargs)


class MaxPool3D(_Pooling):
    """Max pooling over ``(N, C, D, H, W)``."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCDHW", **kwargs):
        _check_layout(layout, ("NCDHW", "NDHWC"))
        super().__init__(_pool_size(pool_size, 3), strides, padding, ceil_mode, False, "max",
                         layout, **kwargs)


class AvgPool1D(_Pooling):
    """Average pooling over ``(N, C, W)``."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 count_include_pad=True, **kwargs):
        _check_layout(layout, ("NCW", "NWC"))
        super().__init__(_pool_size(pool_size, 1), strides, padding, ceil_mode, False, "avg",
                         layout, count_include_pad, **kwargs)


class AvgPool2D(_Pooling):
    """Average pooling over ``(N, C, H, W)``."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCHW", count_include_pad=True, **kwargs):
        _check_layout(layout, ("NCHW", "NHWC"))
        super().__init__(_pool_size(pool_size, 2), strides, padding, ceil_mode, False, "avg",
                         layout, count_include_pad, **kwargs)


class AvgPool3D(_Pooling):
    """Average pooling over ``(N, C, D, H, W)``."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCDHW", count_include_pad=True, **kwargs):
        _check_layout(layout, ("NCDHW", "NDHWC"))
        super().__init__(_pool_size(pool_size, 3), strides, padding, ceil_mode, False, "avg",
                         layout, count_include_pad, **kwargs)


def _global(n, pool_type, layout, allowed, **kwargs):
    _check_layout(layout, allowed)
    return ((1,) * n, None, 0, True, True, pool_type, layout)


class GlobalMaxPool1D(_Pooling):
    """Max over the whole width: ``(N, C, W)`` -> ``(N, C, 1)``."""

    def __init__(self, layout="NCW", **kwargs):
        super().__init__(*_global(1, "max", layout, ("NCW", "NWC")), **kwargs)


class GlobalMaxPool2D(_Pooling):
    """Max over the spatial axes: ``(N, C, H, W)`` -> ``(N, C, 1, 1)``."""

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__(*_global(2, "max", layout, ("NCHW", "NHWC")), **kwargs)


class GlobalMaxPool3D(_Pooling):
    """Max over the spatial axes of ``(N, C, D, H, W)``."""

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__(*_global(3, "max", layout, ("NCDHW", "NDHWC")), **kwargs)


class GlobalAvgPool1D(_Pooling):
    """Mean over the whole width: ``(N, C, W)`` -> ``(N, C, 1)``."""

    def __init__(self, layout="NCW", **kwargs):
        super().__init__(*_global(1, "avg", layout, ("NCW", "NWC")), **kwargs)


class GlobalAvgPool2D(_Pooling):
    """Mean over the spatial axes: ``(N, C, H, W)`` -> ``(N, C, 1, 1)``."""

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__(*_global(2, "avg", layout, ("NCHW", "NHWC")), **kwargs)


class GlobalAvgPool3D(_Pooling):
    """Mean over the spatial axes of ``(N, C, D, H, W)``."""

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__(*_global(3, "avg", layout, ("NCDHW", "NDHWC")), **kwargs)


class ReflectionPad2D(HybridBlock):
    """Pad the last two axes of ``(N, C, H, W)`` by reflection: ``padding`` on every
    side, or the 8-tuple ``pad_width`` of the ``pad`` operator."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, numeric_types):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        if len(padding) != 8:
            raise AssertionError("ReflectionPad2D padding must have 8 elements")
        self._padding = tuple(padding)

    def hybrid_forward(self, F, x):
        return F.pad(x, mode="reflect", pad_width=self._padding)

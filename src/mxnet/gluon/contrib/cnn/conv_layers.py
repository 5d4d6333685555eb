"""Deformable convolution layers: a convolution computes per-position offsets (and, for
the modulated version, masks) from the input, and the deformable convolution operator
samples the input at the displaced kernel taps.

Parameters and defaults follow MXNet 1.9.1's ``gluon.contrib.cnn``: the offset
convolution starts at zero (weights and bias), so a fresh layer computes an ordinary
convolution; it uses the layer's kernel, stride, padding, dilation and groups. The
modulated layer's offset convolution gives ``num_deformable_group * 3 * kh * kw``
channels: the first two thirds are the offsets, the rest the masks, taken as
``2 * sigmoid(m)`` (1 at the zero start).
"""
from ...block import HybridBlock
from ...nn.activations import Activation
from ...nn.conv_layers import _tuple

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]


class _DeformableBase(HybridBlock):
    """Shared construction: the two convolutions' parameters and keyword sets."""

    _offset_per_tap = 2          # offset channels per kernel tap and deformable group

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups,
                 num_deformable_group, layout, use_bias, in_channels, activation,
                 weight_initializer, bias_initializer, offset_weight_initializer,
                 offset_bias_initializer, offset_use_bias, prefix, params):
        super().__init__(prefix=prefix, params=params)
        if layout != "NCHW":
            raise AssertionError("Only supports 'NCHW' layout for now")
        kernel = _tuple(kernel_size, 2)
        strides, padding, dilation = (_tuple(strides, 2), _tuple(padding, 2),
                                      _tuple(dilation, 2))
        self._channels, self._in_channels = channels, in_channels
        taps = kernel[0] * kernel[1]
        offset_channels = num_deformable_group * self._offset_per_tap * taps
        self._offset_split = num_deformable_group * 2 * taps     # offsets, then masks
        geometry = {"kernel": kernel, "stride": strides, "dilate": dilation,
                    "pad": padding, "num_group": groups, "layout": layout}
        self._kwargs_offset = dict(geometry, num_filter=offset_channels,
                                   no_bias=not offset_use_bias)
        self._kwargs_deformable_conv = dict(geometry, num_filter=channels,
                                            num_deformable_group=num_deformable_group,
                                            no_bias=not use_bias)
        in_per_group = in_channels // groups if in_channels else 0
        with self.name_scope():
            self._make_params(kernel, offset_channels, in_per_group, use_bias,
                              offset_use_bias, weight_initializer, bias_initializer,
                              offset_weight_initializer, offset_bias_initializer)
            self.act = Activation(activation, prefix=activation + "_") \
                if activation is not None else None

    def _offset_params(self, kernel, offset_channels, in_per_group, offset_use_bias,
                       weight_init, bias_init):
        self.offset_weight = self.params.get(
            "offset_weight", shape=(offset_channels, in_per_group) + kernel,
            init=weight_init, allow_deferred_init=True)
        self.offset_bias = self.params.get(
            "offset_bias", shape=(offset_channels,), init=bias_init,
            allow_deferred_init=True) if offset_use_bias else None

    def _conv_params(self, kernel, in_per_group, use_bias, weight_init, bias_init):
        self.deformable_conv_weight = self.params.get(
            "deformable_conv_weight", shape=(self._channels, in_per_group) + kernel,
            init=weight_init, allow_deferred_init=True)
        self.deformable_conv_bias = self.params.get(
            "deformable_conv_bias", shape=(self._channels,), init=bias_init,
            allow_deferred_init=True) if use_bias else None

    def _offsets(self, F, x, offset_weight, offset_bias):
        if offset_bias is None:
            return F.Convolution(x, offset_weight, cudnn_off=True, **self._kwargs_offset)
        return F.Convolution(x, offset_weight, offset_bias, cudnn_off=True,
                             **self._kwargs_offset)

    def _activated(self, out):
        return self.act(out) if self.act is not None else out

    def _alias(self):
        return "deformable_conv"

    def __repr__(self):
        k = self._kwargs_deformable_conv
        s = (f"{self.__class__.__name__}({{mapping}}, kernel_size={k['kernel']}, "
             f"stride={k['stride']}")
        if k["pad"] != (0, 0):
            s += f", padding={k['pad']}"
        if k["dilate"] != (1, 1):
            s += f", dilation={k['dilate']}"
        if k["num_group"] != 1:
            s += f", groups={k['num_group']}"
        if self.deformable_conv_bias is None:
            s += ", bias=False"
        if self.act is not None:
            s += f", {self.act}"
        shape = self.deformable_conv_weight.shape
        return (s + ")").format(mapping=f"{shape[1] if shape[1] else None} -> {shape[0]}")


class DeformableConvolution(_DeformableBase):
    """2-D deformable convolution (DCN v1, Dai et al. 2017) over NCHW input: an offset
    convolution (zero-initialized) predicts ``2 * kh * kw`` displacements per
    deformable group and position, ``contrib.DeformableConvolution`` samples there.

    channels: output channels; kernel_size, strides, padding, dilation: int or pair;
    groups: convolution groups; num_deformable_group: groups of channels sharing
    offsets; use_bias / offset_use_bias: biases of the two convolutions; activation:
    applied to the output (None: none); in_channels: 0 to infer at the first call."""

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout="NCHW",
                 use_bias=True, in_channels=0, activation=None, weight_initializer=None,
                 bias_initializer="zeros", offset_weight_initializer="zeros",
                 offset_bias_initializer="zeros", offset_use_bias=True,
                 op_name="DeformableConvolution", adj=None, prefix=None, params=None):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups,
                         num_deformable_group, layout, use_bias, in_channels, activation,
                         weight_initializer, bias_initializer, offset_weight_initializer,
                         offset_bias_initializer, offset_use_bias, prefix, params)

    def _make_params(self, kernel, offset_channels, in_per_group, use_bias,
                     offset_use_bias, weight_init, bias_init, offset_weight_init,
                     offset_bias_init):
        # MXNet's order: the offset convolution's parameters first
        self._offset_params(kernel, offset_channels, in_per_group, offset_use_bias,
                            offset_weight_init, offset_bias_init)
        self._conv_params(kernel, in_per_group, use_bias, weight_init, bias_init)

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        offset = self._offsets(F, x, offset_weight, offset_bias)
        args = [x, offset, deformable_conv_weight] + \
            ([] if deformable_conv_bias is None else [deformable_conv_bias])
        return self._activated(F.contrib.DeformableConvolution(
            *args, **self._kwargs_deformable_conv))


class ModulatedDeformableConvolution(_DeformableBase):
    """2-D modulated deformable convolution (DCN v2, Zhu et al. 2018) over NCHW input:
    the offset convolution predicts ``3 * kh * kw`` channels per deformable group and
    position, displacements then masks; each sampled value is weighted by
    ``2 * sigmoid(mask)``. Arguments as for ``DeformableConvolution``."""

    _offset_per_tap = 3

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout="NCHW",
                 use_bias=True, in_channels=0, activation=None, weight_initializer=None,
                 bias_initializer="zeros", offset_weight_initializer="zeros",
                 offset_bias_initializer="zeros", offset_use_bias=True,
                 op_name="ModulatedDeformableConvolution", adj=None, prefix=None,
                 params=None):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups,
                         num_deformable_group, layout, use_bias, in_channels, activation,
                         weight_initializer, bias_initializer, offset_weight_initializer,
                         offset_bias_initializer, offset_use_bias, prefix, params)

    def _alias(self):
        return "modulated_deformable_conv"

    def _make_params(self, kernel, offset_channels, in_per_group, use_bias,
                     offset_use_bias, weight_init, bias_init, offset_weight_init,
                     offset_bias_init):
        # MXNet's order: the deformable convolution's parameters first
        self._conv_params(kernel, in_per_group, use_bias, weight_init, bias_init)
        self._offset_params(kernel, offset_channels, in_per_group, offset_use_bias,
                            offset_weight_init, offset_bias_init)

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        out = self._offsets(F, x, offset_weight, offset_bias)
        split = self._offset_split
        offset = F.slice_axis(out, axis=1, begin=0, end=split)
        mask = F.sigmoid(F.slice_axis(out, axis=1, begin=split, end=None)) * 2
        args = [x, offset, mask, deformable_conv_weight] + \
            ([] if deformable_conv_bias is None else [deformable_conv_bias])
        return self._activated(F.contrib.ModulatedDeformableConvolution(
            *args, **self._kwargs_deformable_conv))

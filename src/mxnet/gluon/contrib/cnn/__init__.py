"""mx.gluon.contrib.cnn: deformable convolution layers (MXNet 1.9.1's names)."""
from . import conv_layers  # noqa: F401
from .conv_layers import DeformableConvolution, ModulatedDeformableConvolution

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution", "conv_layers"]

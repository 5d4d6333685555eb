"""SqueezeNet 1.0 and 1.1 (Iandola et al., "SqueezeNet: AlexNet-level accuracy with 50x
fewer parameters and <0.5MB model size", 2016), as in MXNet's model zoo."""
import os

from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ...nn import HybridConcurrent
from ..model_store import data_dir, load_pretrained, pretrained_doc

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1", "get_squeezenet"]


def _make_fire(squeeze_channels, expand1x1_channels, expand3x3_channels):
    out = nn.HybridSequential(prefix="")
    out.add(_make_fire_conv(squeeze_channels, 1))
    paths = HybridConcurrent(axis=1, prefix="")
    paths.add(_make_fire_conv(expand1x1_channels, 1))
    paths.add(_make_fire_conv(expand3x3_channels, 3, 1))
    out.add(paths)
    return out


def _make_fire_conv(channels, kernel_size, padding=0):
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size, padding=padding))
    out.add(nn.Activation("relu"))
    return out


# (pool | (squeeze, expand1x1, expand3x3)) after the stem, per version
_FIRES = {"1.0": ["pool", (16, 64, 64), (16, 64, 64), (32, 128, 128), "pool",
                  (32, 128, 128), (48, 192, 192), (48, 192, 192), (64, 256, 256), "pool",
                  (64, 256, 256)],
          "1.1": ["pool", (16, 64, 64), (16, 64, 64), "pool", (32, 128, 128),
                  (32, 128, 128), "pool", (48, 192, 192), (48, 192, 192), (64, 256, 256),
                  (64, 256, 256)]}


class SqueezeNet(HybridBlock):
    r"""SqueezeNet model.

    Parameters
    ----------
    version : str
        Version of squeezenet. Options are '1.0', '1.1'.
    classes : int, default 1000
        Number of classification classes.
    """

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        assert version in ["1.0", "1.1"], \
            f"Unsupported SqueezeNet version {version}: 1.0 or 1.1 expected"
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            if version == "1.0":
                self.features.add(nn.Conv2D(96, kernel_size=7, strides=2))
            else:
                self.features.add(nn.Conv2D(64, kernel_size=3, strides=2))
            self.features.add(nn.Activation("relu"))
            for item in _FIRES[version]:
                if item == "pool":
                    self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                else:
                    self.features.add(_make_fire(*item))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1))
            self.output.add(nn.Activation("relu"))
            self.output.add(nn.AvgPool2D(13))
            self.output.add(nn.Flatten())

    def hybrid_forward(self, F, x):
        x = self.features(x)
        return self.output(x)


@pretrained_doc
def get_squeezenet(version, pretrained=False, ctx=cpu(),
                   root=os.path.join(data_dir(), "models"), **kwargs):
    r"""SqueezeNet model of ``version`` '1.0' or '1.1'.

    Parameters
    ----------
    version : str
        Version of squeezenet. Options are '1.0', '1.1'.
    """
    return load_pretrained(SqueezeNet(version, **kwargs), f"squeezenet{version}", pretrained,
                           ctx, root)


def squeezenet1_0(**kwargs):
    r"""SqueezeNet 1.0 model. Takes ``pretrained``, ``ctx`` and ``root`` as
    ``get_squeezenet``."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs):
    r"""SqueezeNet 1.1 model (2.4x less computation than 1.0). Takes ``pretrained``,
    ``ctx`` and ``root`` as ``get_squeezenet``."""
    return get_squeezenet("1.1", **kwargs)

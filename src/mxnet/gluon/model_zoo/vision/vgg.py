"""VGG (Simonyan and Zisserman, "Very Deep Convolutional Networks for Large-Scale Image
Recognition", 2014), with and without batch normalisation, as in MXNet's model zoo."""
import os

from ....context import cpu
from ....initializer import Xavier
from ...block import HybridBlock
from ... import nn
from ..model_store import data_dir, load_pretrained, pretrained_doc

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn",
           "vgg19_bn", "get_vgg"]


class VGG(HybridBlock):
    r"""VGG model.

    Parameters
    ----------
    layers : list of int
        Numbers of layers in each feature block.
    filters : list of int
        Numbers of filters in each feature block. List length should match the layers.
    classes : int, default 1000
        Number of classification classes.
    batch_norm : bool, default False
        Use batch normalization.
    """

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(filters)
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                       bias_initializer="zeros"))
            self.features.add(nn.Dropout(rate=0.5))
            self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                       bias_initializer="zeros"))
            self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal",
                                   bias_initializer="zeros")

    def _make_features(self, layers, filters, batch_norm):
        featurizer = nn.HybridSequential(prefix="")
        for i, num in enumerate(layers):
            for _ in range(num):
                featurizer.add(nn.Conv2D(filters[i], kernel_size=3, padding=1,
                                         weight_initializer=Xavier(rnd_type="gaussian",
                                                                   factor_type="out",
                                                                   magnitude=2),
                                         bias_initializer="zeros"))
                if batch_norm:
                    featurizer.add(nn.BatchNorm())
                featurizer.add(nn.Activation("relu"))
            featurizer.add(nn.MaxPool2D(strides=2))
        return featurizer

    def hybrid_forward(self, F, x):
        x = self.features(x)
        return self.output(x)


vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


@pretrained_doc
def get_vgg(num_layers, pretrained=False, ctx=cpu(), root=os.path.join(data_dir(), "models"),
            **kwargs):
    r"""VGG model with ``num_layers`` layers (11, 13, 16 or 19); ``batch_norm=True``
    gives the ``_bn`` variant.

    Parameters
    ----------
    num_layers : int
        Number of layers for the variant of VGG. Options are 11, 13, 16, 19.
    """
    layers, filters = vgg_spec[num_layers]
    suffix = "_bn" if kwargs.get("batch_norm") else ""
    return load_pretrained(VGG(layers, filters, **kwargs), f"vgg{num_layers}{suffix}",
                           pretrained, ctx, root)


def _variant(num_layers, batch_norm):
    def build(**kwargs):
        if batch_norm:
            kwargs["batch_norm"] = True
        return get_vgg(num_layers, **kwargs)
    build.__name__ = f"vgg{num_layers}{'_bn' if batch_norm else ''}"
    build.__doc__ = (f"VGG-{num_layers} model{' with batch normalization' if batch_norm else ''}."
                     " Takes ``pretrained``, ``ctx`` and ``root`` as ``get_vgg``.")
    return build


vgg11 = _variant(11, False)
vgg13 = _variant(13, False)
vgg16 = _variant(16, False)
vgg19 = _variant(19, False)
vgg11_bn = _variant(11, True)
vgg13_bn = _variant(13, True)
vgg16_bn = _variant(16, True)
vgg19_bn = _variant(19, True)

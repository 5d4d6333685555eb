"""AlexNet (Krizhevsky et al., "One weird trick for parallelizing convolutional neural
networks", 2014), as in MXNet's model zoo."""
import os

from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import data_dir, load_pretrained, pretrained_doc

__all__ = ["AlexNet", "alexnet"]


class AlexNet(HybridBlock):
    r"""AlexNet model.

    Parameters
    ----------
    classes : int, default 1000
        Number of classes for the output layer.
    """

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                self.features.add(nn.Conv2D(64, kernel_size=11, strides=4, padding=2,
                                            activation="relu"))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Conv2D(192, kernel_size=5, padding=2,
                                            activation="relu"))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Conv2D(384, kernel_size=3, padding=1,
                                            activation="relu"))
                self.features.add(nn.Conv2D(256, kernel_size=3, padding=1,
                                            activation="relu"))
                self.features.add(nn.Conv2D(256, kernel_size=3, padding=1,
                                            activation="relu"))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Flatten())
                self.features.add(nn.Dense(4096, activation="relu"))
                self.features.add(nn.Dropout(0.5))
                self.features.add(nn.Dense(4096, activation="relu"))
                self.features.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        x = self.features(x)
        return self.output(x)


@pretrained_doc
def alexnet(pretrained=False, ctx=cpu(), root=os.path.join(data_dir(), "models"), **kwargs):
    r"""AlexNet model.

    Parameters
    ----------
    """
    return load_pretrained(AlexNet(**kwargs), "alexnet", pretrained, ctx, root)

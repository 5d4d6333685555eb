"""Contrib operators inside hybridized Gluon blocks (the way GluonCV calls them through
F.contrib): the hybridized (symbolic) run must equal the imperative one, forward and
backward."""
import numpy as np

import mxnet as mx
from mxnet.gluon import nn
from mxnet.test_utils import assert_almost_equal


class Head(nn.HybridBlock):
    """A miniature detection/segmentation head touching the main contrib families."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.conv = nn.Conv2D(8, 3, padding=1)

    def hybrid_forward(self, F, x, rois, boxes):
        f = self.conv(x)
        up = F.contrib.BilinearResize2D(f, height=12, width=10)
        pooled = F.contrib.AdaptiveAvgPooling2D(up, output_size=(3, 2))
        aligned = F.contrib.ROIAlign(f, rois, pooled_size=(2, 2), spatial_scale=0.5,
                                     sample_ratio=2)
        kept = F.contrib.box_nms(boxes, overlap_thresh=0.4, id_index=0)
        return pooled.sum(axis=(2, 3)), aligned.mean(axis=(2, 3)), kept


def _run(net, x, rois, boxes):
    x = x.copy()
    x.attach_grad()
    with mx.autograd.record():
        a, b, k = net(x, rois, boxes)
        loss = (a * a).sum() + (b * 3).sum()
    loss.backward()
    return a.asnumpy(), b.asnumpy(), k.asnumpy(), x.grad.asnumpy()


def test_hybridized_equals_imperative():
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.randn(2, 3, 8, 8))
    rois = mx.nd.array([[0, 1, 1, 10, 12], [1, 0, 3, 7, 9]])
    b = np.zeros((2, 20, 6), np.float32)
    b[..., 0] = rng.randint(0, 2, (2, 20))
    b[..., 1] = rng.uniform(0, 1, (2, 20))
    b[..., 2:4] = rng.uniform(0, 5, (2, 20, 2))
    b[..., 4:6] = b[..., 2:4] + rng.uniform(1, 4, (2, 20, 2))
    boxes = mx.nd.array(b)
    net = Head()
    net.initialize(mx.init.Xavier())
    imperative = _run(net, x, rois, boxes)
    net.hybridize()
    hybrid = _run(net, x, rois, boxes)
    for i, (u, v) in enumerate(zip(imperative, hybrid)):
        assert_almost_equal(u, v, rtol=1e-5, atol=1e-6, names=(f"imperative {i}",
                                                               f"hybrid {i}"))
    assert (imperative[2][..., 0] >= 0).sum() > 0

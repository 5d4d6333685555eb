"""mx.gluon.contrib: the names MXNet 1.9.1 keeps there are the gluon.nn / gluon.data
classes, and work from either path (behaviour recorded from MXNet 1.9.1)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.gluon import contrib, data, nn


@pytest.mark.parametrize("name", ["HybridConcatenate", "Concatenate", "HybridConcurrent",
                                  "Concurrent", "Identity", "SyncBatchNorm"])
def test_contrib_nn_names_are_gluon_nn_classes(name):
    assert getattr(contrib.nn, name) is getattr(nn, name)
    assert getattr(mx.gluon.contrib.nn, name) is getattr(nn, name)


def test_contrib_data_interval_sampler():
    from mxnet.gluon.contrib.data.sampler import IntervalSampler
    assert IntervalSampler is contrib.data.IntervalSampler is data.sampler.IntervalSampler
    assert list(IntervalSampler(6, 3)) == [0, 3, 1, 4, 2, 5]
    assert len(IntervalSampler(6, 3)) == 6
    assert list(IntervalSampler(7, 3, rollover=False)) == [0, 3, 6]


def test_hybrid_concurrent_from_contrib():
    from mxnet.gluon.contrib.nn import HybridConcurrent, Identity
    net = HybridConcurrent(axis=1)
    net.add(Identity())
    net.add(Identity())
    net.initialize()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = net(mx.nd.array(x)).asnumpy()
    assert np.array_equal(out, np.concatenate([x, x], axis=1))

"""A list update of SGD (what Module and Trainer send) runs as one fused step; it must
give exactly what the per-weight update operators give."""
import numpy as np
import pytest

import mxnet as mx


def _run(aggregate, **opt_kw):
    rng = np.random.RandomState(1)
    shapes = [(5, 3), (7,), (2, 4, 3), (1,)]
    weights = [mx.nd.array(rng.randn(*s)) for s in shapes]
    opt = mx.optimizer.create("sgd", **opt_kw)
    opt.set_lr_mult({1: 0.5})
    opt.set_wd_mult({2: 2.0})
    opt.aggregate_num = 4 if aggregate else 0
    upd = mx.optimizer.get_updater(opt)
    for step in range(3):
        grads = [mx.nd.array(rng.randn(*s) * 3) for s in shapes]
        upd(list(range(len(shapes))), grads, weights)
    return [w.asnumpy() for w in weights]


@pytest.mark.parametrize("kw", [
    dict(learning_rate=0.1),
    dict(learning_rate=0.1, wd=0.01, rescale_grad=0.5, clip_gradient=0.3),
    dict(learning_rate=0.1, momentum=0.9, wd=0.01),
    dict(learning_rate=0.05, momentum=0.5, rescale_grad=0.25, clip_gradient=0.7, wd=0.1),
])
def test_fused_list_update_equals_per_weight_operators(kw):
    for a, b in zip(_run(True, **kw), _run(False, **kw)):
        np.testing.assert_array_equal(a, b)


def test_mixed_dtypes_take_the_per_weight_path():
    opt = mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9)
    upd = mx.optimizer.get_updater(opt)
    w = [mx.nd.ones((3,)), mx.nd.ones((3,), dtype="float64")]
    g = [mx.nd.ones((3,)), mx.nd.ones((3,), dtype="float64")]
    upd([0, 1], g, w)
    for x in w:
        np.testing.assert_allclose(x.asnumpy(), 0.9)

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


def _run_same_arrays(aggregate, wd_steps):
    """Module's case: the same weight, gradient and state arrays every step (the fused
    step is prepared once and reused); wd_steps: the weight decay per step."""
    rng = np.random.RandomState(2)
    shapes = [(6, 4), (4,), (3, 2)]
    weights = [mx.nd.array(rng.randn(*s)) for s in shapes]
    grads = [mx.nd.zeros(s) for s in shapes]
    opt = mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, rescale_grad=0.5)
    opt.aggregate_num = 4 if aggregate else 0
    upd = mx.optimizer.get_updater(opt)
    for wd in wd_steps:
        opt.wd = wd
        for g, s in zip(grads, shapes):
            g[:] = rng.randn(*s)
        upd(list(range(len(shapes))), grads, weights)
    return opt, [w.asnumpy() for w in weights]


def test_fused_step_reused_across_batches_equals_per_weight_operators():
    wd_steps = [0.0, 0.0, 0.01, 0.0, 0.05]      # the decay scratch appears midway
    opt, fused = _run_same_arrays(True, wd_steps)
    assert len(opt._fused_plans) == 1           # one prepared step for the three
    _, plain = _run_same_arrays(False, wd_steps)
    for a, b in zip(fused, plain):
        np.testing.assert_array_equal(a, b)


def test_pickled_optimizer_leaves_out_the_prepared_steps():
    import pickle
    opt, _ = _run_same_arrays(True, [0.0])
    copy = pickle.loads(pickle.dumps(opt))
    assert "_fused_plans" not in copy.__dict__ and copy.momentum == 0.9

"""mx.lr_scheduler against closed-form references of MXNet 1.9.1's schedules."""
import math

import pytest

import mxnet as mx
from mxnet import lr_scheduler as lrs


def test_factor_scheduler():
    s = lrs.FactorScheduler(step=3, factor=0.5, base_lr=1.0, stop_factor_lr=0.1)
    got = [s(n) for n in range(16)]
    # decays once num_update passes each multiple of step, never below stop_factor_lr
    want = [max(1.0 * 0.5 ** max(0, (n - 1) // 3), 0.1) for n in range(16)]
    assert got == pytest.approx(want)


def test_factor_scheduler_with_linear_warmup():
    s = lrs.FactorScheduler(step=3, factor=0.5, base_lr=1.0, warmup_steps=4,
                            warmup_begin_lr=0.2)
    got = [s(n) for n in range(12)]
    # warm-up 0.2 -> 1.0 over 4 updates; the decay count starts at 0 (MXNet's rule)
    want = [0.2, 0.4, 0.6, 0.8, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125]
    assert got == pytest.approx(want)


def test_multifactor_scheduler():
    s = lrs.MultiFactorScheduler(step=[2, 5, 7], factor=0.1, base_lr=1.0)
    got = [s(n) for n in range(10)]
    want = [1.0 * 0.1 ** sum(n > b for b in (2, 5, 7)) for n in range(10)]
    assert got == pytest.approx(want)
    assert s.cur_step_ind == 3 and s.count == 7


def test_poly_scheduler_with_warmup():
    s = lrs.PolyScheduler(max_update=10, base_lr=1.0, pwr=2, final_lr=0.1, warmup_steps=2,
                          warmup_begin_lr=0.5)
    got = [s(n) for n in range(13)]
    want = [0.5 + 0.5 * n / 2 if n < 2 else
            0.1 + 0.9 * (1 - (min(n, 10) - 2) / 8) ** 2 for n in range(13)]
    assert got == pytest.approx(want)


def test_cosine_scheduler_with_constant_warmup():
    s = lrs.CosineScheduler(max_update=10, base_lr=1.0, final_lr=0.1, warmup_steps=2,
                            warmup_mode="constant", warmup_begin_lr=0.3)
    got = [s(n) for n in range(13)]
    want = [0.3 if n < 2 else
            0.1 + 0.9 * (1 + math.cos(math.pi * (min(n, 10) - 2) / 8)) / 2 for n in range(13)]
    assert got == pytest.approx(want)


def test_bad_arguments():
    with pytest.raises(ValueError):
        lrs.FactorScheduler(step=0)
    with pytest.raises(ValueError):
        lrs.FactorScheduler(step=2, factor=1.5)
    with pytest.raises(ValueError):
        lrs.MultiFactorScheduler(step=[3, 2])
    with pytest.raises(ValueError):
        lrs.PolyScheduler(max_update=0)
    with pytest.raises(ValueError):
        lrs.CosineScheduler(max_update=10, base_lr=0.1, warmup_begin_lr=0.5, warmup_steps=2)
    with pytest.raises(ValueError):
        lrs.LRScheduler(warmup_mode="cubic")
    with pytest.raises(ValueError):
        lrs.LRScheduler(warmup_steps=-1)
    with pytest.raises(NotImplementedError):
        lrs.LRScheduler()(1)


def test_defaults():
    s = lrs.LRScheduler()
    assert (s.base_lr, s.warmup_steps, s.warmup_begin_lr, s.warmup_mode) == \
        (0.01, 0, 0, "linear")
    f = lrs.FactorScheduler(step=1)
    assert (f.factor, f.stop_factor_lr) == (1, 1e-8)
    assert lrs.PolyScheduler(max_update=5).power == 2


def test_scheduler_drives_optimizer():
    sched = lrs.MultiFactorScheduler(step=[1], factor=0.5, base_lr=0.2)
    opt = mx.optimizer.SGD(lr_scheduler=sched)
    w = mx.nd.zeros(1)
    opt.update(0, w, mx.nd.ones(1), None)     # num_update 1 -> lr 0.2
    opt.update(0, w, mx.nd.ones(1), None)     # num_update 2 -> lr 0.1
    assert w.asnumpy()[0] == pytest.approx(-0.3)

"""mx.misc: the legacy, stateless learning-rate schedulers."""
import pytest

import mxnet.misc


def test_factor_scheduler_is_a_function_of_the_iteration():
    sched = mxnet.misc.FactorScheduler(step=10, factor=0.5)
    sched.base_lr = 2.0
    got = [sched(i) for i in (0, 9, 10, 25, 30, 0)]
    assert got == [2.0 * 0.5 ** (i // 10) for i in (0, 9, 10, 25, 30, 0)]


@pytest.mark.parametrize("kwargs", [dict(step=0), dict(step=1, factor=1.0)])
def test_factor_scheduler_rejects_bad_settings(kwargs):
    with pytest.raises(ValueError):
        mxnet.misc.FactorScheduler(**kwargs)


def test_base_scheduler_must_be_subclassed():
    with pytest.raises(NotImplementedError):
        mxnet.misc.LearningRateScheduler()(0)

"""AMP's deferred finite check (on by default, MXNET_AMP_ASYNC_OVERFLOW_CHECK=0 off; gluon.Trainer with
amp.loss_scaler.Gate): the trainer starts the check and the update without waiting;
the update of an overflowed step is skipped on the device (the multi-tensor kernel reads
the flag; tests/operator/test_kernels_gpu_multi.py) or, where a kernel cannot read it,
after a host wait; the scale moves when the next ``scale_loss`` reads it. The training
it gives equals the synchronous check's, step for step: weights, momenta, loss scales,
update counts, overflowed steps included. On the CPU (where the trainer does not defer:
it is for GPUs) the deferred path runs with ``_deferred_context`` forced, through the
host-wait branch of every update path."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.contrib import amp
from mxnet.gluon import trainer as trainer_module


def _net(ctx=None):
    mx.random.seed(1)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(6, in_units=4, activation="relu"), gluon.nn.Dense(3, in_units=6))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    return net


# batches; 1e30 inputs make the scaled float32 loss overflow (inf gradients)
SCALES = [1.0, 1.0, 1e30, 1.0, 1e30, 1.0, 1.0]


def _train(monkeypatch, deferred, optimizer, opt_args, hybridize=False, ctx=None):
    monkeypatch.setenv("MXNET_AMP_ASYNC_OVERFLOW_CHECK", "1" if deferred else "0")
    if ctx is None:
        monkeypatch.setattr(trainer_module, "_deferred_context", lambda c: True)
    net = _net(ctx)
    if hybridize:
        net.hybridize()
    tr = gluon.Trainer(net.collect_params(), optimizer, dict(opt_args))
    amp.init_trainer(tr)
    scaler = tr._amp_loss_scaler
    scaler._scale_seq_len = 2                     # the scale also grows in this run
    rng = np.random.RandomState(0)
    scales, gates = [], []
    real_check = scaler.check_deferred

    def spy(params, optimizer=None):
        gate = real_check(params, optimizer)
        gates.append(gate)
        return gate
    monkeypatch.setattr(scaler, "check_deferred", spy)
    for s in SCALES:
        x = mx.nd.array(rng.randn(5, 4) * s, ctx=ctx)
        with autograd.record():
            loss = (net(x) ** 2).sum()
            with amp.scale_loss(loss, tr) as scaled:
                scaled.backward()
        tr.step(5)
        scales.append(scaler.loss_scale)
    weights = [p.data().asnumpy() for p in net.collect_params().values()]
    states = []

    def flat(st):
        if st is None:
            return []
        if isinstance(st, (list, tuple)):
            return [a for s in st for a in flat(s)]
        return [st.asnumpy()]
    # in the network's parameter order: the Trainer numbers parameters by sorted name,
    # and the two runs' names (dense9_, dense10_, ...) need not sort alike
    order = [tr._param2idx[p.name] for p in net.collect_params().values()]
    for upd in tr._updaters:
        for k in order:
            states += flat(upd.states.get(k))
    counts = dict(tr._optimizer._index_update_count), tr._optimizer.num_update
    return weights, states, scales, counts, gates


@pytest.mark.parametrize("optimizer,opt_args", [
    ("sgd", {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-3}),   # gates itself
    ("sgd", {"learning_rate": 0.05}),
    ("nag", {"learning_rate": 0.05, "momentum": 0.9}),                # the Updater gates
    ("adam", {"learning_rate": 0.01}),
])
@pytest.mark.parametrize("hybridize", [False, True])
def test_deferred_check_trains_as_the_synchronous_one(amp_on, monkeypatch, optimizer,
                                                      opt_args, hybridize):
    want = _train(monkeypatch, False, optimizer, opt_args, hybridize)
    got = _train(monkeypatch, True, optimizer, opt_args, hybridize)
    assert want[4] == [] and len(got[4]) == len(SCALES) and all(got[4])
    for a, b in zip(got[0], want[0]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert len(got[1]) == len(want[1])
    for a, b in zip(got[1], want[1]):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert got[2] == want[2]
    assert got[3] == want[3]
    # the overflowed steps halved the scale, the clean pairs doubled it
    assert want[2][2] < want[2][1] and want[2][4] < want[2][3]


def test_overflowed_step_leaves_weights_and_counts(amp_on, monkeypatch):
    monkeypatch.setenv("MXNET_AMP_ASYNC_OVERFLOW_CHECK", "1")
    monkeypatch.setattr(trainer_module, "_deferred_context", lambda ctx: True)
    net = _net()
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    amp.init_trainer(tr)
    before = [p.data().asnumpy().copy() for p in net.collect_params().values()]
    with autograd.record():
        loss = (net(mx.nd.array(np.full((2, 4), 1e30))) ** 2).sum()
        with amp.scale_loss(loss, tr) as scaled:
            scaled.backward()
    tr.step(2)
    scaler = tr._amp_loss_scaler
    assert scaler._pending is None or scaler._pending.overflow is None
    assert scaler.loss_scale == 2.0 ** 15            # read now: the step overflowed
    for p, w in zip(net.collect_params().values(), before):
        np.testing.assert_array_equal(p.data().asnumpy(), w)
    assert tr._optimizer.num_update == 0


def test_switched_off_the_trainer_checks_at_once(amp_on, monkeypatch):
    monkeypatch.setattr(trainer_module, "_deferred_context", lambda ctx: True)
    net = _net()
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    amp.init_trainer(tr)
    monkeypatch.setenv("MXNET_AMP_ASYNC_OVERFLOW_CHECK", "0")
    assert tr._deferred_check(tr._amp_loss_scaler) is None


def test_on_by_default_only_where_the_flag_can_be_read_on_a_device(amp_on, monkeypatch):
    monkeypatch.delenv("MXNET_AMP_ASYNC_OVERFLOW_CHECK", raising=False)
    net = _net()
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    amp.init_trainer(tr)
    assert tr._deferred_check(tr._amp_loss_scaler) is None      # a CPU context
    monkeypatch.setattr(trainer_module, "_deferred_context", lambda ctx: True)
    with autograd.record():
        loss = (net(mx.nd.ones((2, 4))) ** 2).sum()
        with amp.scale_loss(loss, tr) as scaled:
            scaled.backward()
    assert tr._deferred_check(tr._amp_loss_scaler) is not None


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")
@pytest.mark.parametrize("optimizer,opt_args", [
    ("sgd", {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-3}),
    ("adam", {"learning_rate": 0.01}),
])
def test_on_gpu_the_device_skip_trains_as_the_synchronous_check(amp_on, monkeypatch,
                                                                optimizer, opt_args):
    gpu = mx.gpu(0)
    want = _train(monkeypatch, False, optimizer, opt_args, True, gpu)
    got = _train(monkeypatch, True, optimizer, opt_args, True, gpu)
    assert all(got[4]) and all(g._host is not None for g in got[4])   # pinned, evented
    for a, b in zip(got[0], want[0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert got[2] == want[2] and got[3] == want[3]

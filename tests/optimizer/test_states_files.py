"""Gluon Trainer states files between pymxnet and MXNet 1.9.1, both ways: files written
by the real MXNet (tests/fixtures/mxnet-1.9.1/optimizer) load here with their optimizer,
scheduler, step count and state arrays and continue as MXNet continued; files written
here name only the classes MXNet's files name and give the optimizer the attributes
MXNet's optimizer pickles, so MXNet 1.9.1 loads them (checked against the oracle when
the fixtures were made: it resumed every optimizer and scheduler)."""
import json
import pickle

import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon

from common import fixture_path

with open(fixture_path("optimizer", "cases.json")) as _f:
    CASES = json.load(_f)

SCHEDULERS = {
    "FactorScheduler": lambda: mx.lr_scheduler.FactorScheduler(step=1, factor=0.9),
    "MultiFactorScheduler": lambda: mx.lr_scheduler.MultiFactorScheduler(step=[1, 3],
                                                                         factor=0.5),
    "PolyScheduler": lambda: mx.lr_scheduler.PolyScheduler(max_update=10, base_lr=0.01),
}


def _layer():
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Constant(0.5))
    return net


def _step(net, trainer):
    """The fixture script's step: squared outputs of a fixed batch."""
    x = mx.nd.array(np.arange(8, dtype=np.float32).reshape(2, 4) / 8)
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    trainer.step(2)


def _flat(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [a for s in state for a in _flat(s)]
    return [state.asnumpy()]


class _Names(pickle.Unpickler):
    """Records every (module, name) a pickle looks up."""

    def __init__(self, f):
        super().__init__(f)
        self.names = set()

    def find_class(self, module, name):
        self.names.add((module, name))
        return super().find_class(module, name)


def _names_in(path):
    with open(path, "rb") as f:
        u = _Names(f)
        u.load()
    return u.names


@pytest.mark.parametrize("case", sorted(CASES))
def test_mxnet_written_states_load_and_continue(case):
    meta = CASES[case]
    want = np.load(fixture_path("optimizer", case + ".npz"))
    net = _layer()
    net.weight.set_data(mx.nd.array(want["weight"]))
    net.bias.set_data(mx.nd.array(want["bias"]))
    trainer = gluon.Trainer(net.collect_params(), meta["optimizer"], meta["kwargs"])
    trainer.load_states(fixture_path("optimizer", case + ".states"))
    opt = trainer._optimizer
    assert type(opt).__name__.lower() == meta["optimizer"]
    assert type(opt.lr_scheduler).__name__ == meta["scheduler"]
    assert opt.num_update == meta["num_update"]
    assert opt.learning_rate == pytest.approx(meta["learning_rate"])
    for i, state in trainer._updaters[0].states.items():
        got = _flat(state)
        assert len(got) == sum(k.startswith(f"state_{i}_") for k in want.files)
        for k, a in enumerate(got):
            np.testing.assert_allclose(a, want[f"state_{i}_{k}"], rtol=1e-6)
    _step(net, trainer)
    np.testing.assert_allclose(net.weight.data().asnumpy(), want["next_weight"], rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(net.bias.data().asnumpy(), want["next_bias"], rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("case", sorted(CASES))
def test_states_written_here_are_shaped_as_mxnet_writes_them(case, tmp_path):
    meta = CASES[case]
    net = _layer()
    trainer = gluon.Trainer(net.collect_params(), meta["optimizer"],
                            dict(meta["kwargs"],
                                 lr_scheduler=SCHEDULERS[meta["scheduler"]]()))
    _step(net, trainer)
    _step(net, trainer)
    path = str(tmp_path / "t.states")
    trainer.save_states(path)
    # the same classes, under the modules MXNet 1.9.1 has (not pymxnet's own files)
    assert _names_in(path) == _names_in(fixture_path("optimizer", case + ".states"))
    # the optimizer's pickled attributes are MXNet's
    assert sorted(trainer._optimizer.__getstate__()) == meta["state_keys"]
    # and pymxnet reads its own file back
    again = gluon.Trainer(_layer().collect_params(), meta["optimizer"], meta["kwargs"])
    again.load_states(path)
    assert again._optimizer.num_update == meta["num_update"]
    assert again._optimizer.learning_rate == pytest.approx(meta["learning_rate"])

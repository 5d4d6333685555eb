"""Gluon Trainer states files between pymxnet and MXNet 1.9.1, both ways: files written
by the real MXNet (tests/fixtures/mxnet-1.9.1/optimizer) load here with their optimizer,
scheduler, step count and state arrays and continue as MXNet continued; files written
here name only the classes MXNet's files name and give the optimizer the attributes
MXNet's optimizer pickles, so MXNet 1.9.1 loads them (checked against the oracle when
the fixtures were made: it resumed every optimizer and scheduler)."""
import json
import pickle
import sys

import numpy as np
import pytest

import mxnet as mx
from mxnet import gluon

from common import fixture_path

with open(fixture_path("optimizer", "cases.json")) as _f:
    CASES = json.load(_f)

# the fixture script's layer, training step and schedulers (framework-neutral code: run
# here with pymxnet, there with MXNet 1.9.1)
sys.path.insert(0, fixture_path("optimizer"))
import make_states_fixtures as made  # noqa: E402


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
    net = made.layer()
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
        got = made._flat(state)
        assert len(got) == sum(k.startswith(f"state_{i}_") for k in want.files)
        for k, a in enumerate(got):
            np.testing.assert_allclose(a, want[f"state_{i}_{k}"], rtol=1e-6)
    made.step(net, trainer)
    np.testing.assert_allclose(net.weight.data().asnumpy(), want["next_weight"], rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(net.bias.data().asnumpy(), want["next_bias"], rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("case", sorted(CASES))
def test_states_written_here_are_shaped_as_mxnet_writes_them(case, tmp_path):
    meta = CASES[case]
    net = made.layer()
    _, kwargs, scheduler = made.CASES[case]
    trainer = gluon.Trainer(net.collect_params(), meta["optimizer"],
                            dict(kwargs, lr_scheduler=scheduler()))
    made.step(net, trainer)
    made.step(net, trainer)
    path = str(tmp_path / "t.states")
    trainer.save_states(path)
    # the same classes, under the modules MXNet 1.9.1 has (not pymxnet's own files)
    assert _names_in(path) == _names_in(fixture_path("optimizer", case + ".states"))
    # the optimizer's pickled attributes are MXNet's
    assert sorted(trainer._optimizer.__getstate__()) == meta["state_keys"]
    # and pymxnet reads its own file back
    again = gluon.Trainer(made.layer().collect_params(), meta["optimizer"], meta["kwargs"])
    again.load_states(path)
    assert again._optimizer.num_update == meta["num_update"]
    assert again._optimizer.learning_rate == pytest.approx(meta["learning_rate"])

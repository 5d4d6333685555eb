"""The Gluon fixture written by MXNet 1.9.1 (shared/fixtures/mxnet-1.9.1/gluon): the
three ways of loading it reproduce MXNet's logits, and what we write back (parameter
files, export) matches what MXNet wrote."""
import json
import os

import numpy as np
import pytest

import mxnet as mx
from mxnet import gluon
from mxnet.gluon import nn
from mxnet.test_utils import assert_almost_equal

from common import fixture_path

# From the fixture README (printed by MXNet 1.9.1 for the trained network).
README_REPR = """HybridSequential(
  (0): Conv2D(1 -> 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
  (1): BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, use_global_stats=False, in_channels=8)
  (2): Activation(relu)
  (3): MaxPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), ceil_mode=False, global_pool=False, pool_type=max, layout=NCHW)
  (4): Conv2D(8 -> 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
  (5): BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, use_global_stats=False, in_channels=16)
  (6): LeakyReLU(0.1)
  (7): AvgPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), ceil_mode=False, global_pool=False, pool_type=avg, layout=NCHW)
  (8): Conv2D(16 -> 16, kernel_size=(3, 3), stride=(1, 1))
  (9): GlobalAvgPool2D(size=(1, 1), stride=(1, 1), padding=(0, 0), ceil_mode=True, global_pool=True, pool_type=avg, layout=NCHW)
  (10): Flatten
  (11): Dense(16 -> 32, Activation(relu))
  (12): Dropout(p = 0.3, axes=())
  (13): Dense(32 -> 10, linear)
)"""  # noqa: E501
SAVED_KEYS = ["0.weight", "0.bias", "1.gamma", "1.beta", "1.running_mean", "1.running_var",
              "4.weight", "5.gamma", "5.beta", "5.running_mean", "5.running_var", "8.weight",
              "8.bias", "11.weight", "11.bias", "13.weight", "13.bias"]
ARGMAX = [1, 2, 7, 2, 7, 8, 5, 9]


def _build():
    with mx.name.NameManager():          # the fixture was made under a fresh counter
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                    nn.MaxPool2D(),
                    nn.Conv2D(16, 3, padding=1, use_bias=False), nn.BatchNorm(),
                    nn.LeakyReLU(0.1), nn.AvgPool2D(),
                    nn.Conv2D(16, 3), nn.GlobalAvgPool2D(), nn.Flatten(),
                    nn.Dense(32, activation="relu"), nn.Dropout(0.3), nn.Dense(10))
    return net


@pytest.fixture(scope="module")
def data():
    return (mx.nd.array(np.load(fixture_path("gluon", "input_batch.npy"))),
            np.load(fixture_path("gluon", "expected_logits.npy")))


def _check(out, expected):
    assert_almost_equal(out.asnumpy(), expected, rtol=1e-4, atol=2e-5)
    assert out.asnumpy().argmax(1).tolist() == ARGMAX


def test_load_parameters_reproduces_logits(data):
    x, expected = data
    net = _build()
    net.load_parameters(fixture_path("gluon", "net.params"))
    assert repr(net) == README_REPR
    _check(net(x), expected)
    net.hybridize()
    _check(net(x), expected)
    _check(net(x), expected)


def test_collect_params_load_fullnames(data):
    x, expected = data
    net = _build()
    net.collect_params().load(fixture_path("gluon", "net-fullnames.params"))
    _check(net(x), expected)


def test_symbolblock_imports_export(data):
    x, expected = data
    sb = gluon.SymbolBlock.imports(fixture_path("gluon", "net-symbol.json"), ["data"],
                                   fixture_path("gluon", "net-0000.params"))
    _check(sb(x), expected)


def test_files_written_back_match_mxnet(data, tmp_path):
    x, expected = data
    net = _build()
    net.load_parameters(fixture_path("gluon", "net.params"))
    saved = str(tmp_path / "net.params")
    net.save_parameters(saved)
    assert list(mx.nd.load(saved).keys()) == SAVED_KEYS
    with open(saved, "rb") as f, open(fixture_path("gluon", "net.params"), "rb") as g:
        assert f.read() == g.read()
    full = str(tmp_path / "full.params")
    net.collect_params().save(full)
    with open(full, "rb") as f, open(fixture_path("gluon", "net-fullnames.params"), "rb") as g:
        assert f.read() == g.read()
    net.hybridize()
    _check(net(x), expected)
    prefix = str(tmp_path / "net")
    net.export(prefix)
    with open(prefix + "-0000.params", "rb") as f, \
            open(fixture_path("gluon", "net-0000.params"), "rb") as g:
        assert f.read() == g.read()
    ours = json.load(open(prefix + "-symbol.json"))
    ref = json.load(open(fixture_path("gluon", "net-symbol.json")))
    assert ours["arg_nodes"] == ref["arg_nodes"] and ours["heads"] == ref["heads"]
    assert len(ours["nodes"]) == len(ref["nodes"])
    for a, b in zip(ours["nodes"], ref["nodes"]):
        # MXNet hybridized before the shapes were known, so its __shape__ has 0s; the
        # third field of an input entry is build-dependent (README)
        attrs_a = {k: v for k, v in a.get("attrs", {}).items() if k != "__shape__"}
        attrs_b = {k: v for k, v in b.get("attrs", {}).items() if k != "__shape__"}
        assert (a["op"], a["name"], attrs_a) == (b["op"], b["name"], attrs_b)
        assert [e[:2] for e in a["inputs"]] == [e[:2] for e in b["inputs"]]
    sb = gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    _check(sb(x), expected)


def test_hybridized_before_first_forward_records_unknown_shapes(data, tmp_path):
    """As in the fixture: hybridize, then initialise lazily; the exported variables
    carry the shapes known when the graph was built (0 for inferred dims)."""
    x, _ = data
    net = _build()
    net.initialize()
    net.hybridize()
    net(x)
    prefix = str(tmp_path / "lazy")
    net.export(prefix)
    ours = {n["name"]: n for n in json.load(open(prefix + "-symbol.json"))["nodes"]}
    ref = {n["name"]: n for n in json.load(open(fixture_path("gluon", "net-symbol.json")))
           ["nodes"]}
    for name in ref:
        assert ours[name].get("attrs", {}).get("__shape__") == \
            ref[name].get("attrs", {}).get("__shape__")

"""The backward fusion pass (executor/backward_fusion.py) on hand-made prepared calls:
which relu -> BatchNorm backward pairs it folds and which it leaves; the folded call's
gradients and layout flags. Training through it is checked with the GPU path on the
CPU (test_layout_channels_last.py) and on a GPU below."""
import types

import numpy as np
import pytest

import mxnet as mx
from mxnet.executor import backward_fusion as BF
from mxnet.executor.prepared import BwdCall

from bound_runs import assert_same_runs, switch_runs

NONE = 99
FUSED = object()


def _call(name, op, ograds, tgts, req=("write",), lay=((True,), (), (), (True,)),
          ins=(), zeros=()):
    c = BwdCall()
    for slot in BwdCall.__slots__:
        setattr(c, slot, None)
    c.name, c.op, c.p = name, types.SimpleNamespace(name=op), types.SimpleNamespace()
    c.ograds, c.tgts, c.req, c.lay = list(ograds), list(tgts), list(req), lay
    c.ins, c.outd, c.aux, c.zeros = list(ins), [], [], list(zeros)
    return c


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setattr(BF, "lookup_backward_fusion",
                        lambda first, second, device, p1, p2:
                        FUSED if (first.name, second.name) == ("BatchNorm", "relu") else None)


def _pair(**relu):
    r = _call("r", "relu", relu.pop("ograds", [10]), relu.pop("tgts", [11]), **relu)
    b = _call("b", "BatchNorm", [11, NONE, NONE], [12, 13, 14], ("write",) * 3,
              ((False, False, False), (True,), (), (True, False, False)), ins=[5, 6, 7])
    return r, b


def test_an_adjacent_pair_becomes_one_call(registered):
    r, b = _pair()
    before = _call("c", "Convolution", [12], [20])
    out = BF.fold_relu_backward([r, b, before], NONE, "gpu")
    assert len(out) == 2 and out[1] is before
    f = out[0]
    assert f.fused is FUSED and f.then == (r, b)
    assert f.ograds == [10, NONE, NONE] and f.tgts == b.tgts and f.ins == b.ins
    # the output gradient's flag is the relu output gradient's
    assert f.lay[0] == (True, False, False) and f.lay[1:] == b.lay[1:]
    assert b.ograds == [11, NONE, NONE]          # the plain calls are left as they were


def test_an_in_place_relu_gradient_folds_too(registered):
    r, b = _pair(req=("inplace",))
    assert BF.fold_relu_backward([r, b], NONE, "gpu")[0].fused is FUSED


@pytest.mark.parametrize("case", ["other_reader", "other_writer", "not_adjacent", "add",
                                  "zeros", "plain_layout", "not_registered"])
def test_what_it_leaves(registered, case):
    r, b = _pair(**({"req": ("add",)} if case == "add" else
                    {"zeros": [(0, (2,), np.float32)]} if case == "zeros" else
                    {"lay": None} if case == "plain_layout" else {}))
    calls = [r, b]
    if case == "other_reader":
        calls.append(_call("s", "sum", [11], [30]))
    elif case == "other_writer":
        calls.insert(0, _call("w", "elemwise_add", [40], [11]))
    elif case == "not_adjacent":
        calls.insert(1, _call("m", "Convolution", [41], [42]))
    elif case == "not_registered":
        b.op = types.SimpleNamespace(name="LayerNorm")
    assert BF.fold_relu_backward(calls, NONE, "gpu") is calls


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")
def test_on_a_gpu_training_equals_the_unfolded_executor(monkeypatch):
    want, ex, got = switch_runs(monkeypatch, "MXNET_GPU_BN_RELU_BACKWARD_FUSION", mx.gpu(0))
    assert [c.name for c in ex._bcalls if c.fused is not None] == ["b1"]
    assert_same_runs(got, want, rtol=1e-3, atol=1e-4)

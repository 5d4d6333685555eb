"""tests/opcheck.py fails when it should: a wrong reference, a wrong output dtype or a
wrong gradient is reported (with the seed), and the GPU items skip without a GPU."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.operator.registry import get_op
import opcheck
from opcheck import Case, check

RELU = Case("relu", lambda x: np.maximum(x, 0), [[(3, 4)]],
            sample=opcheck.away_from([0.0]))


def test_passes_on_a_right_case():
    check(RELU)


def test_wrong_reference_fails_naming_the_seed():
    bad = Case("relu", lambda x: np.maximum(x, 0.1), [[(3, 4)]])
    with pytest.raises(AssertionError, match="seed="):
        check(bad, dtype="float32")


def test_wrong_output_dtype_fails():
    bad = Case("relu", lambda x: np.maximum(x, 0), [[(2,)]],
               out_dtype=lambda dt: np.float16 if dt != np.float16 else np.float32)
    with pytest.raises(AssertionError, match="dtype"):
        check(bad, dtype="float32")


def test_wrong_gradient_fails(monkeypatch):
    op = get_op("relu")
    right = type(op).backward

    def doubled(self, ctx, p, out_grads, inputs, outputs, aux, in_grad=None):
        return [2 * g for g in right(self, ctx, p, out_grads, inputs, outputs, aux)]
    monkeypatch.setattr(type(op), "backward", doubled)
    with pytest.raises(AssertionError, match="gradient of input 0"):
        check(RELU, dtype="float64")


def test_gpu_items_skip_without_a_gpu():
    items = opcheck.params([RELU])
    gpu = [i for i in items if i.values[3].device_type == "gpu"]
    assert len(gpu) == len(items) // 2
    if mx.context.num_gpus() == 0:
        assert all(m.name == "skipif" and m.args[0] for i in gpu for m in i.marks)

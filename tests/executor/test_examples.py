"""The runnable examples built on Symbol and Executor (seed 004), on small data."""
import os
import sys

import numpy as np

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
sys.path.insert(0, EXAMPLES)

import executor_mlp  # noqa: E402
import symbolic_basics  # noqa: E402


def test_symbolic_basics():
    import mxnet as mx
    lines = []
    # a fresh name manager: the automatic names count from 0 as in a new process,
    # whatever symbols earlier tests in this worker created
    with mx.name.NameManager():
        out, expected, grads = symbolic_basics.main(log=lambda *a: lines.append(a))
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    for g in grads:
        np.testing.assert_allclose(g, np.full(10, 0.1), rtol=1e-6)
    assert lines[0] == ("arguments:", ["A", "B"])
    assert lines[1] == ("outputs:", ["_plusscalar0_output"])


def test_executor_mlp_synthetic():
    acc = executor_mlp.train(max_batches=20, synthetic=True, lr=0.001, log=lambda *a: None)
    assert acc > 0.9           # well separated synthetic classes


def test_executor_mlp_fashion_mnist_few_batches(fashion_mnist):
    acc = executor_mlp.train(max_batches=40, max_test=1024, log=lambda *a: None)
    assert acc > 0.45          # chance is 0.1; about 0.6 after 40 batches


def test_executor_mlp_reaches_80_percent_in_two_epochs(fashion_mnist):
    """Seed 004's raw-executor MLP with manual SGD: >= 80 % on Fashion-MNIST's test set
    after two epochs (a couple of seconds here)."""
    acc = executor_mlp.train(epochs=2, log=lambda *a: None)
    assert acc >= 0.80

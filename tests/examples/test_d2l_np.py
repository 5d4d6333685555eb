"""The d2l-style NumPy-mode example trains on the local Fashion-MNIST data."""
import importlib.util
import os

import pytest

import mxnet as mx

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                       "d2l_fashion_mnist_np.py")


def _example():
    spec = importlib.util.spec_from_file_location("d2l_fashion_mnist_np", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def example(fashion_mnist):
    mod = _example()
    yield mod
    mx.npx.reset_np()


def test_softmax_regression_and_lenet_run_on_a_slice(example):
    softmax_acc, lenet_acc = example.main(["--epochs", "2", "--limit", "2000"])
    assert softmax_acc > 0.6           # chance is 0.1
    assert 0.0 <= lenet_acc <= 1.0


@pytest.mark.slow
def test_lenet_learns_on_full_data(example):
    _, lenet_acc = example.main(["--epochs", "6"])
    assert lenet_acc > 0.7

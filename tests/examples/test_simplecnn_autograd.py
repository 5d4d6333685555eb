"""Seed 003's SimpleCNN written with mx.nd + autograd trains on Fashion-MNIST."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import simplecnn_autograd  # noqa: E402


def test_learns_on_a_small_slice(fashion_mnist):
    # 3200 training images, one pass: far above the 10% of chance on the test set.
    acc = simplecnn_autograd.train(epochs=1, batch_size=64, limit=3200, log=lambda m: None,
                                   test_limit=2000)
    assert acc > 0.6


@pytest.mark.slow
def test_reaches_85_percent_in_one_epoch(fashion_mnist):
    assert simplecnn_autograd.train(epochs=1, batch_size=64, log=print) >= 0.85

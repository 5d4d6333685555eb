"""The oneDNN adapters step aside for shapes below their break-even size (see
kernels_onednn.MIN_WORK); these tests use small shapes, so they force the oneDNN path
and compare it with the NumPy body."""
import os
import sys

import pytest

# the test modules here import their shared helpers (onednn_helpers.py) by name
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _onednn_forced():
    from mxnet.operator.kernels_onednn import forced
    with forced():
        yield

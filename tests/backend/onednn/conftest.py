"""The oneDNN adapters step aside for shapes below their break-even size (see
kernels_onednn.MIN_WORK); these tests use small shapes, so they force the oneDNN path
and compare it with the NumPy body."""
import pytest


@pytest.fixture(autouse=True)
def _onednn_forced():
    from mxnet.operator.kernels_onednn import forced
    with forced():
        yield

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from fixed seeds (NumPy's and mx.random's) so failures replay."""
    import mxnet as mx
    np.random.seed(0)
    mx.random.seed(0)
    yield


@pytest.fixture(scope="session")
def host_raw_kernels(tmp_path_factory):
    """A stand-in for backend.cuda_kernels.raw_kernel that compiles generated CUDA
    kernels for the host (tests/cuda_on_host.py), once per kernel for the session."""
    from cuda_on_host import HostKernels
    return HostKernels(tmp_path_factory.mktemp("host_kernels"))


@pytest.fixture
def bn_kernels_on_host(monkeypatch, host_raw_kernels):
    """BatchNorm's channels-last kernels (backend/bn_channels_last.py) run on the host."""
    from mxnet.backend import bn_channels_last
    monkeypatch.setattr(bn_channels_last, "raw_kernel", host_raw_kernels)
    return host_raw_kernels


FASHION_MNIST = "/usr/share/datasets/fashion-mnist"     # Debian's dataset-fashion-mnist


@pytest.fixture(scope="session")
def fashion_mnist():
    """Debian's Fashion-MNIST folder (the four MNIST-format files), which the tests that
    train on real data read. pymxnet never downloads data: where the package is absent
    (a GPU box, a laptop) those tests skip saying how to install it; CI installs it and
    sets PYMXNET_REQUIRE_TEST_DATA=1, which turns the skip into a failure so that a
    broken install cannot pass unnoticed."""
    from mxnet.io.idx import MNIST_FILES
    missing = [f for f in MNIST_FILES
               if not os.path.isfile(os.path.join(FASHION_MNIST, f + ".gz"))
               and not os.path.isfile(os.path.join(FASHION_MNIST, f))]
    if missing:
        message = (f"Fashion-MNIST is not installed in {FASHION_MNIST} (missing "
                   f"{', '.join(missing)}): `apt-get install dataset-fashion-mnist`")
        if os.environ.get("PYMXNET_REQUIRE_TEST_DATA") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return FASHION_MNIST

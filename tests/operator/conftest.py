"""Fixtures of the operator tests."""
import pytest

import mxnet as mx
from mxnet.backend import cupy_or_none


@pytest.fixture
def gpu_and_module():
    """(gpu(0), its array module): the real device where CuPy sees one, else one GPU
    emulated on the host (tests/multi_gpu_host.py) for the test."""
    cp = cupy_or_none()
    if cp is not None:
        yield mx.gpu(0), cp
    else:
        from multi_gpu_host import emulated_gpus
        with emulated_gpus(1) as emulated:
            yield mx.gpu(0), emulated


@pytest.fixture
def gpu(gpu_and_module):
    """gpu(0): the real device, else an emulated one (see gpu_and_module)."""
    return gpu_and_module[0]

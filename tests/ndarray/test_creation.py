"""Array creation refuses a host array larger than the machine's memory and swap.

Linux overcommits: NumPy gets address space for any size and the process is killed
later, when the pages are touched (seen on the device machines, where
``nd.empty((2**40,))`` returned). The check must not depend on that."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.ndarray import creation
from mxnet.storage import host_memory_bytes


def test_host_memory_is_known_and_plausible():
    total = host_memory_bytes()
    assert total is not None and 2**27 < total < 2**50


@pytest.mark.parametrize("make", [
    lambda: mx.nd.empty((1024, 1024)),
    lambda: mx.nd.zeros((1024, 1024)),
    lambda: mx.nd.ones((1024, 1024), dtype="float64"),
    lambda: mx.nd.full((1024, 1024), 7),
], ids=["empty", "zeros", "ones", "full"])
def test_an_array_larger_than_memory_is_refused_before_allocation(monkeypatch, make):
    monkeypatch.setattr(creation, "host_memory_bytes", lambda cached=True: 2**20)     # 1 MiB
    allocated = []
    monkeypatch.setattr(np, "empty", lambda *a, **k: allocated.append(a))
    with pytest.raises(MXNetError, match=r"GiB requested; this machine has 0\.0 GiB"):
        make()
    assert not allocated


def test_a_refusal_reads_the_memory_again(monkeypatch):
    # creation reads the machine's memory once; a request above that reading is checked
    # against a fresh one (swap added since) before it is refused
    readings = []

    def memory(cached=True):
        readings.append(cached)
        return 2**20 if cached else 2**30
    monkeypatch.setattr(creation, "host_memory_bytes", memory)
    assert mx.nd.zeros((1024, 1024)).shape == (1024, 1024)       # 4 MiB
    assert readings == [True, False]


def test_an_array_within_memory_is_made(monkeypatch):
    monkeypatch.setattr(creation, "host_memory_bytes", lambda cached=True: 2**20)
    a = mx.nd.full((16, 16), 3.0)
    np.testing.assert_array_equal(a.asnumpy(), np.full((16, 16), 3.0, np.float32))
    monkeypatch.setattr(creation, "host_memory_bytes", lambda cached=True: None)   # unknown: no check
    assert mx.nd.zeros((512, 1024)).shape == (512, 1024)


def test_list_values_outside_the_dtype_wrap_like_a_c_cast():
    # MXNet 1.9.1 (NumPy 1.x) gives [[1 2 3] [255 254 0]] and [44 -1]; NumPy 2 alone
    # would raise OverflowError for these Python ints
    got = mx.nd.array([[1, 2, 3], [-1, -2, 0]], dtype=np.uint8)
    np.testing.assert_array_equal(got.asnumpy(), np.array([[1, 2, 3], [-1, -2, 0]]).astype(np.uint8))
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(mx.nd.array([300, -1.5], dtype="int8").asnumpy(), [44, -1])
    np.testing.assert_array_equal(mx.np.array([-1, 2], dtype="uint8").asnumpy(), [255, 2])


def test_full_wraps_out_of_range_integers():
    # MXNet 1.9.1 values (a C cast of the fill value)
    assert mx.nd.full((2,), -1, dtype="uint8").asnumpy().tolist() == [255, 255]
    assert mx.nd.full((2,), 300, dtype="uint8").asnumpy().tolist() == [44, 44]
    assert mx.nd.full((1,), 2**31, dtype="int32").asnumpy().tolist() == [-2**31]
    assert mx.nd.full((1,), -3.7, dtype="int32").asnumpy().tolist() == [-3]

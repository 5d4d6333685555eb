import numpy as np
import pytest

import mxnet as mx
from mxnet import storage
from mxnet.base import MXNetError


def test_pool_reuses_freed_blocks_and_keeps_stats():
    pool = storage.HostPool()
    b1 = pool.alloc(1000)
    assert b1.size == 1024 and pool.bytes_in_use == 1024
    buf = b1.buffer
    pool.free(b1)
    assert pool.bytes_in_use == 0 and pool.bytes_pooled == 1024
    b2 = pool.alloc(900)                     # same size class: the freed block comes back
    assert b2.buffer is buf and pool.num_reuses == 1 and pool.bytes_pooled == 0
    b3 = pool.alloc(3 << 20)
    assert b3.size == 3 << 20 and pool.peak_bytes_in_use == 1024 + (3 << 20)
    pool.free(b2)
    pool.free(b3)
    pool.release_all()
    assert pool.stats()["bytes_pooled"] == 0 and pool.stats()["bytes_in_use"] == 0


def test_block_views_have_the_requested_shape_and_dtype():
    arr, block = storage.empty(mx.cpu(), (3, 5), np.float64)
    assert arr.shape == (3, 5) and arr.dtype == np.float64
    arr[:] = 7
    assert np.all(block.view((15,), np.float64) == 7)
    block.pool.free(block)


def test_seed_reproduces_random_numbers_per_context():
    mx.random.seed(42)
    a = mx.nd.random.uniform(shape=(5,)).asnumpy()
    mx.random.seed(42)
    b = mx.nd.random.uniform(shape=(5,)).asnumpy()
    c = mx.nd.random.uniform(shape=(5,)).asnumpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)
    mx.random.seed(7, ctx=mx.cpu(0))
    d = mx.nd.random.uniform(shape=(5,)).asnumpy()
    mx.random.seed(7, ctx=mx.cpu(0))
    np.testing.assert_array_equal(d, mx.nd.random.uniform(shape=(5,)).asnumpy())
    with pytest.raises(MXNetError):
        mx.random.seed("seven")


def test_temp_space_large_from_the_pool_small_from_the_allocator():
    from mxnet.resource import SMALL_HOST_TEMP_BYTES, temp_space
    pool = storage.get_pool(mx.cpu())
    before = pool.bytes_in_use
    n = SMALL_HOST_TEMP_BYTES // 4 + 1
    arr, release = temp_space(mx.cpu(), (n,), np.float32)
    assert arr.shape == (n,) and arr.dtype == np.float32
    assert pool.bytes_in_use >= before + 4 * n
    release()
    assert pool.bytes_in_use == before
    # small scratch costs the pool's bookkeeping more than malloc: not pooled
    arr, release = temp_space(mx.cpu(), (2, 128), np.float64)
    assert arr.shape == (2, 128) and arr.dtype == np.float64
    assert pool.bytes_in_use == before
    release()
    assert pool.bytes_in_use == before

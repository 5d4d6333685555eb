import pytest

import mxnet as mx
from mxnet.base import MXNetError


def test_contexts_compare_hash_and_print_like_mxnet():
    assert mx.cpu() == mx.cpu(0) and mx.cpu(1) != mx.cpu(0)
    assert mx.gpu(1).device_type == "gpu" and mx.gpu(1).device_id == 1
    assert str(mx.cpu(2)) == "cpu(2)" and repr(mx.gpu()) == "gpu(0)"
    assert len({mx.cpu(), mx.cpu(0), mx.gpu()}) == 2
    assert mx.Context(mx.gpu(3)) == mx.gpu(3)


def test_with_scope_sets_the_default_context_and_restores_it():
    assert mx.context.current_context() == mx.cpu(0)
    with mx.cpu(1):
        assert mx.context.current_context() == mx.cpu(1)
        assert mx.nd.zeros((2,)).context == mx.cpu(1)
        with mx.cpu(2):
            assert mx.current_context() == mx.cpu(2)
        assert mx.current_context() == mx.cpu(1)
    assert mx.current_context() == mx.cpu(0)


def test_num_gpus_is_zero_without_cuda_and_gpu_use_fails_clearly():
    if mx.context.num_gpus() > 0:
        pytest.skip("a GPU is present")
    assert mx.context.num_gpus() == 0
    ctx = mx.gpu(0)                          # creating the context is fine
    with pytest.raises(MXNetError, match="GPU"):
        mx.nd.zeros((2,), ctx=ctx)
    with pytest.raises(MXNetError, match="GPU"):
        mx.nd.ones((2,)).as_in_context(mx.gpu())


def test_bad_context_arguments():
    with pytest.raises(MXNetError):
        mx.Context("tpu", 0)
    with pytest.raises(MXNetError):
        mx.cpu(-1)

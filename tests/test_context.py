import numpy as np
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


def test_context_pickles_as_mxnet_pickles_it():
    """MXNet's Context has a __dict__: its pickle (tests/fixtures/mxnet-1.9.1/pickles,
    also inside a pickled Gluon layer) rebuilds the object from a dict of its fields.
    Such pickles load here, and pymxnet's are the same bytes."""
    import pickle
    from common import fixture_path
    with open(fixture_path("pickles", "context.pkl"), "rb") as f:
        theirs = f.read()
    ctx = pickle.loads(theirs)
    assert ctx == mx.gpu(1) and ctx._old_ctx is None
    assert pickle.dumps(mx.gpu(1), protocol=4) == theirs
    with mx.cpu(0) as inside:         # a with-block in progress is not pickled
        assert pickle.loads(pickle.dumps(inside))._old_ctx is None
    with open(fixture_path("pickles", "dense_layer.pkl"), "rb") as f:
        layer = pickle.load(f)
    np.testing.assert_array_equal(layer.weight.data().asnumpy(), np.full((3, 2), 0.25))
    assert layer.weight.list_ctx() == [mx.cpu(0)]

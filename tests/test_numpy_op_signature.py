"""mxnet.numpy_op_signature: operator names of the NumPy front end -> its functions."""
import mxnet as mx
from mxnet.numpy_op_signature import _get_builtin_op, _get_op_submodule_name


def test_finds_np_and_npx_functions():
    assert _get_builtin_op("_np_sum") is mx.np.sum
    assert _get_builtin_op("_npx_relu") is mx.npx.relu


def test_submodule_names_and_unknown_ops():
    assert _get_op_submodule_name("_np__random_uniform", "_np_", ("_random_", "_linalg_")) \
        == "_random_"
    assert _get_builtin_op("_np__random_uniform") is mx.np.random.uniform
    assert _get_builtin_op("_np_no_such_op") is None
    assert _get_builtin_op("Convolution") is None

"""mx.operator's introspection helpers and the names MXNet's modules re-export."""
import ctypes

import numpy as np
import pytest

import mxnet as mx


def test_get_operator_arguments_lists_inputs_then_parameters():
    a = mx.operator.get_operator_arguments("Activation")
    assert isinstance(a, mx.operator.OperatorArguments)
    assert a.narg == 2 and a.names == ["data", "act_type"]
    assert a.types[0] == "NDArray-or-Symbol"
    assert a.types[1] == "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"
    c = mx.operator.get_operator_arguments("Convolution")
    assert c.names[:3] == ["data", "weight", "bias"]
    assert c.types[c.names.index("num_filter")].endswith("required")
    assert c.types[c.names.index("no_bias")] == "boolean, optional, default=0"
    assert c.types[c.names.index("stride")] == "Shape(tuple), optional, default=[]"
    with pytest.raises(mx.base.MXNetError, match="no_such_op"):
        mx.operator.get_operator_arguments("no_such_op")


def test_ctypes2numpy_shared_shares_memory():
    buf = np.arange(6, dtype=np.float32)
    ptr = buf.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
    view = mx.operator.ctypes2numpy_shared(ptr, (2, 3))
    assert view.shape == (2, 3)
    view[1, 2] = 42
    assert buf[5] == 42
    with pytest.raises(mx.base.MXNetError, match="float pointer"):
        mx.operator.ctypes2numpy_shared(buf.ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
                                        (6,))


def test_reexported_names_are_the_same_objects():
    assert mx.operator.cast is ctypes.cast and mx.autograd.cast is ctypes.cast
    assert mx.operator.pointer is ctypes.pointer
    for mod in (mx.operator, mx.gluon.loss, mx.initializer, mx.gluon.utils,
                mx.gluon.data.vision.transforms):
        assert mod.is_np_array is mx.util.is_np_array
    assert mx.gluon.utils.is_np_shape is mx.util.is_np_shape
    assert mx.callback.save_checkpoint is mx.model.save_checkpoint


def test_np_symbol_has_no_instances():
    assert not isinstance(mx.sym.var("x"), mx.test_utils.np_symbol)
    assert issubclass(mx.test_utils.np_symbol, mx.sym.Symbol)
    with pytest.raises(NotImplementedError, match="np_symbol"):
        mx.test_utils.np_symbol()


def test_python_op_is_the_abstract_base_of_numpy_op():
    assert issubclass(mx.operator.NumpyOp, mx.operator.PythonOp)
    with pytest.warns(UserWarning, match="deprecated"):
        op = mx.operator.PythonOp(need_top_grad=False)
    with pytest.raises(NotImplementedError, match="abstract"):
        op(mx.sym.var("x"))

"""mxnet.base's names that MXNet-era code and MXNet's own tests import: the ctypes
helpers and ``_LIB``, which pymxnet (no C library) answers with a clear error, except
for the C API calls it emulates (MXListAllOpNames)."""
import ctypes

import pytest

import mxnet as mx
from mxnet.base import (SymbolHandle, _LIB, c_array, c_str, c_str_array, check_call,
                        mx_uint)


def test_c_api_functions_say_they_are_not_available():
    with pytest.raises(mx.base.MXNetNotImplementedError,
                       match="MXExecutorBindEX is not available"):
        _LIB.MXExecutorBindEX(None, 1, 0, mx_uint(0), None, None, None,
                              ctypes.byref(SymbolHandle()))
    with pytest.raises(NotImplementedError):        # catchable as either
        _LIB.MXNDArrayFromDLPackEx(None, False, ctypes.byref(SymbolHandle()))
    # (the subgraph functions are emulated: tests/symbol/test_backends.py)
    with pytest.raises(mx.base.MXNetError, match="not found"):
        _LIB.MXSetSubgraphPropertyOpNamesV2(c_str("x"), mx_uint(0), None)
    with pytest.raises(AttributeError):
        _LIB.__wrapped__                               # dunders are not C functions


@pytest.mark.parametrize("by", ["byref", "pointer"])
def test_list_all_op_names_fills_its_out_arguments_as_the_c_api(by):
    # MXNet's test_amp_coverage calls it this way
    plist = ctypes.POINTER(ctypes.c_char_p)()
    size = ctypes.c_uint()
    ref = ctypes.byref if by == "byref" else ctypes.pointer
    assert _LIB.MXListAllOpNames(ref(size), ref(plist)) == 0
    names = [plist[i].decode() for i in range(size.value)]
    assert names == mx.operator.registry.list_ops()
    assert {"Convolution", "FullyConnected", "sgd_mom_update"} <= set(names)
    with pytest.raises(mx.base.MXNetError, match="ctypes.byref"):
        _LIB.MXListAllOpNames(size, plist)


def test_ctypes_helpers():
    arr = c_str_array(["relu", "Convolution"])
    assert [arr[i] for i in range(2)] == [b"relu", b"Convolution"]
    ints = c_array(ctypes.c_int, [3, 1, 2])
    assert list(ints) == [3, 1, 2]
    check_call(0)
    with pytest.raises(mx.base.MXNetError):
        check_call(-1)


def test_an_ndarray_given_as_dtype_means_its_dtype():
    # sockeye's loss: output.astype(label, copy=False). MXNet 1.9.1 (NumPy 1.23, which
    # read the .dtype attribute) gives int32 for nd and np arrays alike; a NumPy array
    # given as a dtype is refused there ("Cannot construct a dtype from an array").
    import numpy as np
    from mxnet.base import dtype_np
    label = mx.nd.zeros((2,), dtype="int32")
    assert mx.nd.zeros((2,)).astype(label).dtype == np.int32
    assert mx.nd.zeros((2,)).astype(label, copy=False).dtype == np.int32
    assert mx.np.zeros((2,)).astype(label.as_np_ndarray()).dtype == np.int32
    assert dtype_np(mx.np.ones((1,), dtype="float16")) == np.float16
    # names stay names, also as NumPy strings (MXNet's test_np_full_like draws them
    # with np.random.choice)
    assert dtype_np(np.str_("int8")) == np.int8
    with pytest.raises((TypeError, mx.base.MXNetError)):
        dtype_np(np.zeros(1))

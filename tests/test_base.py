"""mxnet.base's names that MXNet-era code and MXNet's own tests import: the ctypes
helpers and ``_LIB``, which pymxnet (no C library) answers with a clear error."""
import ctypes

import pytest

import mxnet as mx
from mxnet.base import (SymbolHandle, _LIB, c_array, c_str, c_str_array, check_call,
                        mx_uint)


def test_c_api_functions_say_they_are_not_available():
    with pytest.raises(mx.base.MXNetNotImplementedError,
                       match="MXBuildSubgraphByOpNames is not available"):
        _LIB.MXBuildSubgraphByOpNames(None, c_str("default"), mx_uint(0), None,
                                      ctypes.byref(SymbolHandle()))
    with pytest.raises(NotImplementedError):        # catchable as either
        _LIB.MXSetSubgraphPropertyOpNamesV2(c_str("x"), mx_uint(0), None)
    with pytest.raises(AttributeError):
        _LIB.__wrapped__                               # dunders are not C functions


def test_ctypes_helpers():
    arr = c_str_array(["relu", "Convolution"])
    assert [arr[i] for i in range(2)] == [b"relu", b"Convolution"]
    ints = c_array(ctypes.c_int, [3, 1, 2])
    assert list(ints) == [3, 1, 2]
    check_call(0)
    with pytest.raises(mx.base.MXNetError):
        check_call(-1)

"""mx.operator.get_operator_arguments against what MXNet 1.9.1 reports (values taken
from MXNet 1.9.1's own get_operator_arguments)."""
import pytest

import mxnet as mx
from mxnet.operator import OperatorArguments, get_operator_arguments


def test_activation():
    got = get_operator_arguments("Activation")
    assert isinstance(got, OperatorArguments)
    assert got.names == ["data", "act_type"] and got.narg == 2
    assert got.types == ["NDArray-or-Symbol",
                         "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"]


def test_convolution():
    got = get_operator_arguments("Convolution")
    assert got.names == ["data", "weight", "bias", "kernel", "stride", "dilate", "pad",
                         "num_filter", "num_group", "workspace", "no_bias", "cudnn_tune",
                         "cudnn_off", "layout"]
    assert got.types[:5] == ["NDArray-or-Symbol"] * 3 + [
        "Shape(tuple), required", "Shape(tuple), optional, default=[]"]
    assert got.types[10] == "boolean, optional, default=0"
    assert got.types[11] == ("{None, 'fastest', 'limited_workspace', 'off'},optional, "
                             "default='None'")


def test_variadic_and_unknown():
    assert get_operator_arguments("Concat").types[0] == "NDArray-or-Symbol[]"
    with pytest.raises(mx.MXNetError):
        get_operator_arguments("NoSuchOperator")

"""operator/call.py: how front-end calls bind to an operator's inputs and parameters."""
import pytest

import mxnet as mx
from mxnet.base import MXNetError


def test_none_for_an_input_the_parameters_drop():
    # Convolution(x, w, None, no_bias=True): the None bias is no input (MXNet's
    # generated functions skip None inputs), positional or by keyword
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    conv = mx.sym.Convolution(x, w, None, num_filter=2, kernel=(1, 1), no_bias=True)
    assert conv.list_arguments() == ["x", "w"]
    rev = mx.sym.SequenceReverse(data=x, sequence_length=None, use_sequence_length=False)
    assert rev.list_arguments() == ["x"]
    out = mx.nd.SequenceReverse(mx.nd.array([[1.0], [2.0]]), sequence_length=None)
    assert out.asnumpy().ravel().tolist() == [2.0, 1.0]


def test_inputs_beyond_the_arguments_are_still_refused():
    x, w, b = (mx.sym.Variable(n) for n in "xwb")
    with pytest.raises(MXNetError, match="takes 2 inputs"):
        mx.sym.Convolution(x, w, b, num_filter=2, kernel=(1, 1), no_bias=True)

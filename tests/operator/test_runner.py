"""operator.runner: requests (write/add/null/inplace), write-into-outputs without copies,
old-form operators, zero-filled output gradients and the error format."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator import runner
from mxnet.operator.params import Schema
from mxnet.operator.registry import Op, get_op


def _ctx():
    return runner.op_context(np, mx.cpu())


class _Old(Op):
    """An operator in the first wave's form: returns fresh arrays, takes no out=."""
    name = "_test_old_form"
    params = Schema()
    calls = []

    def forward(self, ctx, p, inputs, aux):
        return [inputs[0] * 2]

    def backward(self, ctx, p, out_grads, inputs, outputs, aux):
        self.calls.append(out_grads[0].copy())
        return [out_grads[0] * 2]


@pytest.mark.parametrize("op", [get_op("elemwise_mul"), _Old()])
def test_requests(op):
    a = np.arange(4.0)
    b = np.full(4, 3.0)
    inputs = [a, b] if op.name == "elemwise_mul" else [a]
    expect = a * 3 if op.name == "elemwise_mul" else a * 2
    for req, start, want in [("write", 7.0, expect), ("add", 7.0, expect + 7),
                             ("null", 7.0, np.full(4, 7.0)), ("inplace", 7.0, expect)]:
        dst = np.full(4, start)
        runner.forward(op, _ctx(), op._default_params(), inputs, [], [dst], [req])
        np.testing.assert_array_equal(dst, want, err_msg=f"{op.name} req={req}")


def test_write_into_outputs_is_not_copied():
    dst = np.empty(4)
    res = runner.forward(get_op("elemwise_add"), _ctx(), get_op("elemwise_add").parse({}),
                         [np.ones(4), np.ones(4)], [], [dst])
    assert res[0] is dst
    np.testing.assert_array_equal(dst, 2)


def test_imperative_out_writes_in_place():
    a, b = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, 4.0])
    o = mx.nd.zeros((2,))
    buf = o._chunk.data
    assert mx.nd.elemwise_add(a, b, out=o) is o
    assert o._chunk.data is buf                      # the same memory, written by the op
    np.testing.assert_array_equal(o.asnumpy(), [4, 6])
    mx.nd.elemwise_add(a, b, out=a)                  # out overlapping an input
    np.testing.assert_array_equal(a.asnumpy(), [4, 6])


def test_backward_zero_fills_missing_output_gradients():
    op = _Old()
    octx = runner.op_context(np, mx.cpu(), in_shapes=[(3,)])
    g = runner.backward(op, octx, None, [None], [None], [None], [],
                        out_meta=[((3,), np.float32)])
    np.testing.assert_array_equal(op.calls[-1], np.zeros(3, np.float32))
    assert octx.need_grad == [True]
    np.testing.assert_array_equal(g[0], 0)


def test_zero_grad_and_non_differentiable():
    octx = runner.op_context(np, mx.cpu(), need_grad=[True, False], in_shapes=[(2,), (2,)])
    eq = get_op("_equal")
    g = runner.backward(eq, octx, None, [np.ones(2, np.float32)], [None, None], [None], [])
    assert g[1] is None and g[0].dtype == np.float32 and not g[0].any()
    class _NoGrad(Op):
        name = "_test_no_grad"
    with pytest.raises(MXNetError, match="non-differentiable"):
        runner.backward(_NoGrad(), runner.op_context(np, mx.cpu(), in_shapes=[(2,)]),
                        None, [np.ones(1)], [None], [None], [])


def test_error_names_operator_node_and_shapes():
    class _Bad(Op):
        name = "_test_bad"
        params = Schema()

        def forward(self, ctx, p, inputs, aux):
            raise ZeroDivisionError("boom")
    op = _Bad()
    with pytest.raises(MXNetError, match=r"operator _test_bad \(node n1\) forward, inputs "
                                         r"of shape \[\(2, 3\)\]: ZeroDivisionError: boom"):
        runner.forward(op, _ctx(), op._default_params(), [np.ones((2, 3))], [], node="n1")


@pytest.mark.parametrize("call", [
    lambda: mx.nd.Activation(mx.nd.array([-2, 0, 3], dtype="int32"), act_type="relu"),
    lambda: mx.nd.LeakyReLU(mx.nd.array([-2, 0, 3], dtype="int32")),
    lambda: mx.nd.Dropout(mx.nd.array([1, 2], dtype="uint8")),
    lambda: mx.nd.Convolution(mx.nd.ones((1, 1, 3, 3), dtype="int32"),
                              mx.nd.ones((1, 1, 2, 2), dtype="int32"), no_bias=True,
                              kernel=(2, 2), num_filter=1),
    lambda: mx.nd.LayerNorm(mx.nd.ones((2, 3), dtype="int32"), mx.nd.ones(3, dtype="int32"),
                            mx.nd.zeros(3, dtype="int32")),
])
def test_float_only_operators_refuse_integer_data(call):
    # MXNet 1.9.1 has floating point kernels only for these: MXNetError, not a result
    # (pymxnet used to return float64 or integer results)
    with pytest.raises(MXNetError):
        call().wait_to_read()


@pytest.mark.parametrize("call", [
    lambda: mx.nd.BatchNorm(mx.nd.ones((2, 3)), mx.nd.ones(3, dtype="float64"),
                            mx.nd.zeros(3), mx.nd.zeros(3), mx.nd.ones(3)),
    # float16 data takes float32 gamma/beta (MXNet also refuses float16 ones; the
    # runner checks only inputs of differing dtypes, so that case computes)
    lambda: mx.nd.BatchNorm(mx.nd.ones((2, 3), dtype="float16"),
                            mx.nd.ones(3, dtype="float64"), mx.nd.zeros(3, dtype="float64"),
                            mx.nd.zeros(3), mx.nd.ones(3)),
    lambda: mx.nd.LayerNorm(mx.nd.ones((2, 3)), mx.nd.ones(3, dtype="float64"),
                            mx.nd.zeros(3)),
    lambda: mx.nd.InstanceNorm(mx.nd.ones((1, 2, 3)), mx.nd.ones(2, dtype="float64"),
                               mx.nd.zeros(2)),
    lambda: mx.nd.LeakyReLU(mx.nd.ones((2, 3)), mx.nd.ones(3, dtype="float64"),
                            act_type="prelu"),
    lambda: mx.nd.FullyConnected(mx.nd.ones((2, 3)), mx.nd.ones((4, 3)),
                                 mx.nd.ones(4, dtype="float16"), num_hidden=4),
    lambda: mx.nd.RNN(mx.nd.ones((2, 1, 2)), mx.nd.ones((12,), dtype="float64"),
                      mx.nd.zeros((1, 1, 2)), state_size=2, num_layers=1, mode="rnn_tanh"),
    lambda: mx.nd.softmax_cross_entropy(mx.nd.ones((2, 3)), mx.nd.array([0, 1], dtype="int32")),
])
def test_mismatched_input_dtypes_are_refused(call):
    # MXNet 1.9.1 infers types on every imperative call and refuses these
    with pytest.raises(MXNetError):
        call().wait_to_read()


def test_matching_dtypes_still_run():
    y = mx.nd.BatchNorm(mx.nd.ones((2, 3), dtype="float16"), mx.nd.ones(3), mx.nd.zeros(3),
                        mx.nd.zeros(3), mx.nd.ones(3))
    assert y.dtype == np.float16
    y = mx.nd.LeakyReLU(mx.nd.ones((2, 3), dtype="float64"),
                        mx.nd.ones(3, dtype="float64") * 0.5, act_type="prelu")
    assert y.dtype == np.float64

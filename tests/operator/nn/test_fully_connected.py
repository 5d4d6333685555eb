"""FullyConnected against NumPy, numeric gradients, shape inference of the weight and
bias, and MXNet 1.9.1's golden cases."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(5)


@pytest.mark.parametrize("case", fixture_cases_for("FullyConnected"))
def test_fixture(case):
    run_fixture_case(case)


def ref_fc(x, w, b, flatten):
    x2 = x.reshape(x.shape[0], -1) if flatten else x
    y = x2 @ w.T
    return y if b is None else y + b


@pytest.mark.parametrize("shape,flatten", [((4, 6), True), ((2, 3, 4), True),
                                           ((2, 3, 4), False), ((5,), True), ((5,), False),
                                           ((2, 1, 3, 2), False)])
@pytest.mark.parametrize("no_bias", [False, True])
def test_forward_backward_vs_numpy(shape, flatten, no_bias):
    x = rs.randn(*shape)
    feat = (int(np.prod(shape[1:])) if len(shape) > 1 else 1) if flatten else shape[-1]
    w, b = rs.randn(3, feat), None if no_bias else rs.randn(3)
    ins = [nd.array(x), nd.array(w)] + ([] if no_bias else [nd.array(b)])
    for a in ins:
        a.attach_grad()
    with mx.autograd.record():
        y = nd.FullyConnected(*ins, num_hidden=3, no_bias=no_bias, flatten=flatten)
    x2 = x.reshape(-1, feat)
    ref = ref_fc(x2, w, b, False)
    oshape = (shape[0], 3) if flatten else shape[:-1] + (3,)
    assert y.shape == oshape
    assert_almost_equal(y.asnumpy(), ref.reshape(oshape), rtol=1e-5, atol=1e-5)
    dy = rs.randn(*oshape)
    y.backward(nd.array(dy))
    dy2 = dy.reshape(-1, 3)
    assert_almost_equal(ins[0].grad.asnumpy(), (dy2 @ w).reshape(shape), rtol=1e-5, atol=1e-5)
    assert_almost_equal(ins[1].grad.asnumpy(), dy2.T @ x2, rtol=1e-5, atol=1e-5)
    if not no_bias:
        assert_almost_equal(ins[2].grad.asnumpy(), dy2.sum(axis=0), rtol=1e-5, atol=1e-5)


def test_numeric_gradient():
    check_numeric_gradient(lambda x, w, b: nd.FullyConnected(x, w, b, num_hidden=4),
                           [rs.randn(3, 2, 3), rs.randn(4, 6), rs.randn(4)])
    check_numeric_gradient(lambda x, w: nd.FullyConnected(x, w, num_hidden=2, no_bias=True,
                                                          flatten=False),
                           [rs.randn(2, 3, 4), rs.randn(2, 4)])


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_dtypes(dtype):
    x, w, b = rs.randint(-3, 3, (2, 5)), rs.randint(-3, 3, (3, 5)), rs.randint(-3, 3, 3)
    y = nd.FullyConnected(nd.array(x, dtype=dtype), nd.array(w, dtype=dtype),
                          nd.array(b, dtype=dtype), num_hidden=3)
    assert y.dtype == dtype
    assert_almost_equal(y.asnumpy().astype(np.float64), x @ w.T + b)


def test_integer_data_and_mixed_dtypes_are_refused():
    # MXNet 1.9.1: FullyConnected has floating point kernels only, and its type
    # inference refuses a bias of another dtype (both raise MXNetError).
    x, w, b = nd.ones((2, 5)), nd.ones((3, 5)), nd.ones(3)
    with pytest.raises(mx.base.MXNetError):
        nd.FullyConnected(x.astype("int32"), w.astype("int32"), b.astype("int32"),
                          num_hidden=3).wait_to_read()
    with pytest.raises(mx.base.MXNetError):
        nd.FullyConnected(x, w, b.astype("float16"), num_hidden=3).wait_to_read()


def test_symbol_infers_parameter_shapes():
    s = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    assert s.list_arguments() == ["data", "fc_weight", "fc_bias"]
    args, outs, _ = s.infer_shape(data=(2, 3, 7))
    assert args == [(2, 3, 7), (4, 21), (4,)] and outs == [(2, 4)]
    s = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, no_bias=True, flatten=False,
                              name="fc")
    assert s.list_arguments() == ["data", "fc_weight"]
    args, outs, _ = s.infer_shape(data=(2, 3, 7))
    assert args == [(2, 3, 7), (4, 7)] and outs == [(2, 3, 4)]


def test_backward_keeps_only_inputs():
    from mxnet.operator.registry import get_op
    assert get_op("FullyConnected").backward_uses == ("out_grad", "in_data")


@pytest.mark.parametrize("wshape,bshape,nh,msg", [
    ((3, 4), (3,), 3, "weight"),
    ((3, 5), (4,), 3, "bias"),
    ((3, 5), (3,), 4, "weight"),
])
def test_bad_shapes(wshape, bshape, nh, msg):
    with pytest.raises(MXNetError, match=msg):
        nd.FullyConnected(nd.ones((2, 5)), nd.ones(wshape), nd.ones(bshape), num_hidden=nh)


def test_bad_inputs():
    with pytest.raises(MXNetError):      # no_bias: bias is not an input
        nd.FullyConnected(nd.ones((2, 5)), nd.ones((3, 5)), nd.ones(3), num_hidden=3,
                          no_bias=True)
    with pytest.raises(MXNetError, match="dtype"):
        nd.FullyConnected(nd.ones((2, 5), dtype="float64"), nd.ones((3, 5)), nd.ones(3),
                          num_hidden=3)
    with pytest.raises(MXNetError):
        nd.FullyConnected(nd.ones((2, 5)), nd.ones((0, 5)), num_hidden=0, no_bias=True)


def test_row_split_products_match_one_thread(monkeypatch):
    """Large FullyConnected products split their rows over threads (backend/parallel);
    outputs and all gradients equal the one-thread result."""
    from mxnet.backend import parallel
    rng = np.random.RandomState(5)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((7, 20), (9, 20), (9,)))

    def run():
        xs = [mx.nd.array(a) for a in (x, w, b)]
        for a in xs:
            a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.FullyConnected(*xs, num_hidden=9)
        y.backward(mx.nd.ones((7, 9)))
        return [y.asnumpy()] + [a.grad.asnumpy() for a in xs]
    serial = run()
    monkeypatch.setattr(parallel, "MATMUL_MIN_FLOPS", 0)
    monkeypatch.setattr(parallel, "_THREADS", 3)
    for s, p in zip(serial, run()):
        np.testing.assert_allclose(p, s, rtol=1e-5, atol=1e-5)

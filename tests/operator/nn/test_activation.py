"""Activation and LeakyReLU against NumPy references, numeric gradients and MXNet
1.9.1's golden cases."""
import math

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from mxnet.test_utils import assert_almost_equal
from opcheck import Case, check
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(3)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_LAMBDA = 1.0507009873554804934193349852946


def away_from_zero(*shape):
    """Values with |x| >= 0.1, so finite differences never straddle a kink."""
    x = rs.uniform(0.1, 2.0, shape)
    return x * rs.choice([-1.0, 1.0], shape)


def grad_of(fn, *arrays, head=None):
    nds = [nd.array(a) for a in arrays]
    for a in nds:
        a.attach_grad()
    with mx.autograd.record():
        out = fn(*nds)
    first = out[0] if isinstance(out, (list, tuple)) else out
    mx.autograd.backward([first], [nd.array(head if head is not None
                                            else np.ones(first.shape))])
    return out, [a.grad.asnumpy() for a in nds]


@pytest.mark.parametrize("case", fixture_cases_for("Activation", "LeakyReLU"))
def test_fixture(case):
    run_fixture_case(case)


def _erf(x):
    return np.vectorize(math.erf)(x)


ACT_REFS = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softrelu": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
}


@pytest.mark.parametrize("act", sorted(ACT_REFS))
def test_activation(act):
    x = away_from_zero(3, 4, 2)
    check(Case("Activation", ACT_REFS[act], kwargs={"act_type": act}, ref_kwargs=False,
               inputs=[x]))


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_activation_dtype(dtype):
    x = nd.array(away_from_zero(2, 3), dtype=dtype)
    for act in ACT_REFS:
        y = nd.Activation(x, act_type=act)
        assert y.dtype == dtype
        assert_almost_equal(y.asnumpy(), ACT_REFS[act](x.asnumpy().astype(np.float64)),
                            rtol=1e-2 if dtype == np.float16 else 1e-7, atol=1e-3)


def test_activation_extremes():
    # sigmoid/softrelu must not overflow to NaN for large |x|
    x = nd.array([-100.0, -30.0, 0.0, 30.0, 100.0])
    s = nd.Activation(x, act_type="sigmoid").asnumpy()
    r = nd.Activation(x, act_type="softrelu").asnumpy()
    assert np.all(np.isfinite(s)) and np.all(np.isfinite(r))
    assert_almost_equal(s, 1 / (1 + np.exp(-x.asnumpy().astype(np.float64))), atol=1e-7)
    assert_almost_equal(r, np.logaddexp(0, x.asnumpy().astype(np.float64)), rtol=1e-6)


def test_relu_grad_at_zero_is_zero():
    _, (g,) = grad_of(lambda a: nd.Activation(a, act_type="relu"), np.array([-1.0, 0, 1]))
    assert_almost_equal(g, np.array([0.0, 0, 1]))


def test_activation_bad_type():
    with pytest.raises(MXNetError):
        nd.Activation(nd.ones((2,)), act_type="swish")
    with pytest.raises(MXNetError):
        nd.Activation(nd.ones((2,)))          # act_type is required


LEAKY_REFS = {
    "leaky": lambda x, s: np.where(x > 0, x, s * x),
    "elu": lambda x, s: np.where(x > 0, x, s * np.expm1(x)),
    "selu": lambda x, s: SELU_LAMBDA * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)),
    "gelu": lambda x, s: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
}


@pytest.mark.parametrize("act", ["leaky", "elu", "gelu"])
@pytest.mark.parametrize("slope", [0.25, 0.7, -0.3])
def test_leaky_family(act, slope):
    x = away_from_zero(3, 5)
    check(Case("LeakyReLU", lambda a: LEAKY_REFS[act](a, slope),
               kwargs={"act_type": act, "slope": slope}, ref_kwargs=False, inputs=[x]))


def test_leaky_default_slope():
    x = away_from_zero(4)
    assert_almost_equal(nd.LeakyReLU(nd.array(x)).asnumpy(), np.where(x > 0, x, 0.25 * x))


def test_selu_forward_and_mxnet_gradient():
    x = away_from_zero(4, 3)
    y, (g,) = grad_of(lambda a: nd.LeakyReLU(a, act_type="selu"), x)
    ref = LEAKY_REFS["selu"](x, None)
    assert_almost_equal(y.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    # MXNet 1.9.1's (knowingly inexact) gradient: lambda * (y + alpha) for x <= 0
    want = np.where(x > 0, SELU_LAMBDA, SELU_LAMBDA * (ref + SELU_ALPHA))
    assert_almost_equal(g, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("gshape", [(3,), (1,)])
def test_prelu(gshape):
    x = away_from_zero(2, 3, 4)
    gamma = rs.uniform(0.1, 0.9, gshape)

    def ref(a, g):
        gb = g.reshape(1, -1, 1) if g.size == 3 else g
        return np.where(a > 0, a, gb * a)
    check(Case("LeakyReLU", ref, kwargs={"act_type": "prelu"}, ref_kwargs=False,
               inputs=[x, gamma]))


def test_prelu_names_and_shapes():
    op = get_op("LeakyReLU")
    p = op.parse({"act_type": "prelu"})
    assert op.arguments(p) == ["data", "gamma"]
    assert op.arguments(op.parse({})) == ["data"]
    ins, outs, aux = op.infer_shape(p, [(2, 5, 3), None])
    assert ins == [(2, 5, 3), (5,)] and outs == [(2, 5, 3)] and aux == []


def test_prelu_errors():
    with pytest.raises(MXNetError):
        nd.LeakyReLU(nd.ones((2, 3)), nd.ones((4,)), act_type="prelu")
    op = get_op("LeakyReLU")
    with pytest.raises(MXNetError):
        op.infer_shape(op.parse({"act_type": "prelu"}), [(3,), None])
    with pytest.raises(MXNetError):
        nd.LeakyReLU(nd.ones((2,)), act_type="bogus")


def test_rrelu_inference_uses_mean_slope():
    x = away_from_zero(3, 4)
    out = nd.LeakyReLU(nd.array(x), act_type="rrelu", lower_bound=0.1, upper_bound=0.3)
    assert isinstance(out, list) and len(out) == 2       # output and mask, as MXNet
    assert_almost_equal(out[0].asnumpy(), np.where(x > 0, x, 0.2 * x), rtol=1e-6)


def test_rrelu_training_random_slopes():
    x = away_from_zero(50, 40)
    mx.random.seed(11)
    (y, mask), (g,) = grad_of(lambda a: nd.LeakyReLU(a, act_type="rrelu"), x,
                              head=np.full(x.shape, 2.0))
    m = mask.asnumpy()
    assert m.min() >= 0.125 and m.max() <= 0.334 and m.std() > 0.02
    assert_almost_equal(y.asnumpy(), np.where(x > 0, x, m * x), rtol=1e-6)
    assert_almost_equal(g, 2.0 * np.where(x > 0, 1.0, m), rtol=1e-6)
    # the same seed gives the same slopes
    mx.random.seed(11)
    with mx.autograd.train_mode():
        _, mask2 = nd.LeakyReLU(nd.array(x), act_type="rrelu")
    assert_almost_equal(mask2.asnumpy(), m)


@pytest.mark.parametrize("xshape,gshape,bshape", [
    ((3, 4), (3, 4), (3, 4)),              # gamma over batch and channel
    ((3, 4, 2, 5), (3, 4), (3, 4, 1, 1)),
    ((3, 4, 2), (1, 4), (1, 4, 1)),
])
def test_prelu_gamma_on_axes_0_and_1(xshape, gshape, bshape):
    # gamma's axes match data's axes 0 and 1 (MXNet 1.9.1's broadcast rule)
    x = away_from_zero(*xshape)
    gamma = rs.uniform(0.1, 0.9, gshape)
    check(Case("LeakyReLU", lambda a, g: np.where(a > 0, a, g.reshape(bshape) * a),
               kwargs={"act_type": "prelu"}, ref_kwargs=False, inputs=[x, gamma]))
    with pytest.raises(MXNetError, match="cannot broadcast gamma"):
        nd.LeakyReLU(nd.array(x), nd.ones((2,) + gshape), act_type="prelu")

"""Unary elementwise operators: forward against NumPy/SciPy, gradients against finite
differences, MXNet's dtype and rounding rules, and the golden MXNet 1.9.1 cases."""
import numpy as np
import pytest
from scipy import special

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

import opcheck
from opcheck import Case, check
from common import fixture_cases_for, run_fixture_case

nd = mx.nd


def op(name):
    # mx.nd.<name> may be shadowed by a namespace helper (mx.nd.gamma is also a
    # sampler's name); mx.nd.op holds the registry's functions.
    return getattr(nd.op, name)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.logaddexp(0, x)


# name -> (NumPy/SciPy reference, input sampler, differentiable)
_rs = np.random.RandomState(7)


def _any(shape, rng=_rs):
    return rng.uniform(-2, 2, shape)


def _pos(shape, rng=_rs):
    return rng.uniform(0.2, 3, shape)


def _unit(shape, rng=_rs):
    return rng.uniform(-0.9, 0.9, shape)


def _away0(shape, rng=_rs):
    return np.sign(_any(shape, rng)) * rng.uniform(0.2, 2, shape)


def _above(low, high):
    return lambda shape, rng=_rs: rng.uniform(low, high, shape)


UNARY = {
    "abs": (np.abs, _away0, True),
    "negative": (np.negative, _any, True),
    "reciprocal": (np.reciprocal, _away0, True),
    "square": (np.square, _any, True),
    "sqrt": (np.sqrt, _pos, True),
    "rsqrt": (lambda x: 1 / np.sqrt(x), _pos, True),
    "cbrt": (np.cbrt, _away0, True),
    "rcbrt": (lambda x: 1 / np.cbrt(x), _away0, True),
    "exp": (np.exp, _any, True),
    "expm1": (np.expm1, _any, True),
    "log": (np.log, _pos, True),
    "log2": (np.log2, _pos, True),
    "log10": (np.log10, _pos, True),
    "log1p": (np.log1p, _pos, True),
    "sin": (np.sin, _any, True),
    "cos": (np.cos, _any, True),
    "tan": (np.tan, _unit, True),
    "arcsin": (np.arcsin, _unit, True),
    "arccos": (np.arccos, _unit, True),
    "arctan": (np.arctan, _any, True),
    "sinh": (np.sinh, _any, True),
    "cosh": (np.cosh, _any, True),
    "tanh": (np.tanh, _any, True),
    "arcsinh": (np.arcsinh, _any, True),
    "arccosh": (np.arccosh, _above(1.2, 3), True),
    "arctanh": (np.arctanh, _unit, True),
    "degrees": (np.degrees, _any, True),
    "radians": (np.radians, _any, True),
    "relu": (lambda x: np.maximum(x, 0), _away0, True),
    "sigmoid": (_sigmoid, _any, True),
    "log_sigmoid": (lambda x: -_softplus(-x), _any, True),
    "mish": (lambda x: x * np.tanh(_softplus(x)), _any, True),
    "softsign": (lambda x: x / (1 + np.abs(x)), _away0, True),
    "erf": (special.erf, _any, True),
    "erfinv": (special.erfinv, _unit, True),
    "gamma": (special.gamma, _above(0.3, 4), True),
    "gammaln": (special.gammaln, _above(0.3, 4), True),
    "sign": (np.sign, _away0, False),
    "ceil": (np.ceil, _any, False),
    "floor": (np.floor, _any, False),
    "trunc": (np.trunc, _any, False),
    "fix": (np.fix, _any, False),
    "logical_not": (lambda x: (x == 0).astype(x.dtype), _any, False),
    "zeros_like": (np.zeros_like, _any, False),
    "ones_like": (np.ones_like, _any, False),
    "BlockGrad": (lambda x: x, _any, False),
    "stop_gradient": (lambda x: x, _any, False),
    "make_loss": (lambda x: x, _any, False),
}


def _case(name):
    ref, sample, differentiable = UNARY[name]
    return opcheck.Case(name, ref, [[(3, 4)]], sample=sample,
                        grad=differentiable, dtypes=_DTYPES.get(name, _ALL))


_ALL = ("float16", "float32", "float64")
# float16 misses these references' precision near their poles or in their tails
_DTYPES = {n: ("float32", "float64") for n in
           ("gamma", "gammaln", "erfinv", "arctanh", "arccosh", "tan", "rcbrt", "rsqrt",
            "reciprocal", "log_sigmoid", "mish", "cosh", "sinh", "exp", "expm1", "log2",
            "log10", "log", "log1p")}
CASES = [_case(n) for n in sorted(UNARY)]
CASES += [opcheck.Case("hard_sigmoid", lambda x, alpha=0.2, beta=0.5:   # MXNet's defaults
                       np.clip(alpha * x + beta, 0, 1), [[(3, 4)]], kwargs=kw,
                       sample=opcheck.away_from(kinks, -4, 4))
          for kw, kinks in [({}, [-2.5, 2.5]), ({"alpha": 0.3, "beta": 0.4}, [-4 / 3, 2])]]


CASES += [opcheck.Case("_npi_nan_to_num", np.nan_to_num, [[(3, 4)]],
                       kwargs={"nan": 1.5, "posinf": 9.0, "neginf": -9.0},
                       sample=lambda s, rng: np.where(rng.rand(*s) < .4, rng.choice(
                           [np.nan, np.inf, -np.inf], s), rng.uniform(-2, 2, s)))]


test_unary = opcheck.cases_test(CASES)


@pytest.mark.parametrize("name", ["relu", "sigmoid", "exp"])
def test_larger_shapes(name):
    ref, sample, _ = UNARY[name]
    x = sample((2, 3, 4)).astype(np.float32)
    assert_almost_equal(op(name)(nd.array(x)).asnumpy(), ref(x.astype(np.float64)),
                        rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["sign", "ceil", "floor", "trunc", "fix", "round", "rint",
                                  "logical_not", "zeros_like", "ones_like", "BlockGrad",
                                  "stop_gradient"])
def test_zero_gradient(name):
    x = nd.array(_away0((2, 3)))
    x.attach_grad()
    with mx.autograd.record():
        y = op(name)(x) * 3 + x
    y.backward()
    assert_almost_equal(x.grad.asnumpy(), np.ones((2, 3)))


_INT_MATH = ["abs", "negative", "square", "sqrt", "exp", "log", "sin", "tanh", "degrees",
             "radians", "sigmoid", "relu", "cbrt", "softsign", "reciprocal", "sign"]


@pytest.mark.parametrize("name", _INT_MATH)
def test_integer_input_keeps_dtype(name):
    # MXNet computes in floating point and truncates back into the integer dtype.
    x = np.array([4, 9, 1, 3, 16], dtype=np.int32)
    out = op(name)(nd.array(x, dtype="int32"))
    assert out.dtype == np.int32
    with np.errstate(all="ignore"):
        expect = UNARY[name][0](x.astype(np.float64)).astype(np.int32)
    assert (out.asnumpy() == expect).all()


def test_rounding_rules():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.3, 0.7, -0.3, -0.7, 3.49], np.float32)
    a = nd.array(x)
    # round: halves away from zero (C's round)
    assert nd.round(a).asnumpy().tolist() == [1, 2, 3, -1, -2, -3, 0, 1, 0, -1, 3]
    # rint: nearer of floor/ceil, floor on ties (MXNet 1.9.1's behaviour)
    assert nd.rint(a).asnumpy().tolist() == [0, 1, 2, -1, -2, -3, 0, 1, 0, -1, 3]
    assert nd.fix(a).asnumpy().tolist() == np.trunc(x).tolist()
    i = nd.array([3, -4], dtype="int64")
    for name in ["round", "rint", "ceil", "floor", "trunc", "fix"]:
        r = op(name)(i)
        assert r.dtype == np.int64 and r.asnumpy().tolist() == [3, -4]


def test_sign_and_relu_nan():
    x = nd.array([-2, 0, 3, np.nan])
    assert nd.sign(x).asnumpy().tolist() == [-1, 0, 1, 0]      # sign(NaN) is 0 in MXNet
    assert np.isnan(nd.relu(x).asnumpy()[3])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")     # NumPy's 1/0 notice
def test_edge_values():
    r = nd.rsqrt(nd.array([4, 0])).asnumpy()
    assert r[0] == 0.5 and r[1] == np.inf
    assert nd.rcbrt(nd.array([-8.0])).asnumpy()[0] == -0.5
    assert nd.cbrt(nd.array([-8.0])).asnumpy()[0] == -2
    s = nd.sigmoid(nd.array([-200.0, 200.0])).asnumpy()   # no overflow trouble
    assert s.tolist() == [0.0, 1.0]


def test_special_function_domains():
    g = op("gamma")(nd.array([-1.5, -0.5, 0.5, 3, -1, 0, -0.0])).asnumpy()
    assert_almost_equal(g[:4], special.gamma([-1.5, -0.5, 0.5, 3]), rtol=1e-6)
    assert np.isnan(g[4]) and g[5] == np.inf and g[6] == -np.inf
    lg = nd.gammaln(nd.array([-1.5, -0.5, -1, 0, 1e10, 1e-10])).asnumpy()
    assert_almost_equal(lg[[0, 1, 4, 5]],
                        special.gammaln(np.float32([-1.5, -0.5, 1e10, 1e-10])), rtol=1e-6)
    assert lg[2] == np.inf and lg[3] == np.inf
    e = nd.erfinv(nd.array([-1, 1, 1.5, 0])).asnumpy()
    assert e[0] == -np.inf and e[1] == np.inf and np.isnan(e[2]) and e[3] == 0
    erf = nd.erf(nd.array([-np.inf, np.inf, 30, 1e-6])).asnumpy()
    assert_almost_equal(erf, special.erf(np.float32([-np.inf, np.inf, 30, 1e-6])), rtol=1e-6)


def test_special_functions_float64_accuracy():
    x = np.concatenate([np.linspace(-6, 6, 1001), [1e-8, -3e-5, 2.49, 2.51]])
    assert_almost_equal(nd.erf(nd.array(x, dtype="float64")).asnumpy(), special.erf(x),
                        rtol=1e-13, atol=1e-300)
    u = np.concatenate([np.linspace(-0.999999, 0.999999, 1001), [1e-9, 1 - 1e-12]])
    assert_almost_equal(nd.erfinv(nd.array(u, dtype="float64")).asnumpy(), special.erfinv(u),
                        rtol=1e-11, atol=1e-300)
    g = np.concatenate([np.linspace(-20.25, 150.5, 999), [1e-7]])
    assert_almost_equal(op("gamma")(nd.array(g, dtype="float64")).asnumpy(), special.gamma(g),
                        rtol=1e-11, atol=0)
    assert_almost_equal(nd.gammaln(nd.array(g, dtype="float64")).asnumpy(),
                        special.gammaln(g), rtol=1e-11, atol=1e-13)


def test_special_function_gradients_at_negative_arguments():
    x = np.array([-1.5, -0.3, -2.7, 0.5, 7.0])
    check_numeric_gradient(lambda a: nd.gammaln(a), [x], numeric_eps=1e-6, rtol=1e-5)
    check_numeric_gradient(lambda a: op("gamma")(a), [x], numeric_eps=1e-6, rtol=1e-5)


def test_clip():
    x = np.array([-2, -1, -0.5, 0, 0.7, 1, 2], np.float32)
    check(Case("clip", lambda a: np.clip(a, -1, 1), kwargs={"a_min": -1, "a_max": 1},
               ref_kwargs=False, inputs=[x], grad=False))
    # the gradient passes on the closed interval [a_min, a_max]
    a = nd.array(x)
    a.attach_grad()
    with mx.autograd.record():
        y = nd.clip(a, -1, 1)             # positional parameters, as MXNet allows
    y.backward()
    assert a.grad.asnumpy().tolist() == [0, 1, 1, 1, 1, 1, 0]
    # reversed bounds: the upper bound is tested first, and no gradient passes
    r = nd.clip(nd.array([1.5, -2.5, 0.5, -4]), a_min=2, a_max=-1)
    assert r.asnumpy().tolist() == [-1, 2, -1, 2]
    # integer data: the bounds are cast (truncated) to the dtype
    r = nd.clip(nd.array([1, 2, 3, -4], dtype="int32"), a_min=-1.5, a_max=2.5)
    assert r.dtype == np.int32 and r.asnumpy().tolist() == [1, 2, 2, -1]
    check_numeric_gradient(lambda a: nd.clip(a, a_min=-0.75, a_max=0.75),
                           [np.array([-2, -0.5, 0.2, 0.6, 1.5])])


def test_clip_parameter_errors():
    x = nd.ones((2, 2))
    with pytest.raises(MXNetError, match="a_max"):
        nd.clip(x, a_min=0)
    with pytest.raises(MXNetError, match="foo"):
        nd.clip(x, a_min=0, a_max=1, foo=1)
    with pytest.raises(MXNetError, match="a_min"):
        nd.clip(x, a_min="zero", a_max=1)
    # MXNet 1.9.1's parameterless operators have no parser: extra keywords are ignored
    np.testing.assert_allclose(nd.exp(x, bogus=3).asnumpy(), np.exp(x.asnumpy()))


def _smooth_l1_ref(x, sigma):
    s2 = sigma * sigma
    return np.where(np.abs(x) < 1 / s2, 0.5 * s2 * x * x, np.abs(x) - 0.5 / s2)


@pytest.mark.parametrize("sigma", [1.0, 2.0, 0.5])
def test_smooth_l1(sigma):
    x = _rs.uniform(-3, 3, (4, 5))
    x = x[np.abs(np.abs(x) - 1 / sigma ** 2) > 1e-2]       # off the kink
    check(Case("smooth_l1", lambda a: _smooth_l1_ref(a, sigma), kwargs={"scalar": sigma},
               ref_kwargs=False, inputs=[x]))
    # the default sigma is 1
    assert_almost_equal(nd.smooth_l1(nd.array(x)).asnumpy(), _smooth_l1_ref(x, 1.0),
                        rtol=1e-5, atol=1e-6)


def test_smooth_l1_is_a_simple_op_with_scalar():
    from mxnet.operator.registry import get_op
    o = get_op("smooth_l1")
    assert list(o.params.fields) == ["scalar"] and o.params.fields["scalar"].default == 1.0
    assert o.backward_uses == ("out_grad", "in_data")


def test_make_loss_and_blockgrad():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.make_loss(x * 2)
    y.backward(nd.array([5, 5, 5]))          # the head gradient is ignored
    assert x.grad.asnumpy().tolist() == [2, 2, 2]
    with mx.autograd.record():
        y = nd.BlockGrad(x) * x
    y.backward()
    assert x.grad.asnumpy().tolist() == [1, 2, 3]
    with mx.autograd.record():
        y = nd.stop_gradient(x) + 2 * x
    y.backward()
    assert x.grad.asnumpy().tolist() == [2, 2, 2]


@pytest.mark.parametrize("kwargs, scale", [
    ({}, 1.0), ({"grad_scale": 3}, 3.0), ({"normalization": "batch"}, 0.5),
    ({"normalization": "valid", "valid_thresh": 2.5}, 0.5),
    ({"normalization": "valid"}, 1 / 6)])
def test_MakeLoss(kwargs, scale):
    x = nd.array([[1, 2, 3], [1, 1, 1]])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.MakeLoss(x * 2, **kwargs)
    assert_almost_equal(y.asnumpy(), 2 * x.asnumpy())
    y.backward(nd.ones((2, 3)) * 7)
    assert_almost_equal(x.grad.asnumpy(), np.full((2, 3), 2 * scale), rtol=1e-6)


def test_like_operators_keep_dtype():
    for dt in ["float16", "float64", "int32", "uint8"]:
        x = nd.array([1, 2, 3], dtype=dt)
        z, o = nd.zeros_like(x), nd.ones_like(x)
        assert z.dtype == np.dtype(dt) and o.dtype == np.dtype(dt)
        assert z.asnumpy().tolist() == [0, 0, 0] and o.asnumpy().tolist() == [1, 1, 1]


def test_logical_not():
    r = nd.logical_not(nd.array([0, 1, 2, -0.5]))
    assert r.dtype == np.float32 and r.asnumpy().tolist() == [1, 0, 0, 0]
    r = nd.logical_not(nd.array([0, 3], dtype="int32"))
    assert r.dtype == np.int32 and r.asnumpy().tolist() == [1, 0]


def test_fluent_methods_and_operators():
    x = nd.array([[0.5, -1.5], [2.0, -0.25]])
    xn = x.asnumpy()
    assert_almost_equal(x.exp().asnumpy(), np.exp(xn))
    assert_almost_equal(x.abs().asnumpy(), np.abs(xn))
    assert_almost_equal(abs(x).asnumpy(), np.abs(xn))
    assert_almost_equal((-x).asnumpy(), -xn)
    assert_almost_equal(x.clip(-1, 1).asnumpy(), np.clip(xn, -1, 1))
    assert_almost_equal(x.sigmoid().asnumpy(), _sigmoid(xn), rtol=1e-6)
    assert_almost_equal(x.square().sqrt().asnumpy(), np.abs(xn), rtol=1e-6)


def test_float16():
    x = _any((3, 4)).astype(np.float16)
    for name in ["exp", "tanh", "erf", "gammaln", "sigmoid", "abs"]:
        out = op(name)(nd.array(x, dtype="float16"))
        assert out.dtype == np.float16
        assert_almost_equal(out.asnumpy().astype(np.float64),
                            UNARY[name][0](x.astype(np.float64)), rtol=2e-3, atol=2e-3)


def test_inplace_out_argument():
    x = nd.array([1.0, 4.0, 9.0])
    out = nd.zeros((3,))
    r = nd.sqrt(x, out=out)
    assert r is out and out.asnumpy().tolist() == [1, 2, 3]


@pytest.mark.parametrize("case", fixture_cases_for("abs", "exp", "log", "sqrt", "square",
                                                   "clip", "smooth_l1"))
def test_mxnet_fixture(case):
    run_fixture_case(case)


@pytest.mark.parametrize("name", ["exp", "log", "log2", "sin", "cos"])
def test_float32_results_are_correctly_rounded(name):
    # MXNet takes these from the C library's float functions, which round correctly
    # (nearly always): the float32 nearest to the exact value, here from Python's
    # double-precision math module
    import math
    xs = np.random.RandomState(1).uniform(0.05, 9.0, 400).astype(np.float32)
    fn = {"exp": math.exp, "log": math.log, "log2": math.log2, "sin": math.sin,
          "cos": math.cos}[name]
    want = np.array([np.float32(fn(float(v))) for v in xs])
    got = getattr(mx.nd, name)(mx.nd.array(xs)).asnumpy()
    np.testing.assert_array_equal(got, want)
    assert float(mx.nd.exp(mx.nd.ones((1,))).asscalar()) == float(np.float32(math.e))


def test_relu_gradient_is_nan_at_nan():
    # as MXNet's relu: NaN in, NaN out and NaN gradient; 0 at 0 and below
    x = nd.array([np.nan, -1.0, 2.0, 0.0])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.relu(x)
    y.backward(nd.array([3.0, 3.0, 3.0, 3.0]))
    g = x.grad.asnumpy()
    assert np.isnan(g[0]) and g[1:].tolist() == [0.0, 3.0, 0.0]


def test_small_integer_inputs_computed_in_double():
    # MXNet computes float functions of int8/uint8 in double and truncates once;
    # NumPy would compute them in float16 (exp(9) = 8104, tanh(9) = 1). Expected values
    # from MXNet 1.9.1: exp of int8 [1, 3, 9, 100] is [2, 20, -89, 0] (8103 wraps).
    for dt, want_exp, want_deg in (("int8", [2, 20, -89, 0], [57, -85, 3, 97]),
                                   ("uint8", [2, 20, 167, 0], [57, 171, 3, 97])):
        x = mx.nd.array([1, 3, 9, 100], dtype=dt)
        assert mx.nd.exp(x).asnumpy().tolist() == want_exp
        assert mx.nd.degrees(x).asnumpy().tolist() == want_deg
        assert mx.nd.tanh(x).asnumpy().tolist() == [0, 0, 0, 1]
        assert mx.nd.sigmoid(x).asnumpy().tolist() == [0, 0, 0, 1]
        assert mx.nd.softsign(x).asnumpy().tolist() == [0, 0, 0, 0]
        assert mx.nd.exp(x).dtype == np.dtype(dt)
    # gamma at integers is exact: (n - 1)!, not 0.999... truncated to 0
    assert mx.nd.gamma(mx.nd.array([1, 2, 5, 6], dtype="int32")).asnumpy().tolist() == \
        [1, 1, 24, 120]
    assert mx.nd.gamma(mx.nd.array([1, 5], dtype="int8")).asnumpy().tolist() == [1, 24]


def test_float16_sigmoid_rounded_once():
    # computed in float32 and rounded to float16 once (MXNet 1.9.1: sigmoid(2) is
    # 0.880859375, the float16 nearest to 0.8807971)
    x = np.array([2.0, -1.5, 0.3], dtype=np.float16)
    y = mx.nd.sigmoid(mx.nd.array(x, dtype="float16")).asnumpy()
    want = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float16)
    assert y.dtype == np.float16 and y.tolist() == want.tolist()

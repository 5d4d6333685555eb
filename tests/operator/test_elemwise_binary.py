"""Binary elementwise operators (same-shape, broadcast and scalar forms) and add_n:
forward against NumPy, gradients against finite differences, MXNet's dtype rules
(checked against MXNet 1.9.1's outputs), NDArray's Python operators and the golden
cases."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import get_op
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

import opcheck
from opcheck import Case, check
from common import fixture_cases_for, run_fixture_case

nd = mx.nd
I = nd._internal


def _mod(a, b):
    with np.errstate(all="ignore"):
        return np.where(b == 0, 0, np.mod(a, b))


# key -> (same-shape op, broadcast op, NumPy reference)
ARITH = {
    "add": ("elemwise_add", "broadcast_add", np.add),
    "sub": ("elemwise_sub", "broadcast_sub", np.subtract),
    "mul": ("elemwise_mul", "broadcast_mul", np.multiply),
    "div": ("elemwise_div", "broadcast_div", np.divide),
    "mod": ("_mod", "broadcast_mod", _mod),
    "power": ("_power", "broadcast_power", np.power),
    "maximum": ("_maximum", "broadcast_maximum", np.maximum),
    "minimum": ("_minimum", "broadcast_minimum", np.minimum),
    "hypot": ("_hypot", "broadcast_hypot", np.hypot),
}

# key -> (NumPy reference, same-shape, broadcast and scalar operator names)
LOGIC = {
    "equal": (np.equal, "_equal", "broadcast_equal", "_equal_scalar"),
    "not_equal": (np.not_equal, "_not_equal", "broadcast_not_equal", "_not_equal_scalar"),
    "greater": (np.greater, "_greater", "broadcast_greater", "_greater_scalar"),
    "greater_equal": (np.greater_equal, "_greater_equal", "broadcast_greater_equal", "_greater_equal_scalar"),
    "lesser": (np.less, "_lesser", "broadcast_lesser", "_lesser_scalar"),
    "lesser_equal": (np.less_equal, "_lesser_equal", "broadcast_lesser_equal", "_lesser_equal_scalar"),
    "logical_and": (np.logical_and, "_logical_and", "broadcast_logical_and", "_logical_and_scalar"),
    "logical_or": (np.logical_or, "_logical_or", "broadcast_logical_or", "_logical_or_scalar"),
    "logical_xor": (np.logical_xor, "_logical_xor", "broadcast_logical_xor", "_logical_xor_scalar"),
}


def fn(name):
    return getattr(nd, name, None) or getattr(I, name)


def _signed(shape, rng):
    return rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)


def _samplers(key):
    """Inputs away from kinks and poles: positive bases for power, a/b not near an
    integer for mod, distinct values for maximum/minimum."""
    if key == "power":
        return [lambda s, rng: np.abs(_signed(s, rng)), _signed]
    if key == "mod":
        return [lambda s, rng: rng.choice([0.3, 1.3, 2.7, -0.6, -2.2], s),
                lambda s, rng: rng.choice([1.0, -1.0, 2.0], s)]
    return [_signed, _signed]


_BROADCAST = [[(2, 1, 4), (1, 3, 1)], [(3, 4), (4,)], [(2, 3), (1, 1)], [(1,), (2, 2)]]
# float16 has too few digits for these references' gradients (log of the base)
_NO_F16 = ("power", "mod", "hypot", "div")
_DT = {k: ("float32", "float64") if k in _NO_F16 else ("float16", "float32", "float64")
       for k in ARITH}

CASES = [opcheck.Case(ARITH[k][0], ARITH[k][2], [[(3, 4), (3, 4)]], sample=_samplers(k),
                      dtypes=_DT[k]) for k in sorted(ARITH)]
CASES += [opcheck.Case(ARITH[k][1], ARITH[k][2], _BROADCAST, sample=_samplers(k),
                       dtypes=_DT[k]) for k in sorted(ARITH)]


# name -> reference(x, s)
SCALAR = {
    "_plus_scalar": lambda x, s: x + s, "_minus_scalar": lambda x, s: x - s,
    "_rminus_scalar": lambda x, s: s - x, "_mul_scalar": lambda x, s: x * s,
    "_div_scalar": lambda x, s: x / s, "_rdiv_scalar": lambda x, s: s / x,
    "_mod_scalar": lambda x, s: _mod(x, s), "_rmod_scalar": lambda x, s: _mod(s, x),
    "_power_scalar": lambda x, s: np.power(x, s), "_rpower_scalar": lambda x, s: s ** x,
    "_maximum_scalar": np.maximum, "_minimum_scalar": np.minimum,
    "_hypot_scalar": np.hypot,
}


def _scalar_case(name):
    sample = (lambda s, rng: rng.choice([0.3, 1.3, 2.6, 4.1], s)) if "mod" in name else \
        opcheck.uniform(0.6, 2.2)
    return opcheck.Case(name, lambda x, scalar: SCALAR[name](x, scalar),
                        [[(3, 4)]], kwargs={"scalar": 1.7}, sample=sample,
                        dtypes=("float32", "float64"))


CASES += [_scalar_case(n) for n in sorted(SCALAR)]


test_binary = opcheck.cases_test(CASES)


@pytest.mark.parametrize("key", sorted(LOGIC))
def test_comparisons_and_logic(key):
    rs = np.random.RandomState(5)
    a = rs.randint(-2, 3, (3, 4)).astype(np.float32)
    b = rs.randint(-2, 3, (3, 4)).astype(np.float32)
    ref, same, bcast, scalar = LOGIC[key]
    for name, args, expect in [
            (same, (nd.array(a), nd.array(b)), ref(a, b)),
            (bcast, (nd.array(a), nd.array(b[:1])), ref(a, b[:1])),
            (scalar, (nd.array(a),), ref(a, np.float32(1)))]:
        kw = {"scalar": 1.0} if name.endswith("_scalar") else {}
        out = fn(name)(*args, **kw)
        assert out.dtype == np.float32
        assert out.asnumpy().tolist() == expect.astype(np.float32).tolist()
        # comparisons have a zero gradient
        xs = [nd.array(v.asnumpy()) for v in args]
        for v in xs:
            v.attach_grad()
        with mx.autograd.record():
            y = fn(name)(*xs, **kw) + xs[0]
        y.backward()
        assert (xs[0].grad.asnumpy() == 1).all()


def test_integer_rules_match_mxnet():
    # Values produced by MXNet 1.9.1 on the same inputs. The scalar is cast to the
    # array's dtype first (1.5 -> 1), division truncates, % takes the divisor's sign.
    i = nd.array([1, 2, 3, -4], dtype="int32")
    j = nd.array([2, 2, 2, 3], dtype="int32")
    cases = {
        "i+1": (i + 1, [2, 3, 4, -3]), "i+1.5": (i + 1.5, [2, 3, 4, -3]),
        "i*1.5": (i * 1.5, [1, 2, 3, -4]), "i-1.5": (i - 1.5, [0, 1, 2, -5]),
        "i/2": (i / 2, [0, 1, 1, -2]), "2/i": (2 / i, [2, 1, 0, 0]),
        "i/j": (i / j, [0, 1, 1, -1]), "i%3": (i % 3, [1, 2, 0, 2]),
        "i%-3": (i % -3, [-2, -1, 0, -1]), "3%i": (3 % i, [0, 1, 0, -1]),
        "i%j": (i % j, [1, 0, 1, 2]), "i**2": (i ** 2, [1, 4, 9, 16]),
        "i**0.5": (i ** 0.5, [1, 1, 1, 1]), "2**i": (2 ** i, [2, 4, 8, 0]),
        "i**-1": (i ** -1, [1, 0, 0, 0]), "i==2": (i == 2, [0, 1, 0, 0]),
        "i>j": (i > j, [0, 0, 1, 0]), "-i": (-i, [-1, -2, -3, 4]),
        "hypot": (I._hypot(i, j), [2, 2, 3, 5]),
        "max1.5": (I._maximum_scalar(i, scalar=1.5), [1, 2, 3, 1]),
        "or": (nd.broadcast_logical_or(i, j), [1, 1, 1, 1]),
    }
    for label, (out, expect) in cases.items():
        assert out.dtype == np.int32, label
        assert out.asnumpy().tolist() == expect, label


def test_is_int_false_gives_float64_on_integer_arrays():
    i = nd.array([1, 2, 3, -4], dtype="int32")
    out = I._plus_scalar(i, scalar=1.5, is_int=False)
    assert out.dtype == np.float64 and out.asnumpy().tolist() == [2.5, 3.5, 4.5, -2.5]
    out = I._div_scalar(i, scalar=1.5, is_int=False)
    assert out.dtype == np.float64
    assert_almost_equal(out.asnumpy(), np.array([1, 2, 3, -4]) / 1.5)
    out = I._greater_scalar(i, scalar=1.5, is_int=False)
    assert out.dtype == np.float64 and out.asnumpy().tolist() == [0, 1, 1, 0]
    # is_int only matters for integer arrays
    out = I._plus_scalar(nd.array([1.0]), scalar=1.5, is_int=True)
    assert out.dtype == np.float32 and out.asnumpy().tolist() == [2.5]


def test_scalar_cast_wraps_like_c():
    u = nd.ones((2,), dtype="uint8")
    assert (u + (-1)).asnumpy().tolist() == [0, 0]
    assert (u - 300).asnumpy().tolist() == [213, 213]
    assert (nd.ones((2,), dtype="int8") * 1000).asnumpy().tolist() == [-24, -24]
    h = nd.ones((2,), dtype="float16") + 1.5
    assert h.dtype == np.float16 and h.asnumpy().tolist() == [2.5, 2.5]
    big = nd.array([2 ** 40], dtype="int64") + 2 ** 40
    assert big.dtype == np.int64 and big.asnumpy().tolist() == [2 ** 41]


def test_float_mod_by_zero_is_zero():
    f = nd.array([1.5, -2.5, 0.5, -4])
    assert (f % 0).asnumpy().tolist() == [0, 0, 0, 0]
    assert nd.broadcast_mod(f, nd.zeros((4,))).asnumpy().tolist() == [0, 0, 0, 0]
    assert (3 % nd.array([0.0, 2.0])).asnumpy().tolist() == [0, 1]
    assert (f % -2).asnumpy().tolist() == [-0.5, -0.5, -1.5, 0]


def test_gradients_at_ties_and_edges():
    # Values and gradients from MXNet 1.9.1.
    def grads(f, *vals):
        xs = [nd.array(v) for v in vals]
        for x in xs:
            x.attach_grad()
        with mx.autograd.record():
            y = f(*xs)
        y.backward()
        return [x.grad.asnumpy().tolist() for x in xs]

    assert grads(nd.broadcast_maximum, [1, 2, 3], [3, 2, 1]) == [[0, 1, 1], [1, 0, 0]]
    assert grads(nd.broadcast_minimum, [1, 2, 3], [3, 2, 1]) == [[1, 1, 0], [0, 0, 1]]
    assert grads(lambda a: I._maximum_scalar(a, scalar=2), [1, 2, 3]) == [[0, 1, 1]]
    assert grads(lambda a: I._minimum_scalar(a, scalar=2), [1, 2, 3]) == [[1, 1, 0]]
    g = grads(nd.broadcast_mod, [5.5, -5.5, 3, 1], [2, 2, -2, 0])
    assert g == [[1, 1, 1, 1], [-2, 3, 2, -np.inf]]
    assert grads(lambda a: 5.5 % a, [2, -2, 3]) == [[-2, 3, -1]]
    g = grads(nd.broadcast_power, [0, 2, -2, 0], [2, 3, 2, 0])
    assert g[0][:3] == [0, 12, -4] and np.isnan(g[0][3])
    assert np.isnan(g[1][0]) and abs(g[1][1] - 8 * np.log(2)) < 1e-5 and g[1][3] == -np.inf


def test_ndarray_operators():
    rs = np.random.RandomState(6)
    an, bn = rs.uniform(0.5, 2, (3, 4)).astype(np.float32), \
        rs.uniform(0.5, 2, (3, 4)).astype(np.float32)
    a, b = nd.array(an), nd.array(bn)
    checks = [
        (a + b, an + bn), (a - 2, an - 2), (2 - a, 2 - an), (a * b, an * bn), (3 * a, 3 * an),
        (a / b, an / bn), (2 / a, 2 / an), (a ** 2, an ** 2), (2 ** a, 2 ** an),
        (a ** b, an ** bn), (-a, -an), (a % 0.7, np.mod(an, np.float32(0.7))),
        (a == b, (an == bn)), (a != b, an != bn), (a > 1, an > 1), (a >= b, an >= bn),
        (a < b, an < bn), (a <= 1, an <= 1), (a + bn, an + bn), (a + b[0:1], an + bn[0:1]),
    ]
    for got, expect in checks:
        assert got.dtype == np.float32
        assert_almost_equal(got.asnumpy(), expect.astype(np.float32), rtol=1e-6, atol=1e-6)


def test_inplace_operators_including_views():
    an = np.arange(12, dtype=np.float32).reshape(3, 4)
    a, b = nd.array(an), nd.ones((3, 4)) * 2
    alias = a
    a += b
    a -= 1
    a *= 3
    a /= 2
    assert a is alias
    assert_almost_equal(a.asnumpy(), (an + 2 - 1) * 3 / 2)
    # A row view writes through to its base array.
    base = nd.array(an)
    row = base[1]
    row += 10
    row2 = base[0:2]
    row2 *= nd.array([[2, 2, 2, 2]])
    expect = an.copy()
    expect[1] += 10
    expect[0:2] *= 2
    assert_almost_equal(base.asnumpy(), expect)
    i = nd.array([5, -7], dtype="int32")
    i /= 2
    assert i.dtype == np.int32 and i.asnumpy().tolist() == [2, -3]


def test_errors():
    with pytest.raises(MXNetError, match="shape"):
        nd.elemwise_add(nd.ones((2, 3)), nd.ones((3, 2)))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="shape"):
        nd.elemwise_mul(nd.ones((2, 3)), nd.ones((1, 3)))      # no broadcasting here
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="broadcast"):
        nd.broadcast_add(nd.ones((2, 3)), nd.ones((3, 2)))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="dtype"):
        nd.ones((2,), dtype="int32") + nd.ones((2,))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="dtype"):
        nd.elemwise_add(nd.ones((2,), dtype="float64"), nd.ones((2,)))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="foo"):
        I._plus_scalar(nd.ones((2,)), scalar=1, foo=2)
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="scalar"):
        I._plus_scalar(nd.ones((2,)), scalar="abc")
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError):
        nd.add_n()
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="shape"):
        nd.add_n(nd.ones((2,)), nd.ones((3,)))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError, match="dtype"):
        nd.add_n(nd.ones((2,)), nd.ones((2,), dtype="int32"))
        mx.nd.waitall()   # computing errors surface at the sync point
    with pytest.raises(MXNetError):
        nd.add_n(nd.ones((2,)), nd.ones((2,)), num_args=3)
        mx.nd.waitall()   # computing errors surface at the sync point


def test_shape_and_type_inference():
    add, badd = get_op("elemwise_add"), get_op("broadcast_add")
    p = add.params.parse("elemwise_add", {})
    assert add.infer_shape(p, [(2, 3), None])[1] == [(2, 3)]
    with pytest.raises(MXNetError):
        add.infer_shape(p, [(2, 3), (3, 2)])
    assert badd.infer_shape(p, [(2, 1, 4), (3, 1)])[1] == [(2, 3, 4)]
    with pytest.raises(MXNetError):
        add.infer_type(p, [np.dtype("int32"), np.dtype("float32")])
    sop = get_op("_plus_scalar")
    ps = sop.params.parse("_plus_scalar", {"scalar": "2.5", "is_int": "False"})
    assert sop.infer_type(ps, [np.dtype("int32")])[1] == [np.dtype("float64")]


def test_aliases():
    groups = [("elemwise_add", "_add", "_plus", "_Plus"),
              ("elemwise_sub", "_sub", "_minus", "_Minus"), ("elemwise_mul", "_mul", "_Mul"),
              ("elemwise_div", "_div", "_Div"), ("_power", "_Power"), ("_mod", "_Mod"),
              ("_maximum", "_Maximum"), ("_minimum", "_Minimum"), ("_hypot", "_Hypot"),
              ("broadcast_add", "broadcast_plus"), ("broadcast_sub", "broadcast_minus"),
              ("add_n", "ElementWiseSum"), ("_greater_equal", "_Greater_Equal"),
              ("_lesser_scalar", "_LesserScalar"), ("_rpower_scalar", "_RPowerScalar")]
    for g in groups:
        assert all(get_op(n) is get_op(g[0]) for n in g), g


@pytest.mark.parametrize("n", [1, 2, 4])
def test_add_n(n):
    rs = np.random.RandomState(n)
    xs = [rs.normal(size=(2, 3)) for _ in range(n)]
    check(Case("add_n", lambda *a: sum(a), inputs=xs))
    out = nd.ElementWiseSum(*[nd.array(x) for x in xs], num_args=n)
    assert_almost_equal(out.asnumpy(), sum(xs).astype(np.float32), rtol=1e-6)
    ints = nd.add_n(*[nd.array(x, dtype="int32") for x in xs])
    assert ints.dtype == np.int32


def test_add_n_same_input_twice():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.add_n(x, x, x * 2)
    y.backward()
    assert x.grad.asnumpy().tolist() == [4, 4]


def test_grad_add():
    out = I._grad_add(nd.ones((2,)), nd.ones((2,)))
    assert out.asnumpy().tolist() == [2, 2]


@pytest.mark.parametrize("case", fixture_cases_for(
    "broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div", "broadcast_power",
    "broadcast_maximum", "broadcast_minimum", "add_n"))
def test_mxnet_fixture(case):
    run_fixture_case(case)


def test_numeric_gradient_int_free_paths():
    # Mixed forms chained: gradients flow through scalar and broadcast ops together.
    a = np.random.RandomState(8).uniform(0.5, 1.5, (2, 3))
    b = np.random.RandomState(9).uniform(0.5, 1.5, (3,))
    check_numeric_gradient(lambda x, y: (x * 2 - y) / (y + 1) + x ** 2.5 - 3 / x,
                           [a, b], numeric_eps=1e-6, rtol=1e-5)


def test_integer_mod_has_zero_gradient():
    # MXNet defines integer mod's gradient as 0 (float mod keeps g and -g*floor(a/b))
    a = mx.sym.Variable("a")
    b = mx.sym.Variable("b")
    c = mx.sym.cast(a, dtype="int32") % mx.sym.cast(b, dtype="int32")
    ga, gb = nd.ones((3,)), nd.ones((3,))
    ex = c.bind(mx.cpu(), args={"a": nd.array([7, -9, 5]), "b": nd.array([3, 4, -2])},
                args_grad=[ga, gb])
    ex.forward(is_train=True)
    assert ex.outputs[0].asnumpy().tolist() == [1, 3, -1]
    ex.backward([nd.array([5, 6, 7])])
    assert ga.asnumpy().tolist() == [0, 0, 0] and gb.asnumpy().tolist() == [0, 0, 0]
    x = nd.array([7, -9, 5], dtype="int32")
    x.attach_grad()
    with mx.autograd.record():
        y = 3 % x + x % 3
    y.backward()
    assert x.grad.asnumpy().tolist() == [0, 0, 0]

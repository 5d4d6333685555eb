"""bfloat16 arrays through the operator runner (operator/bfloat16.py): every operator
case of the op-check suites that takes float16 also runs on bfloat16 inputs, forward
against its NumPy reference and backward against the same graph in float32; plus the
requests (out=, 'add'), auxiliary states and the places where ml_dtypes' own NumPy
loops are wrong."""
import importlib
import os
import sys

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNET_BFLOAT16_RECORD, bfloat16

import opcheck

# the op-check suites (file names beside this one; "nn/..." in the nn folder)
_SUITES = ["test_shape_ops", "nn/test_opcheck_nn", "test_elemwise_unary",
           "test_concat_split", "test_broadcast", "test_np_roll", "test_diag", "test_np_pad",
           "test_slicing", "test_elemwise_binary", "test_np_dot"]
# bfloat16 keeps 8 significant bits: one rounding of the result is 2^-9 relative, the
# inputs' rounding is in the reference already; a few roundings inside an operator
# (a sum, a chain of elementwise steps) stay well inside this
_FWD_TOL = 3e-2
_GRAD_TOL = 6e-2


def _load(suite):
    """A suite's module, imported under the name pytest gives it (its file name, with
    its folder on sys.path), so it is the module pytest runs."""
    folder, _, name = suite.rpartition("/")
    where = os.path.join(os.path.dirname(os.path.abspath(__file__)), folder)
    if where not in sys.path:
        sys.path.insert(0, where)
    return importlib.import_module(name)


def _cases():
    out = []
    for suite in _SUITES:
        for value in vars(_load(suite)).values():
            if isinstance(value, (list, tuple)) and value and \
                    all(isinstance(c, opcheck.Case) for c in value):
                out += [c for c in value if np.dtype(np.float16) in c.dtypes]
    return out


CASES = _cases()


def _inputs(case, shapes, dtype):
    rng = np.random.RandomState(abs(hash(case.name)) % (1 << 31))
    samplers = case.sample if isinstance(case.sample, (list, tuple)) else \
        [case.sample] * len(shapes)
    types = [case.input_dtypes.get(i, dtype) for i in range(len(shapes))]
    return [np.asarray(f(s, rng)).astype(t) for f, s, t in zip(samplers, shapes, types)], \
        types


def _bind(case, shapes, types, xs):
    names = [f"in{i}" for i in range(len(xs))]
    _, sym_fn = case.functions()
    sym = sym_fn(*[mx.sym.var(n) for n in names], **case.kwargs)
    reqs = {n: ("write" if case.grad else "null") for n in names}
    ex = sym.simple_bind(mx.cpu(), grad_req=reqs, type_dict=dict(zip(names, types)),
                         **dict(zip(names, shapes)))
    for n, x in zip(names, xs):
        ex.arg_dict[n][:] = x
    return ex, names


def test_there_are_cases():
    assert len(CASES) > 80


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_operator_cases_in_bfloat16(case):
    shapes = case.shapes[0]
    xs, types = _inputs(case, shapes, bfloat16)
    rkw = case.kwargs if case.ref_kwargs else {}
    want = [np.asarray(r, np.float64) for r in
            opcheck._listed(case.ref(*[x.astype(np.float64) for x in xs], **rkw))]
    out_type = np.dtype(case.out_dtype(bfloat16)) if case.out_dtype else bfloat16
    tol = _FWD_TOL * case.tol
    # imperative
    nd_fn, _ = case.functions()
    got = opcheck._listed(nd_fn(*[mx.nd.array(x, dtype=x.dtype) for x in xs], **case.kwargs))
    for g, w in zip(got, want):
        assert np.dtype(g.dtype) == out_type
        opcheck._close(g.asnumpy().astype(np.float64), w, tol, f"{case.name} imperative")
    # symbolic forward, and backward against the same graph in float32
    ex, names = _bind(case, shapes, types, xs)
    outs = ex.forward(is_train=True)
    for o, w in zip(outs, want):
        assert np.dtype(o.dtype) == out_type
        opcheck._close(o.asnumpy().astype(np.float64), w, tol, f"{case.name} symbolic")
    if not case.grad:
        return
    heads = [np.random.RandomState(7).uniform(-1, 1, o.shape) for o in outs]
    ex.backward([mx.nd.array(h, dtype=o.dtype) for h, o in zip(heads, outs)])
    f32_types = [np.dtype(np.float32) if t == bfloat16 else t for t in types]
    ex32, _ = _bind(case, shapes, f32_types, [x.astype(t) for x, t in zip(xs, f32_types)])
    outs32 = ex32.forward(is_train=True)
    ex32.backward([mx.nd.array(h.astype(np.float32).astype(bfloat16).astype(np.float32))
                   for h, o in zip(heads, outs32)])
    for n in names:
        g = ex.grad_dict.get(n)
        if g is None:
            continue
        assert np.dtype(g.dtype) == np.dtype(ex.arg_dict[n].dtype)
        ref = ex32.grad_dict[n].asnumpy().astype(np.float64)
        opcheck._close(g.asnumpy().astype(np.float64), ref, _GRAD_TOL * case.grad_tol,
                       f"{case.name} gradient of {n}")


def test_results_ml_dtypes_gets_wrong_are_computed_in_float32():
    # ml_dtypes' np.floor hands a bfloat16 array back unchanged; nan_to_num and a
    # Python-float constant inside an operator would leave the type
    x = np.array([0.1953125, -1.5, 2.75, 7.0], np.float32)
    b = mx.nd.array(x).astype("bfloat16")
    for name, ref in (("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc)):
        y = getattr(mx.nd, name)(b)
        assert y.dtype == bfloat16
        np.testing.assert_array_equal(y.asnumpy().astype(np.float32), ref(x))
    h = mx.nd.hard_sigmoid(b)
    assert h.dtype == bfloat16
    np.testing.assert_allclose(h.asnumpy().astype(np.float32),
                               np.clip(0.2 * x + 0.5, 0, 1), rtol=1e-2)


def test_out_argument_and_add_request():
    x = mx.nd.array([[0.5, -1.25], [2.0, 3.5]]).astype("bfloat16")
    out = mx.nd.zeros((2, 2), dtype="bfloat16")
    r = mx.nd.exp(x, out=out)
    assert r is out and out.dtype == bfloat16
    np.testing.assert_allclose(out.asnumpy().astype(np.float32),
                               np.exp(x.asnumpy().astype(np.float32)), rtol=8e-3)
    # grad_req='add' on a bfloat16 argument accumulates into the bfloat16 gradient
    a = mx.sym.var("a")
    ex = mx.sym.exp(a).simple_bind(mx.cpu(), a=(2, 2), type_dict={"a": "bfloat16"},
                                   grad_req="add")
    ex.arg_dict["a"][:] = x
    ex.grad_dict["a"][:] = 1.0
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((2, 2), dtype="bfloat16")])
    want = 1.0 + np.exp(x.asnumpy().astype(np.float32))
    assert ex.grad_dict["a"].dtype == bfloat16
    np.testing.assert_allclose(ex.grad_dict["a"].asnumpy().astype(np.float32), want,
                               rtol=1e-2)


def test_batchnorm_bfloat16_data_float32_statistics():
    """MXNet keeps BatchNorm's gamma, beta and moving statistics in float32 for
    bfloat16 data; training updates them as the float32 graph does."""
    rng = np.random.RandomState(3)
    x = rng.normal(1.0, 2.0, (4, 16, 5, 5)).astype(np.float32)
    xb = x.astype(bfloat16)
    data = mx.sym.var("data")
    bn = mx.sym.BatchNorm(data, name="bn", fix_gamma=False, momentum=0.5)
    _, out_types, aux_types = bn.infer_type(data="bfloat16")
    assert out_types == [bfloat16] and all(t == np.float32 for t in aux_types)
    results = {}
    for dt, xv in (("bfloat16", xb), ("float32", xb.astype(np.float32))):
        ex = bn.simple_bind(mx.cpu(), data=x.shape, type_dict={"data": dt}, grad_req="null")
        ex.arg_dict["data"][:] = xv
        ex.arg_dict["bn_gamma"][:] = 1.5
        ex.arg_dict["bn_beta"][:] = 0.25
        y = ex.forward(is_train=True)[0]
        assert y.dtype == (bfloat16 if dt == "bfloat16" else np.float32)
        results[dt] = (y.asnumpy().astype(np.float32),
                       ex.aux_dict["bn_moving_mean"].asnumpy(),
                       ex.aux_dict["bn_moving_var"].asnumpy())
        assert ex.aux_dict["bn_moving_mean"].dtype == np.float32
    for got, want in zip(results["bfloat16"], results["float32"]):
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)


def test_mxnet_spelling_of_the_type():
    """MXNet 1.9.1 named bfloat16 as a record of one uint16 field; pymxnet takes that
    spelling and reports ml_dtypes' type, whose values read as numbers."""
    a = mx.nd.array([1.5, -2.0]).astype(MXNET_BFLOAT16_RECORD)
    assert a.dtype == bfloat16
    assert mx.nd.array([1, 2], dtype=MXNET_BFLOAT16_RECORD).dtype == bfloat16
    np.testing.assert_array_equal(a.asnumpy().astype(np.float32), [1.5, -2.0])
    assert mx.base.dtype_name(MXNET_BFLOAT16_RECORD) == "bfloat16"


def test_without_ml_dtypes_everything_else_works(tmp_path):
    """ml_dtypes is a requirement, but a source checkout without it imports and runs;
    asking for bfloat16 then says what is missing."""
    import subprocess
    script = tmp_path / "no_ml_dtypes.py"
    script.write_text(
        "import builtins\n"
        "real = builtins.__import__\n"
        "def no_ml_dtypes(name, *args, **kwargs):\n"
        "    if name.split('.')[0] == 'ml_dtypes':\n"
        "        raise ImportError('hidden for the test')\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = no_ml_dtypes\n"
        "import mxnet as mx\n"
        "assert not mx.base.HAVE_BFLOAT16\n"
        "x = mx.nd.array([1.0, 2.0])\n"
        "assert (x + x).asnumpy().tolist() == [2.0, 4.0]\n"
        "try:\n"
        "    x.astype('bfloat16')\n"
        "except mx.base.MXNetError as err:\n"
        "    assert 'ml_dtypes' in str(err)\n"
        "else:\n"
        "    raise SystemExit('bfloat16 without ml_dtypes did not raise')\n")
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("make", [
    "mx.nd.array(np.array([0.5, -1.5, 2.75], dtype=bfloat16))",
    "mx.nd.load(FIXTURE)['bf16']",
    "mx.nd.array([0.5, -1.5, 2.75]).astype('bfloat16')",
])
def test_first_bfloat16_array_of_a_process_is_computed_right(make):
    """The runner's bfloat16 check is skipped until bfloat16 appears in the process
    (base.BFLOAT16_IN_USE); every way in must turn it on. A fresh process, so the flag
    starts off."""
    import subprocess
    fixture = os.path.join(os.path.dirname(__file__), "..", "fixtures", "bfloat16",
                           "mxnet191_bfloat16.params")
    code = ("import numpy as np, mxnet as mx\n"
            "from mxnet.base import bfloat16\n"
            f"FIXTURE = {os.path.abspath(fixture)!r}\n"
            "assert not mx.base.BFLOAT16_IN_USE\n"
            f"x = {make}\n"
            "want = np.floor(x.asnumpy().astype(np.float32))\n"
            "got = mx.nd.floor(x).asnumpy().astype(np.float32)\n"
            "assert (got == want).all(), (got, want)\n")
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    done = subprocess.run([sys.executable, "-c", code],
                          env=dict(os.environ, PYTHONPATH=os.path.abspath(src)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("hybrid", [False, True])
def test_float16_with_a_cpu_kernel_computes_in_float32(hybrid):
    """float16 calls that the CPU kernels (oneDNN) decline run in float32 and round
    once: a float16 convolution is the float32 one of the same values, rounded
    (NumPy's float16 matrix products have no BLAS: ~100x slower)."""
    rs = np.random.RandomState(4)
    x = rs.randn(4, 8, 12, 12).astype(np.float16)
    w = (rs.randn(16, 8, 3, 3) * 0.2).astype(np.float16)
    kw = dict(kernel=(3, 3), num_filter=16, pad=(1, 1), no_bias=True)
    want = mx.nd.Convolution(mx.nd.array(x, dtype="float32"),
                             mx.nd.array(w, dtype="float32"), **kw).asnumpy()
    if hybrid:
        d, wt = mx.sym.var("d"), mx.sym.var("w")
        ex = mx.sym.Convolution(d, wt, **kw).simple_bind(
            mx.cpu(), d=x.shape, w=w.shape, type_dict={"d": "float16", "w": "float16"})
        ex.arg_dict["d"][:] = x
        ex.arg_dict["w"][:] = w
        got = ex.forward()[0]
    else:
        got = mx.nd.Convolution(mx.nd.array(x, dtype="float16"),
                                mx.nd.array(w, dtype="float16"), **kw)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got.asnumpy(), want.astype(np.float16))


def test_which_calls_take_bfloat16_as_it_is():
    """Casts and data movement everywhere; same-shape add/sub/mul on the GPU only (CuPy
    rounds each element once); the rest, broadcasts included, through float32."""
    from mxnet.operator import bfloat16 as bf16
    from mxnet.operator.registry import get_op
    for name in ("elemwise_add", "elemwise_sub", "elemwise_mul"):
        assert bf16.native(get_op(name), None, False, None, on_gpu=True)
        assert not bf16.native(get_op(name), None, False, None, on_gpu=False)
    for name in ("broadcast_add", "elemwise_div", "exp", "FullyConnected"):
        assert not bf16.native(get_op(name), None, False, None, on_gpu=True)
    for name in ("Reshape", "transpose", "amp_cast"):
        assert bf16.native(get_op(name), None, False, None, on_gpu=False)


def test_a_hybridized_graph_is_not_widened_as_a_whole():
    """The cached graph's backward takes its bfloat16 head gradient as it is (its nodes
    choose their own route); its gradients equal the unhybridized network's."""
    from collections import Counter
    from mxnet import autograd, gluon
    from mxnet.operator import bfloat16 as bf16

    def grads(hybridize, monkey=None):
        mx.random.seed(3)
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Conv2D(4, 3, padding=1, in_channels=2), gluon.nn.Activation("relu"),
                gluon.nn.Flatten(), gluon.nn.Dense(5, in_units=4 * 36))
        net.initialize(mx.init.Xavier())
        net.cast(bfloat16)
        if hybridize:
            net.hybridize()
        x = mx.nd.array(np.random.RandomState(0).rand(3, 2, 6, 6)).astype(bfloat16)
        with autograd.record():
            y = net(x)
        y.backward(mx.nd.ones_like(y))
        return [p.grad().astype("float32").asnumpy() for p in net.collect_params().values()]

    seen = Counter()
    original = bf16.run_widened

    def counting(compute, op, *rest, **kw):
        seen[op.name] += 1
        return original(compute, op, *rest, **kw)

    bf16.run_widened = counting
    try:
        hybrid = grads(True)
    finally:
        bf16.run_widened = original
    assert seen["_CachedOp"] == 0
    for h, i in zip(hybrid, grads(False)):
        np.testing.assert_allclose(h, i, rtol=_GRAD_TOL, atol=_GRAD_TOL)

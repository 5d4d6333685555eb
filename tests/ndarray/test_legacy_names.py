"""MXNet 1.9.1's flat legacy spellings of namespaced operators (``mx.nd.linalg_gemm``
for ``mx.nd.linalg.gemm``), ``identity`` and ``sym.pow``: the same operators."""
import numpy as np
import pytest

import mxnet as mx

R = np.random.RandomState(0)
SPD = (lambda a: a @ a.T + 3 * np.eye(3))(R.randn(3, 3))
LOW = np.tril(R.rand(3, 3) + 1)
LINALG = {
    "linalg_det": [SPD], "linalg_extractdiag": [SPD], "linalg_extracttrian": [SPD], "linalg_gelqf": [R.randn(2, 3)],
    "linalg_gemm": [R.randn(2, 3), R.randn(3, 2), R.randn(2, 2)], "linalg_inverse": [SPD],
    "linalg_makediag": [R.randn(3)], "linalg_maketrian": [R.randn(6)], "linalg_potri": [LOW],
    "linalg_slogdet": [SPD], "linalg_sumlogdiag": [LOW], "linalg_syrk": [R.randn(2, 3)],
    "linalg_trmm": [LOW, R.randn(3, 2)], "linalg_trsm": [LOW, R.randn(3, 2)],
}


@pytest.mark.parametrize("flat_name", sorted(LINALG))
def test_flat_linalg_names_are_the_namespaced_operators(flat_name):
    leaf = flat_name[len("linalg_"):]
    arrays = [mx.nd.array(a, dtype="float64") for a in LINALG[flat_name]]
    flat = getattr(mx.nd, flat_name)(*arrays)
    spaced = getattr(mx.nd.linalg, leaf)(*arrays)
    flat, spaced = [flat] if not isinstance(flat, list) else flat, \
        [spaced] if not isinstance(spaced, list) else spaced
    for a, b in zip(flat, spaced):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    names = [f"a{i}" for i in range(len(arrays))]
    sym = getattr(mx.sym, flat_name)(*[mx.sym.var(n) for n in names])
    outs = sym.bind(mx.cpu(), dict(zip(names, arrays))).forward()
    for a, b in zip(outs, spaced):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-12)


def test_identity_copies_and_sym_pow():
    x = mx.nd.array([[1.0, -2.0], [3.5, 0.25]])
    y = mx.nd.identity(x)
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    y[:] = 0
    assert x.asnumpy()[0, 0] == 1.0                       # a copy, not a view
    s = mx.sym.identity(mx.sym.var("x"))
    np.testing.assert_array_equal(s.eval(x=x)[0].asnumpy(), x.asnumpy())
    a, b = mx.sym.var("a"), mx.sym.var("b")
    out = mx.sym.pow(a, b).eval(a=mx.nd.array([2.0, 3.0]), b=mx.nd.array([3.0, 0.5]))[0]
    np.testing.assert_allclose(out.asnumpy(), [8.0, np.sqrt(3.0)], rtol=1e-6)
    out = mx.sym.pow(a, 2).eval(a=mx.nd.array([2.0, -3.0]))[0]
    np.testing.assert_allclose(out.asnumpy(), [4.0, 9.0])


def test_free_functions_importable_from_the_modules_mxnet_defined_them_in():
    # GluonTS: from mxnet.ndarray.ndarray import maximum
    from mxnet.ndarray.ndarray import maximum, onehot_encode, concatenate
    from mxnet.symbol.symbol import Group, var, power
    a, b = mx.nd.array([1, 5]), mx.nd.array([3, 2])
    np.testing.assert_array_equal(maximum(a, b).asnumpy(), [3, 5])
    np.testing.assert_array_equal(concatenate([a, b]).asnumpy(), [1, 5, 3, 2])
    out = mx.nd.zeros((2, 3))
    onehot_encode(mx.nd.array([2, 0]), out)
    np.testing.assert_array_equal(out.asnumpy(), np.eye(3)[[2, 0]])
    x = var("x")
    y = power(x, 2)
    group = Group([x, y])
    assert group.list_outputs() == ["x"] + y.list_outputs()
    np.testing.assert_allclose(y.eval(x=mx.nd.array([3.0]))[0].asnumpy(), [9.0])
    with pytest.raises(ImportError):
        from mxnet.ndarray.ndarray import no_such_function  # noqa: F401

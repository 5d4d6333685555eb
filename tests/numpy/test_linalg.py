"""mx.np.linalg front ends (numpy/linalg.py) and mx.np.matmul against NumPy: every
norm order, eigh's UPLO and integer inputs, tensorsolve, zero-size solve/matmul."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import np as mnp
from mxnet.base import MXNetError

rs = np.random.RandomState(7)

NORMS = [((2, 3, 4), 1, (2, 1)), ((2, 3, 4), 2, (1, 2)), ((2, 3, 4), None, None),
         ((3,), None, None), ((3,), 0, None), ((2, 3), 2, 1), ((2, 3, 4), -1, 2),
         ((2, 3, 4), 4, 1), ((2, 3, 4), -3.2, 2), ((2, 3), -1, None),
         ((2, 3, 4), "inf", 1), ((2, 3, 4), "-inf", (1, 0)), ((2, 3), None, (0, 1)),
         ((2, 3, 4), "fro", (0, 2)), ((2, 0, 4), "fro", (0, 2)), ((2, 3, 4), "inf", (0, 2)),
         ((2, 3, 4), "-inf", (0, 2)), ((4, 4, 4, 4), -2, (0, 2)), ((2, 3, 4), "nuc", (0, 2)),
         ((2, 2), "nuc", None), ((2, 2), np.inf, None)]


@pytest.mark.parametrize("shape,ord_,axis", NORMS)
@pytest.mark.parametrize("keepdims", [False, True])
@mx.util.use_np
def test_norm_matches_numpy(shape, ord_, axis, keepdims):
    a = rs.uniform(-10, 10, shape)
    want = np.linalg.norm(a, {"inf": np.inf, "-inf": -np.inf}.get(ord_, ord_), axis,
                          keepdims)
    got = mnp.linalg.norm(mnp.array(a, dtype="float64"), ord_, axis, keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10)


@pytest.mark.parametrize("ord_,axis", [(2, (0, 1)), ("nuc", (0, 1)), (1, (1, 0)),
                                       (3, 1), ("fro", None)])
def test_norm_gradient_matches_numeric(ord_, axis):
    a = rs.uniform(-2, 2, (3, 4))
    x = mnp.array(a, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        out = mnp.linalg.norm(x, ord_, axis).sum()
    out.backward()
    num, eps = np.zeros_like(a), 1e-6
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += eps
        down[i] -= eps
        num[i] = (np.linalg.norm(up, ord_, axis).sum() -
                  np.linalg.norm(down, ord_, axis).sum()) / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-5, atol=1e-7)


# ('fro' over one axis is no bad order: MXNet 1.9.1 gives the 2-norm, see below)
@pytest.mark.parametrize("ord_,axis", [("nuc", 0), (2, (0, 1, 2))])
def test_norm_bad_orders(ord_, axis):
    with pytest.raises(ValueError):
        mnp.linalg.norm(mnp.ones((2, 3, 4)), ord_, axis)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_reads_the_requested_triangle(uplo):
    a = rs.uniform(-1, 1, (2, 4, 4))
    w, v = mnp.linalg.eigh(mnp.array(a, dtype="float64"), UPLO=uplo)
    w_np, v_np = np.linalg.eigh(a, UPLO=uplo)
    np.testing.assert_allclose(w.asnumpy(), w_np, atol=1e-10)
    np.testing.assert_allclose(np.abs(v.asnumpy()), np.abs(v_np), atol=1e-8)
    np.testing.assert_allclose(mnp.linalg.eigvalsh(mnp.array(a), UPLO=uplo).asnumpy(), w_np,
                               rtol=1e-4, atol=1e-5)


@mx.util.use_np
def test_eigh_integer_and_empty_inputs():
    a = np.diag([3, 1, 2]).astype(np.int32)
    w, v = mnp.linalg.eigh(mnp.array(a, dtype="int32"))
    assert w.dtype == v.dtype == np.float64
    np.testing.assert_allclose(w.asnumpy(), [1, 2, 3])
    w, v = mnp.linalg.eigh(mnp.ones((0, 3, 3)))
    assert w.shape == (0, 3) and v.shape == (0, 3, 3)


@pytest.mark.parametrize("a_shape,b_shape,axes", [((6, 2, 3), (6,), None),
                                                  ((2, 3, 6), (6,), (0, 1)),
                                                  ((3, 4, 2, 3, 2), (3, 4), None)])
def test_tensorsolve_and_its_gradient(a_shape, b_shape, axes):
    n = int(np.prod(b_shape))
    a_np = (rs.uniform(-1, 1, (n, n)) + 3 * np.eye(n))
    # a laid out so that, after moving axes to the end, it is the matrix above
    moved = [i for i in range(len(a_shape)) if axes is None or i not in axes] + \
        list(axes or [])
    a_np = a_np.reshape([a_shape[i] for i in moved]).transpose(np.argsort(moved))
    b_np = rs.uniform(-1, 1, b_shape)
    a, b = mnp.array(a_np, dtype="float64"), mnp.array(b_np, dtype="float64")
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        x = mnp.linalg.tensorsolve(a, b, axes)
    x.backward()
    want = np.linalg.tensorsolve(a_np, b_np, axes)
    np.testing.assert_allclose(x.asnumpy(), want, rtol=1e-8)
    # d(sum x)/db = the solve of a^T with ones: check through the matrix form
    am = np.moveaxis(a_np, list(axes), list(range(a_np.ndim - len(axes), a_np.ndim))) \
        if axes else a_np
    am = am.reshape(n, n)
    gb = np.linalg.solve(am.T, np.ones(n))
    np.testing.assert_allclose(b.grad.asnumpy().ravel(), gb, rtol=1e-8)
    assert a.grad.shape == a_shape


@mx.util.use_np
def test_zero_size_solve_and_matmul():
    x = mnp.linalg.solve(mnp.ones((2, 0, 0)), mnp.ones((2, 0, 3)))
    assert x.shape == (2, 0, 3)
    assert mnp.matmul(mnp.ones((2, 3, 0)), mnp.ones((0, 4))).shape == (2, 3, 4)
    assert mnp.matmul(mnp.ones((0, 3, 2)), mnp.ones((2, 4))).shape == (0, 3, 4)


@pytest.mark.parametrize("sa,sb", [((1,), (2,)), ((2, 1), (2,)), ((1, 2), (3, 1)),
                                   ((2, 2, 1), (3, 1, 2))])
def test_matmul_bad_shapes_raise_mxnet_error(sa, sb):
    with pytest.raises(MXNetError):
        mnp.matmul(mnp.ones(sa), mnp.ones(sb))


def test_solve_reads_b_with_one_axis_fewer_as_vectors():
    # MXNet 1.9.1 (like NumPy 1.x): b of shape (..., M) against a of (..., M, M) is a
    # stack of vectors
    a = rs.randn(2, 3, 3).astype(np.float32) + 3 * np.eye(3, dtype=np.float32)
    b = rs.randn(2, 3).astype(np.float32)
    got = mnp.linalg.solve(mnp.array(a), mnp.array(b))
    want = np.linalg.solve(a, b[..., None])[..., 0]
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-5)
    assert mnp.linalg.solve(mnp.array(a), mnp.ones((2, 3, 2))).shape == (2, 3, 2)


def test_fro_over_one_axis_is_the_two_norm():
    # MXNet 1.9.1 takes ord='fro' of a vector as its 2-norm (NumPy raises)
    m = np.array([[1., -2., 3.], [-4., 5., -6.]], dtype=np.float32)
    np.testing.assert_allclose(mnp.linalg.norm(mnp.array(m[0]), "fro").item(),
                               np.linalg.norm(m[0]), rtol=1e-6)
    np.testing.assert_allclose(mnp.linalg.norm(mnp.array(m), "fro", axis=1).asnumpy(),
                               np.linalg.norm(m, axis=1), rtol=1e-6)
    with pytest.raises(ValueError):
        mnp.linalg.norm(mnp.array(m[0]), "nuc")

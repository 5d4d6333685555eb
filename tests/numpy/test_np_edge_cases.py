"""mx.np edge cases MXNet 1.9.1 defines (its test_numpy_op.py checks them): empty and
zero-dim arrays, dtype rules and error types, against NumPy or a numeric gradient."""
import numpy as onp
import pytest

import mxnet as mx
from mxnet import autograd, np, npx
from mxnet.base import MXNetError
from mxnet.util import use_np


@pytest.fixture(autouse=True)
def _numpy_semantics():
    """Zero-size and zero-dim arrays need MXNet's NumPy shape semantics."""
    with mx.util.np_shape(True), mx.util.np_array(True):
        yield


@pytest.mark.parametrize("args", [(4,), (4, 3), (4, 0), (0, 3), (0, 0, -2), (7, 3, -3),
                                  (4, None, 1)])
@pytest.mark.parametrize("dtype", ["int32", "float16", None])
def test_eye_matches_numpy(args, dtype):
    got = np.eye(*args, dtype=dtype)
    want = onp.eye(*args, dtype=onp.float32 if dtype is None else dtype)
    assert got.shape == want.shape and got.dtype == want.dtype
    onp.testing.assert_array_equal(got.asnumpy(), want)


@pytest.mark.parametrize("args", [(-1,), (-2, None), (1, -1)])
def test_eye_negative_sizes_raise(args):
    with pytest.raises(MXNetError):
        np.eye(*args)


@pytest.mark.parametrize("shape, scale", [(1, 0), (0, 1), (np.array(1), np.array(-1.0)),
                                          (np.array(0), np.array(1))])
def test_gamma_non_positive_parameters_raise_value_error(shape, scale):
    with pytest.raises(ValueError):
        np.random.gamma(shape, scale).asnumpy()


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [0, -1, None])
def test_arg_extreme_of_zero_dim(fn, axis):
    a = np.array(3.5)
    got = getattr(np, fn)(a, axis=axis)
    want = getattr(onp, fn)(a.asnumpy(), axis=axis)
    assert got.shape == () and got.dtype == onp.int64 and int(got) == int(want)


def test_arg_extreme_of_zero_dim_bad_axis_raises():
    with pytest.raises(MXNetError):
        np.argmax(np.array(1.0), 1).wait_to_read()


@pytest.mark.parametrize("src, dst, want", [((5,), (3, 4, -2), (3, 4, 5)),
                                             ((1, 0), (2, -2, -2), (2, 1, 0)),
                                             ((3, 4), (1, 0, -2, 4), (1, 0, 3, 4))])
def test_broadcast_to_keeps_minus_two_axes(src, dst, want):
    x = onp.random.RandomState(0).uniform(size=src).astype(onp.float32)
    got = np.broadcast_to(np.array(x), dst)
    onp.testing.assert_array_equal(got.asnumpy(), onp.broadcast_to(x, want))


def test_broadcast_to_minus_two_without_source_axis_raises():
    with pytest.raises(MXNetError):
        np.broadcast_to(np.ones((3,)), (-2, 2, 3))


@pytest.mark.parametrize("itype", ["int8", "int32"])
def test_integer_mod_gradient_is_zero(itype):
    # MXNet differentiates mod only for floating point operands
    a = np.array([7, 8, -5], dtype=itype)
    b = np.array([3, 3, 2], dtype=itype)
    for x in (a, b):
        x.attach_grad()
    with autograd.record():
        y = np.mod(a, b) + np.mod(a, 2)
    y.backward()
    assert not a.grad.asnumpy().any() and not b.grad.asnumpy().any()


def test_float_mod_gradient_matches_numeric():
    a = np.array([7.3, 8.1, 5.5], dtype="float64")
    b = np.array([3.0, 2.5, 2.0], dtype="float64")
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = np.mod(a, b)
    y.backward()
    eps, an, bn = 1e-6, a.asnumpy(), b.asnumpy()
    onp.testing.assert_allclose(a.grad.asnumpy(),
                                (onp.mod(an + eps, bn) - onp.mod(an - eps, bn)) / (2 * eps),
                                rtol=1e-5)
    onp.testing.assert_allclose(b.grad.asnumpy(),
                                (onp.mod(an, bn + eps) - onp.mod(an, bn - eps)) / (2 * eps),
                                rtol=1e-5)


def test_delete_skips_out_of_range_index_array_entries():
    a = np.arange(5)
    got = np.delete(a, np.array([-1, 0, 7], dtype="int64"))
    onp.testing.assert_array_equal(got.asnumpy(), onp.delete(onp.arange(5.0), [0]))
    onp.testing.assert_array_equal(np.delete(a, -1).asnumpy(), onp.arange(4.0))
    with pytest.raises(IndexError):
        np.delete(a, 7)


@pytest.mark.parametrize("itype", ["float16", "float32"])
@pytest.mark.parametrize("fn", ["sum", "mean"])
def test_float16_reduction_accumulates_wide(itype, fn):
    rng = onp.random.RandomState(1)
    x = rng.uniform(-1, 1, (4, 300)).astype(itype)
    got = getattr(np, fn)(np.array(x), axis=1)
    want = getattr(onp, fn)(x.astype(onp.float64), axis=1).astype(itype)
    assert got.dtype == itype
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-3, atol=2e-4)


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32"])
def test_reduction_dtype_casts_the_result_and_keeps_the_gradient(dtype):
    x = np.array(onp.random.RandomState(2).uniform(-1, 1, (3, 4)).astype(onp.float32))
    x.attach_grad()
    with autograd.record():
        y = np.mean(x, axis=1, dtype=dtype)
    y.backward()
    assert y.dtype == dtype
    want = x.asnumpy().astype(onp.float64).mean(axis=1).astype(dtype)
    onp.testing.assert_allclose(y.asnumpy(), want, rtol=1e-3)
    onp.testing.assert_allclose(x.grad.asnumpy(), onp.full((3, 4), 0.25), rtol=1e-6)


@pytest.mark.parametrize("itype", ["int8", "int32", "bool"])
@pytest.mark.parametrize("ftype", ["float16", "float32", "float64"])
def test_integer_over_float_array_divides_in_the_float_type(itype, ftype):
    i = np.array([3, 4, 5]).astype(itype)
    f = np.array([2.0, 8.0, 4.0], dtype=ftype)
    for got, want in ((i / f, i.asnumpy() / f.asnumpy()), (f / i, f.asnumpy() / i.asnumpy())):
        assert got.dtype == ftype
        onp.testing.assert_allclose(got.asnumpy(), want.astype(ftype), rtol=1e-3)


def test_nonzero_treats_zero_dim_as_one_dim():
    assert npx.nonzero(np.array(3.0)).shape == (1, 1)
    assert npx.nonzero(np.array(0.0)).shape == (0, 1)
    idx, = np.nonzero(np.array(2.0))
    onp.testing.assert_array_equal(idx.asnumpy(), [0])


@pytest.mark.parametrize("fn", ["isnan", "isinf", "isfinite", "isposinf", "isneginf"])
def test_predicates_refuse_a_non_bool_out(fn):
    x = np.array([1.0, onp.inf, onp.nan])
    with pytest.raises(TypeError):
        getattr(np, fn)(x, out=np.empty_like(x))
    out = np.empty((3,), dtype=bool)
    getattr(np, fn)(x, out=out)
    onp.testing.assert_array_equal(out.asnumpy(), getattr(onp, fn)(x.asnumpy()))


@use_np
def test_nan_to_num_copy_false_in_a_hybridized_block_gives_a_new_array():
    from mxnet.gluon import HybridBlock

    class Net(HybridBlock):
        def hybrid_forward(self, F, a):
            return F.np.nan_to_num(a, False)

    net = Net()
    net.hybridize()
    x = np.array([onp.inf, 1.0, onp.nan])
    x.attach_grad()
    with autograd.record():
        y = net(x)
    y.backward()
    onp.testing.assert_array_equal(y.asnumpy(),
                                  onp.nan_to_num(onp.array([onp.inf, 1.0, onp.nan], "float32")))
    onp.testing.assert_array_equal(x.grad.asnumpy(), [0.0, 1.0, 0.0])


def test_softmax_of_zero_size_arrays():
    for shape in [(3, 0, 4), (0, 0)]:
        x = np.random.uniform(size=shape)
        x.attach_grad()
        for fn in (npx.softmax, npx.log_softmax):
            with autograd.record():
                y = fn(x, axis=-1)
            y.backward()
            assert y.shape == shape and x.grad.shape == shape

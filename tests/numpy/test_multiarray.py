"""mx.np arrays against NumPy itself: values, shapes (zero-dim included), dtypes as
MXNet 1.9.1's NumPy mode gives them (facts checked with the real MXNet 1.9.1)."""
import numpy as onp
import pytest

import mxnet as mx
from mxnet import autograd, np


def _rand(*shape):
    return onp.random.uniform(-2, 2, shape).astype(onp.float32)


def test_creation_defaults_to_float32_like_mxnet():
    assert np.array([1, 2, 3]).dtype == onp.float32            # lists: float32
    assert np.array(onp.array([1, 2])).dtype == onp.int64       # NumPy arrays keep dtype
    assert np.array(onp.array([1.0])).dtype == onp.float64
    assert np.arange(5).dtype == onp.float32
    assert np.zeros((2,), dtype=int).dtype == onp.int64
    assert np.full((2,), 3).dtype == onp.float32
    assert np.array(3.0).shape == ()
    onp.testing.assert_allclose(np.linspace(0, 1, 5).asnumpy(), onp.linspace(0, 1, 5))
    onp.testing.assert_allclose(np.eye(3, k=1).asnumpy(), onp.eye(3, k=1))
    assert isinstance(np.ones((2, 3)), np.ndarray)


def test_repr_matches_mxnet():
    assert repr(np.array([1, 2, 3])) == "array([1., 2., 3.])"
    assert repr(np.array([1, 2], dtype="int32")) == "array([1, 2], dtype=int32)"
    assert repr(np.array(3.0)) == "array(3.)"


def test_ndarray_class_public_module_and_pickle():
    # MXNet 1.9.1: repr(type(mx.np.ones(1))) == "<class 'mxnet.numpy.ndarray'>"
    import pickle
    assert repr(type(np.ones(1))) == "<class 'mxnet.numpy.ndarray'>"
    a = np.arange(4).reshape(2, 2)
    b = pickle.loads(pickle.dumps(a))
    assert type(b) is np.ndarray
    onp.testing.assert_array_equal(b.asnumpy(), a.asnumpy())


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "true_divide", "maximum",
                                  "minimum", "power"])
def test_binary_ufuncs_broadcast_like_numpy(name):
    a, b = onp.abs(_rand(3, 1, 4)) + 0.1, onp.abs(_rand(2, 1)) + 0.5
    got = getattr(np, name)(np.array(a), np.array(b))
    onp.testing.assert_allclose(got.asnumpy(), getattr(onp, name)(a, b), rtol=1e-5)
    assert got.shape == (3, 2, 4)


def test_dtype_rules():
    i = np.array([1, 2, 3], dtype="int32")
    assert (i / 2).dtype == onp.float32              # true division of ints
    assert (i * 2).dtype == onp.int32                # scalar keeps the dtype
    assert (i + 1.5).dtype == onp.int32
    assert (i > 1).dtype == onp.bool_
    assert np.sum(i).dtype == onp.int32
    assert np.mean(i).dtype == onp.float32
    assert (i + np.ones(3)).dtype == onp.float32     # int with float: the float type


@pytest.mark.parametrize("fn,kw", [("sum", {}), ("sum", {"axis": 1}),
                                   ("mean", {"axis": (0, 2), "keepdims": True}),
                                   ("max", {"axis": -1}), ("min", {}), ("prod", {"axis": 0}),
                                   ("std", {"axis": 1}), ("var", {})])
def test_reductions_shapes_and_values(fn, kw):
    a = _rand(2, 3, 4)
    got = getattr(np, fn)(np.array(a), **kw)
    want = getattr(onp, fn)(a, **kw)
    assert got.shape == onp.shape(want)
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-5)


def test_zero_dim_results_and_scalar_conversion():
    a = np.array([1, 2, 3])
    s = a.sum()
    assert s.shape == () and float(s) == 6.0 and s.item() == 6.0
    assert a[0].shape == () and float(a[0]) == 1.0
    assert np.argmax(np.array([[1, 5], [7, 2]]), axis=1).dtype == onp.int64


def test_indexing_like_numpy():
    host = _rand(4, 5)
    a = np.array(host)
    for key in [1, (1, 2), slice(1, 3), (slice(None), 2), (Ellipsis, 1), [0, 2]]:
        onp.testing.assert_array_equal(a[key].asnumpy(), host[key])
        assert a[key].shape == host[key].shape
    mask = a > 0
    onp.testing.assert_array_equal(a[mask].asnumpy(), host[host > 0])
    a[mask] = 0
    host[host > 0] = 0
    onp.testing.assert_array_equal(a.asnumpy(), host)


def test_manipulation():
    host = _rand(2, 3, 4)
    a = np.array(host)
    cases = [(np.transpose(a), onp.transpose(host)), (a.T, host.T),
             (np.reshape(a, (4, -1)), host.reshape(4, -1)),
             (np.swapaxes(a, 0, 2), onp.swapaxes(host, 0, 2)),
             (np.moveaxis(a, 0, -1), onp.moveaxis(host, 0, -1)),
             (np.expand_dims(a, 1), onp.expand_dims(host, 1)),
             (np.concatenate([a, a], axis=1), onp.concatenate([host, host], axis=1)),
             (np.stack([a, a], axis=-1), onp.stack([host, host], axis=-1)),
             (np.flip(a, 1), onp.flip(host, 1)), (np.roll(a, 2, axis=2), onp.roll(host, 2, 2)),
             (np.tile(a, (1, 2, 1)), onp.tile(host, (1, 2, 1))),
             (np.repeat(a, 2, axis=0), onp.repeat(host, 2, axis=0)),
             (np.broadcast_to(np.array(host[0]), (5, 3, 4)), onp.broadcast_to(host[0], (5, 3, 4)))]
    for got, want in cases:
        onp.testing.assert_allclose(got.asnumpy(), want)
    for got, want in zip(np.split(a, 3, axis=1), onp.split(host, 3, axis=1)):
        onp.testing.assert_allclose(got.asnumpy(), want)


def test_products():
    a, b = _rand(3, 4), _rand(4, 5)
    onp.testing.assert_allclose(np.dot(np.array(a), np.array(b)).asnumpy(), a @ b, rtol=1e-5)
    c, d = _rand(2, 3, 4), _rand(4, 2)
    onp.testing.assert_allclose(np.matmul(np.array(c), np.array(d)).asnumpy(), c @ d,
                                rtol=1e-5)
    onp.testing.assert_allclose((np.array(c) @ np.array(d)).asnumpy(), c @ d, rtol=1e-5)
    onp.testing.assert_allclose(np.tensordot(np.array(c), np.array(d), 1).asnumpy(),
                                onp.tensordot(c, d, 1), rtol=1e-5)
    v = _rand(4)
    onp.testing.assert_allclose(np.outer(np.array(v), np.array(v)).asnumpy(), onp.outer(v, v),
                                rtol=1e-5)


def test_where_clip_cumsum_unique():
    host = _rand(6)
    a = np.array(host)
    onp.testing.assert_allclose(np.where(a > 0, a, 0).asnumpy(), onp.where(host > 0, host, 0))
    onp.testing.assert_allclose(np.clip(a, -1, 1).asnumpy(), onp.clip(host, -1, 1))
    onp.testing.assert_allclose(np.cumsum(a).asnumpy(), onp.cumsum(host), rtol=1e-5)
    onp.testing.assert_array_equal(np.unique(np.array([3, 1, 1])).asnumpy(), [1, 3])


def test_autograd_on_np_arrays():
    x = np.array(_rand(2, 3))
    x.attach_grad()
    with autograd.record():
        y = (np.exp(x) * x).sum()
    y.backward()
    h = x.asnumpy()
    onp.testing.assert_allclose(x.grad.asnumpy(), onp.exp(h) * (1 + h), rtol=1e-5)
    assert isinstance(x.grad, np.ndarray) and y.shape == ()


def test_random_seeded_and_shaped():
    np.random.seed(3)
    a = np.random.normal(0, 1, (1000,))
    np.random.seed(3)
    b = np.random.normal(0, 1, (1000,))
    onp.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert abs(float(a.mean())) < 0.15 and 0.85 < float(a.std()) < 1.15
    r = np.random.randint(0, 10, (200,))
    assert r.dtype == onp.int64 and 0 <= int(r.min()) and int(r.max()) < 10
    c = np.random.choice(5, 3, replace=False).asnumpy()
    assert len(set(c.tolist())) == 3
    u = np.random.uniform(size=(2, 2))
    assert u.shape == (2, 2) and u.dtype == onp.float32


def test_linalg():
    m = _rand(3, 3) + 3 * onp.eye(3, dtype=onp.float32)
    onp.testing.assert_allclose(np.linalg.inv(np.array(m)).asnumpy(), onp.linalg.inv(m),
                                rtol=1e-4, atol=1e-5)
    onp.testing.assert_allclose(float(np.linalg.det(np.array(m))), onp.linalg.det(m),
                                rtol=1e-4)
    v = _rand(5)
    onp.testing.assert_allclose(float(np.linalg.norm(np.array(v))), onp.linalg.norm(v),
                                rtol=1e-5)


def test_missing_names_say_so():
    assert float(np.einsum("ii", np.eye(2))) == 2.0       # einsum itself is implemented
    with pytest.raises(NotImplementedError, match="mx.np.fft"):
        np.fft
    assert not hasattr(np, "not_a_numpy_name")


def test_bad_input_is_an_mxnet_error():
    with pytest.raises(mx.MXNetError, match="reshape"):
        np.ones((2, 3)).reshape(4, 2)
    with pytest.raises(mx.MXNetError):
        np.array(None)
    with pytest.raises(mx.MXNetError, match="broadcast"):
        np.broadcast_to(np.ones((3,)), (2, 4))


def test_save_load_round_trip(tmp_path):
    path = str(tmp_path / "a.npz")
    a, b = np.array(_rand(2, 2)), np.arange(3)
    mx.npx.savez(path, a=a, b=b)
    got = mx.npx.load(path)
    assert isinstance(got["a"], np.ndarray)
    onp.testing.assert_array_equal(got["a"].asnumpy(), a.asnumpy())
    onp.testing.assert_array_equal(got["b"].asnumpy(), b.asnumpy())


def test_np_reshape_operator_under_autograd():
    """``_np_reshape`` (mx.np.reshape while recording) reaches shape () and back."""
    x = np.array([[3.0]])
    x.attach_grad()
    with autograd.record():
        y = mx.nd._internal._np_reshape(x, newshape=()) * 2
    y.backward()
    assert y.shape == () and float(y) == 6.0
    onp.testing.assert_array_equal(x.grad.asnumpy(), [[2.0]])


def test_float_int_of_multi_element_array_raise_type_error():
    # NumPy and MXNet 1.9.1 both raise TypeError ("only size-1 arrays ..."), which
    # math.isfinite-based callers (matplotlib's contour/plot unit checks) rely on
    import math
    a = np.ones((3,))
    for conv in (float, int, math.isfinite):
        with pytest.raises(TypeError):
            conv(a)
        with pytest.raises(TypeError):
            conv(onp.ones((3,)))
    assert float(np.array([2.5])) == 2.5 and int(np.ones((1, 1)) * 3.7) == 3


def test_python_bool_index_is_a_zero_dim_mask():
    # NumPy's rule, which MXNet 1.9.1 follows: True adds a length-1 axis, False a
    # length-0 one (pymxnet used to read True as the integer 1)
    x = onp.arange(6, dtype=onp.float32).reshape(2, 3)
    a = np.array(x)
    for key in (True, False, (Ellipsis, True), (None, True, 0)):
        want = x[key]
        got = a[key]
        assert got.shape == want.shape
        onp.testing.assert_array_equal(got.asnumpy(), want)
    assert np.array(2.0)[True].shape == (1,)
    a.attach_grad()
    with autograd.record():
        y = (a[True] * 2).sum()
    y.backward()
    onp.testing.assert_array_equal(a.grad.asnumpy(), onp.full((2, 3), 2.0))


def test_creation_dtypes_and_orders_as_mxnet_gives_them():
    # values from MXNet 1.9.1: a Python bool fills a bool array, an mx array fill value
    # keeps its dtype, order='F' is refused, linspace's step is a Python float
    assert np.full((2,), True).dtype == onp.bool_
    assert np.full((2,), 3).dtype == onp.float32
    assert np.full((2,), np.array(3, dtype="int32")).dtype == onp.int32
    assert np.full((2,), True, dtype="float32").dtype == onp.float32
    for fn in (lambda: np.zeros(2, order="F"), lambda: np.ones(2, order="F"),
               lambda: np.full(2, 1, order="F"), lambda: np.empty(2, order="F"),
               lambda: np.zeros_like(np.ones(1), order="F"),
               lambda: np.ones_like(np.ones(1), order="F"),
               lambda: np.full_like(np.ones(1), 2, order="F"),
               lambda: np.empty_like(np.ones(1), order="F")):
        with pytest.raises(NotImplementedError):
            fn()
    values, step = np.linspace(0, 1, 5, retstep=True)
    assert type(step) is float and step == 0.25


def test_reshape_order_a_reads_c_order_and_the_method_takes_only_c():
    x = np.arange(12)
    # MXNet 1.9.1: np.reshape takes order 'A' (an mx.np array is C-contiguous), the
    # ndarray.reshape method raises NotImplementedError for anything but 'C'
    onp.testing.assert_array_equal(np.reshape(x, (3, 4), order="A").asnumpy(),
                                   onp.arange(12).reshape(3, 4))
    with pytest.raises(NotImplementedError):
        x.reshape((3, 4), order="A")
    with pytest.raises(NotImplementedError):
        np.reshape(x, (3, 4), order="F")


def test_repr_of_empty_arrays_round_and_astype_errors():
    # reprs from MXNet 1.9.1: an empty array shows its shape (unless 1-d) and its dtype
    # (bool included, float32 left out)
    with mx.util.np_shape(True):
        assert repr(np.zeros((0, 2))) == "array([], shape=(0, 2))"
        assert repr(np.zeros((0,))) == "array([])"
        assert repr(np.zeros((0, 2), dtype="int32")) == "array([], shape=(0, 2), dtype=int32)"
        assert repr(np.zeros((2, 0, 3), dtype="bool")) == \
            "array([], shape=(2, 0, 3), dtype=bool)"
        assert repr(np.zeros((0,), dtype="bool")) == "array([], dtype=bool)"
    assert repr(np.array([True, False], dtype="bool")) == "array([ True, False])"
    # MXNet 1.9.1: round() of an mx.np array is mx.np.round, an array
    r = round(np.array([2.567, 1.2]), 1)
    assert isinstance(r, np.ndarray)
    onp.testing.assert_allclose(r.asnumpy(), [2.6, 1.2], rtol=1e-6)
    assert round(np.array(2.567)).item() == 3.0
    with pytest.raises(TypeError):
        np.array([1.0]).astype("foo")


def test_bool_arrays_with_scalars_compute_in_int64():
    # results from MXNet 1.9.1: a bool array meets a scalar as int64 (the scalar read as
    # an integer), comparisons stay bool, max/min of bools are bools, -b is int64
    b = np.array([True, False, True], dtype=bool)
    cases = [(lambda: b + 1, [2, 1, 2]), (lambda: 1 + b, [2, 1, 2]),
             (lambda: b - 1, [0, -1, 0]), (lambda: 1 - b, [0, 1, 0]),
             (lambda: b * 2, [2, 0, 2]), (lambda: b % 2, [1, 0, 1]),
             (lambda: b ** 2, [1, 0, 1]), (lambda: 2 ** b, [2, 1, 2]),
             (lambda: b + True, [2, 1, 2]), (lambda: np.add(b, 1), [2, 1, 2]),
             (lambda: np.maximum(b, 1), [1, 1, 1]), (lambda: -b, [-1, 0, -1])]
    for fn, want in cases:
        got = fn()
        assert got.dtype == onp.int64 and got.tolist() == want
    assert (b > 0).dtype == onp.bool_ and (b == 1).tolist() == [True, False, True]
    assert (b / 2).dtype == onp.float32
    assert (b + b).dtype == onp.bool_
    for fn, want in ((np.max, True), (np.min, False)):
        got = fn(b)
        assert got.dtype == onp.bool_ and got.item() is want
    assert np.max(b.reshape(3, 1), axis=1).dtype == onp.bool_


def test_bitwise_augmented_assignment_is_in_place():
    # MXNet 1.9.1 writes x &= y into x itself: an alias sees the change
    x = np.array([12, 10], dtype="int32")
    alias = x
    x &= 6
    assert alias.tolist() == [4, 2]
    x ^= np.array([1, 1], dtype="int32")
    assert alias.tolist() == [5, 3]
    m = np.array([True, False, True], dtype=bool)
    alias = m
    m |= np.array([False, True, False], dtype=bool)
    assert alias.tolist() == [True, True, True]

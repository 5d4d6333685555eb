"""mx.np behaviours checked against NumPy itself (and numeric gradients): basic-index
views, shares_memory, boolean assignment, zero-size gradients, einsum on a diagonal,
NumPy's result containers, dispatch lists, npx front ends."""
import numpy as onp
import pytest

import mxnet as mx
from mxnet import autograd, np, npx
from mxnet.numpy_dispatch_protocol import _NUMPY_ARRAY_FUNCTION_LIST, _NUMPY_ARRAY_UFUNC_LIST


@pytest.fixture(autouse=True)
def np_mode():
    prev_shape, prev_array = mx.util.is_np_shape(), mx.util.is_np_array()
    npx.set_np()
    yield
    mx.util.set_np(shape=prev_shape, array=prev_array)


def _numeric_grad(f, x, eps=1e-4):
    g = onp.zeros_like(x)
    for i in onp.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


@pytest.mark.parametrize("key", [0, -1, (1, 2), (0, 0, slice(1, 3)), (1, Ellipsis),
                                 (0, None, 1), (slice(0, 0),), (), (1, 2, 3)])
def test_contiguous_basic_index_is_a_view_like_numpy(key):
    host = onp.arange(2 * 3 * 4, dtype=onp.float32).reshape(2, 3, 4)
    a = np.array(host)
    view = a[key]
    assert view.shape == host[key].shape
    onp.testing.assert_array_equal(view.asnumpy(), host[key])
    # NumPy views share memory when non-empty (an all-integer key gives a 0-d view here,
    # as in MXNet, where NumPy gives a scalar copy)
    parts = key if isinstance(key, tuple) else (key,)
    ref = host[parts if Ellipsis in parts else parts + (Ellipsis,)]
    assert onp.shares_memory(a, view) == onp.shares_memory(host, ref)
    if view.size:
        view[...] = -1                       # writes reach the base, as in NumPy
        host[key] = -1
        onp.testing.assert_array_equal(a.asnumpy(), host)


@pytest.mark.parametrize("key", [(slice(None), 0), (Ellipsis, 1), (0, slice(None, None, -1))])
def test_strided_basic_index_copies_like_mxnet(key):
    host = onp.arange(12, dtype=onp.float32).reshape(3, 4)
    a = np.array(host)
    onp.testing.assert_array_equal(a[key].asnumpy(), host[key])
    assert not onp.shares_memory(a, a[key])


def test_shares_memory_compares_element_ranges_like_numpy():
    a, h = np.zeros((4, 5, 6)), onp.zeros((4, 5, 6), onp.float32)
    for fn in (onp.shares_memory, onp.may_share_memory):
        assert fn(a[0], a[1]) == fn(h[0], h[1]) is False
        assert fn(a[0, 0, 2:5], a[0, 0, 4:6]) == fn(h[0, 0, 2:5], h[0, 0, 4:6]) is True
        assert fn(a, np.ones((5, 0))) is False


def test_index_out_of_range_is_index_error():
    with pytest.raises(IndexError):
        np.zeros((3,))[3]
    with pytest.raises(IndexError):
        np.zeros((3, 2))[1, 5]


@pytest.mark.parametrize("make_key", [
    lambda m2, m3: m2, lambda m2, m3: (m2, 1), lambda m2, m3: (0, m3),
    lambda m2, m3: (slice(None), m3), lambda m2, m3: (0, True, True, m3),
    lambda m2, m3: (False, 1), lambda m2, m3: (True,)])
def test_boolean_and_bool_scalar_assignment_like_numpy(make_key):
    host = onp.random.RandomState(0).uniform(size=(3, 2, 3)).astype(onp.float32)
    m2 = onp.array([[False, True], [True, False], [True, False]])
    m3 = onp.array([[False, True, True], [False, True, False]])
    a = np.array(host)
    a[make_key(np.array(m2), np.array(m3))] = 7
    host[make_key(m2, m3)] = 7
    onp.testing.assert_array_equal(a.asnumpy(), host)


def test_boolean_assignment_of_an_array_value():
    host = onp.zeros((2, 3), onp.float32)
    m = onp.array([True, False, True])
    a = np.array(host)
    a[1, np.array(m)] = np.array([5.0, 6.0])
    host[1, m] = [5.0, 6.0]
    onp.testing.assert_array_equal(a.asnumpy(), host)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
@pytest.mark.parametrize("name, fn", [
    ("tile", lambda a: np.tile(a, (2, 1)).sum()),
    ("diagonal", lambda a: np.diagonal(a, offset=5).sum()),
    ("softmax", lambda a: npx.softmax(a).sum()),
    ("log_softmax", lambda a: npx.log_softmax(a).sum()),
    ("fully_connected", lambda a: npx.fully_connected(
        a, np.ones((4, a.shape[1])), np.ones(4), num_hidden=4).sum()),
    ("einsum", lambda a: np.einsum("ij->j", a).sum()),
    ("mean_axis0", lambda a: a.mean(axis=0).sum())])
def test_zero_size_arrays_get_zero_size_gradients(shape, name, fn):
    x = np.zeros(shape)
    x.attach_grad()
    with autograd.record():
        y = fn(x)
    y.backward()
    assert x.grad.shape == shape


def test_fully_connected_zero_batch_weight_gradient_is_zero():
    x, w, b = np.zeros((0, 3)), np.ones((4, 3)), np.ones(4)
    w.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = npx.fully_connected(x, w, b, num_hidden=4)
    assert y.shape == (0, 4)
    y.backward()
    onp.testing.assert_array_equal(w.grad.asnumpy(), onp.zeros((4, 3)))
    onp.testing.assert_array_equal(b.grad.asnumpy(), onp.zeros(4))


@pytest.mark.parametrize("subscripts, shapes", [
    ("ii", [(3, 3)]), ("ii->i", [(3, 3)]), ("iij->j", [(3, 3, 2)]),
    ("ij,jj->i", [(2, 3), (3, 3)])])
def test_einsum_repeated_subscripts_gradient_matches_numeric(subscripts, shapes):
    rng = onp.random.RandomState(1)
    hosts = [rng.uniform(-1, 1, s) for s in shapes]
    arrays = [np.array(h, dtype=onp.float64) for h in hosts]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        y = np.einsum(subscripts, *arrays)
        loss = (y * y).sum()
    loss.backward()
    for k, a in enumerate(arrays):
        def f(v, k=k):
            r = onp.einsum(subscripts, *[v if j == k else h for j, h in enumerate(hosts)])
            return (r * r).sum()
        onp.testing.assert_allclose(a.grad.asnumpy(), _numeric_grad(f, hosts[k]),
                                    rtol=1e-5, atol=1e-6)


def test_clip_of_unsigned_ints_with_a_negative_bound_like_numpy():
    host = onp.array([0, 5, 80, 200, 255], dtype=onp.uint8)
    got = np.clip(np.array(host, dtype=onp.uint8), -120, 100)
    onp.testing.assert_array_equal(got.asnumpy(), onp.clip(host.astype(onp.int64), -120, 100))
    assert got.dtype == onp.uint8


def test_tensordot_and_dot_with_zero_contracted_size_like_numpy():
    a, b = onp.ones((3, 0), onp.float32), onp.ones((0, 4), onp.float32)
    onp.testing.assert_array_equal(np.tensordot(np.array(a), np.array(b), (1, 0)).asnumpy(),
                                   onp.tensordot(a, b, (1, 0)))
    onp.testing.assert_array_equal(np.dot(np.array(a), np.array(b)).asnumpy(), a @ b)


def test_broadcast_to_takes_an_int_shape():
    assert np.broadcast_to(np.array(2.0), 3).shape == onp.broadcast_to(2.0, 3).shape


def test_results_come_in_numpys_containers():
    m = onp.array([[2.0, 1.0], [1.0, 2.0]])
    for name, args in (("eigh", (m,)), ("slogdet", (m,)), ("eig", (m,))):
        assert type(getattr(np.linalg, name)(*[np.array(x) for x in args])) is \
            type(getattr(onp.linalg, name)(*args)), name
    assert type(np.broadcast_arrays(np.ones(2), np.ones((2, 1)))) is \
        type(onp.broadcast_arrays(onp.ones(2), onp.ones((2, 1))))


def test_dispatch_lists_name_only_functions_numpy_has():
    for name in _NUMPY_ARRAY_FUNCTION_LIST + _NUMPY_ARRAY_UFUNC_LIST:
        obj = onp
        for part in name.split("."):
            obj = getattr(obj, part)


def test_npx_front_ends_return_np_arrays_and_record():
    x = np.array([-1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = npx.relu(x)
        z = npx.sigmoid(x)
    assert type(y) is np.ndarray and type(z) is np.ndarray
    y.backward()
    onp.testing.assert_array_equal(x.grad.asnumpy(), [0.0, 1.0])
    assert type(npx.relu(x.as_nd_ndarray())) is np.ndarray
    out = npx.softmax(x, axis=0)                 # keywords: the general path
    onp.testing.assert_allclose(out.asnumpy(), onp.exp([-1, 2]) / onp.exp([-1, 2]).sum(),
                                rtol=1e-6)


@pytest.mark.parametrize("a_dtype", ["float32", "float64"])
def test_arithmetic_dunders_follow_numpy(a_dtype):
    h = onp.array([1.0, 2.0, 4.0], dtype=a_dtype)
    a = np.array(h, dtype=a_dtype)
    for got, want in ((a + a, h + h), (2 - a, 2 - h), (a * 3, h * 3), (1 / a, 1 / h),
                      (a ** 2, h ** 2), (2 ** a, 2 ** h), (a / a, h / h)):
        assert type(got) is np.ndarray and got.dtype == want.dtype
        onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    i = np.array([1, 2], dtype="int32")
    assert (i / i).dtype == onp.float32                  # MXNet: true division to float32
    assert (a + np.array([1, 2, 3], dtype="int32")).dtype == onp.dtype(a_dtype)


@pytest.mark.parametrize("key", [0, slice(0, 1)])
def test_recorded_value_written_in_place_is_refused(key):
    x = np.zeros((2, 3))
    y = np.ones(x[key].shape)
    y.attach_grad()
    with pytest.raises(mx.base.MXNetError, match="Inplace operations"):
        with autograd.record():
            x[key] = y


@pytest.mark.parametrize("key", [None, (), slice(None), Ellipsis])
def test_recorded_value_over_the_whole_array_is_a_recorded_copy(key):
    # MXNet 1.9.1 (NumPy mode): y's gradient through x = y, then sum(2 * x), is 2
    x = np.zeros((2, 3))
    y = np.ones(x[key].shape)
    y.attach_grad()
    with autograd.record():
        x[key] = y
        z = (x * 2).sum()
    z.backward()
    onp.testing.assert_array_equal(y.grad.asnumpy(), onp.full(y.shape, 2.0))


@pytest.mark.parametrize("key", [range(2), range(2, 0, -1), (range(3), [1]), (1, range(1, 3))])
def test_range_indexes_like_numpy(key):
    host = onp.arange(60, dtype=onp.float32).reshape(3, 4, 5)
    a = np.array(host)
    onp.testing.assert_array_equal(a[key].asnumpy(), host[key])
    a[key] = 7
    host[key] = 7
    onp.testing.assert_array_equal(a.asnumpy(), host)


def test_linspace_follows_numpy_and_refuses_bad_num():
    import numpy as onp
    from mxnet import np as mnp
    from mxnet.base import MXNetError
    for dtype in ("int32", "float32", None):
        got = mnp.linspace(-10.5, 10, 7, dtype=dtype).asnumpy()
        onp.testing.assert_allclose(got, onp.linspace(-10.5, 10, 7, dtype=dtype), rtol=1e-6)
    for num in (-1, 2.5):
        with pytest.raises(MXNetError):
            mnp.linspace(0, 10, num)


def test_named_results_keep_their_type_through_hybridized_blocks():
    import numpy as onp
    from mxnet import np as mnp, npx
    from mxnet.gluon import HybridBlock

    class Eigh(HybridBlock):
        def hybrid_forward(self, F, a):
            return F.np.linalg.eigh(a)
    npx.set_np()
    try:
        blk = Eigh()
        blk.hybridize()
        w, v = blk(mnp.array([[2.0, 1.0], [1.0, 3.0]]))
        onp.testing.assert_allclose(w.asnumpy(), onp.linalg.eigh([[2.0, 1.0], [1.0, 3.0]])[0],
                                    rtol=1e-5)
    finally:
        npx.reset_np()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_np_arithmetic_short_path_keeps_the_np_class(dtype):
    # same-shape, same-dtype + - * takes nd's short path (the ufunc directly); the
    # result is still an mx.np.ndarray with NumPy's values
    a = onp.arange(1, 11).astype(dtype)
    b = (onp.arange(10) * 3 - 7).astype(dtype)
    x, y = np.array(a, dtype=dtype), np.array(b, dtype=dtype)
    for got, want in ((x + y, a + b), (x - y, a - b), (x * y, a * b), (y - x, b - a)):
        assert type(got) is np.ndarray and got.dtype == want.dtype
        onp.testing.assert_array_equal(got.asnumpy(), want)

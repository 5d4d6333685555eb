"""NDArray core behaviour against NumPy: creation, views, indexing, copies,
asynchrony through the engine, failures at sync points."""
import pickle
import time

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.params import Float, Schema
from mxnet.operator.registry import Op, register


def test_creation_functions_match_numpy():
    assert mx.nd.zeros((2, 3)).asnumpy().tolist() == np.zeros((2, 3)).tolist()
    assert mx.nd.ones(4, dtype="int32").dtype == np.int32
    np.testing.assert_array_equal(mx.nd.full((2, 2), 7.5).asnumpy(), np.full((2, 2), 7.5))
    np.testing.assert_allclose(mx.nd.arange(0, 5, 0.5).asnumpy(), np.arange(0, 5, 0.5))
    np.testing.assert_array_equal(mx.nd.arange(3, repeat=2).asnumpy(), [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(mx.nd.eye(3, 4, 1).asnumpy(), np.eye(3, 4, 1))
    np.testing.assert_allclose(mx.nd.linspace(0, 1, 5).asnumpy(), np.linspace(0, 1, 5))
    assert mx.nd.empty((3, 1)).shape == (3, 1)


def test_array_dtype_defaults_follow_mxnet():
    assert mx.nd.array([1, 2, 3]).dtype == np.float32
    assert mx.nd.array(np.array([1.0, 2.0])).dtype == np.float32   # MXNet 1.x: float32
    assert mx.nd.array(np.array([1, 2]), dtype="int64").dtype == np.int64
    src = mx.nd.array([1, 2], dtype="float64")
    assert mx.nd.array(src).dtype == np.float64


def test_properties():
    x = mx.nd.zeros((2, 3, 4), dtype="float16")
    assert x.shape == (2, 3, 4) and x.size == 24 and x.ndim == 3
    assert x.dtype == np.float16 and x.context == mx.cpu() and x.ctx == mx.cpu()
    assert x.stype == "default" and len(x) == 2
    y = mx.nd.array([[1, 2, 3]])
    assert y.T.shape == (3, 1)
    assert x.T.shape == (4, 3, 2)      # MXNet 1.9.1 transposes any ndim (all axes)


@pytest.mark.parametrize("shape,codes,expected", [
    ((2, 3, 4), (0, -1), (2, 12)), ((2, 3, 4), (-2,), (2, 3, 4)),
    ((2, 3, 4), (-3, 4), (6, 4)), ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), (6, 1, 4)), ((2, 3, 4), (0, -4, -1, 1, 0), (2, 3, 1, 4)),
])
def test_reshape_special_codes(shape, codes, expected):
    x = mx.nd.array(np.arange(np.prod(shape)).reshape(shape))
    y = x.reshape(codes)
    assert y.shape == expected
    np.testing.assert_array_equal(y.asnumpy().ravel(), np.arange(np.prod(shape)))


def test_reshape_reverse_and_errors():
    x = mx.nd.zeros((10, 5, 4))
    assert x.reshape((-1, 0), reverse=True).shape == (50, 4)
    with pytest.raises(MXNetError):
        x.reshape((3, 7))
    with pytest.raises(MXNetError):
        x.reshape((-1, -1))


def test_reshape_and_first_axis_slices_share_memory():
    x = mx.nd.array(np.arange(12).reshape(3, 4))
    flat = x.reshape((12,))
    rows = x[1:3]
    row = x[0]
    rows[:] = -1
    assert flat.asnumpy()[4:].tolist() == [-1] * 8
    row += 100
    assert x.asnumpy()[0].tolist() == [100, 101, 102, 103]
    x[:] = 0
    assert rows.asnumpy().sum() == 0 and flat.asnumpy().sum() == 0


def test_getitem_matches_numpy():
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = mx.nd.array(a)
    for key in [1, -1, slice(1, 3), (1, 2), (slice(None), 2), (Ellipsis, 3),
                (slice(None, None, 2), slice(1, None), 0), (None, 1), [0, 2],
                (slice(None), [0, 3])]:
        expected = a[key]
        got = x[key].asnumpy()
        if expected.ndim == 0:
            expected = expected.reshape(1)
        np.testing.assert_array_equal(got, expected, err_msg=str(key))
    idx = mx.nd.array([2, 0])
    np.testing.assert_array_equal(x[idx].asnumpy(), a[[2, 0]])
    assert mx.nd.array([1, 2, 3])[1].shape == (1,)     # legacy: no 0-d arrays
    with pytest.raises(IndexError):
        x[3]


def test_setitem_matches_numpy():
    a = np.zeros((3, 4), np.float32)
    x = mx.nd.array(a)
    for key, val in [((0, 1), 5.0), (slice(1, 3), np.ones((2, 4))), ((slice(None), 2), 3),
                     ((2, slice(None, None, 2)), [7, 8]), (Ellipsis, 1.5)]:
        a[key] = val
        x[key] = val
        np.testing.assert_array_equal(x.asnumpy(), a, err_msg=str(key))
    x[:] = mx.nd.ones((3, 4)) * 2
    assert x.asnumpy().sum() == 24
    with pytest.raises(MXNetError):
        x[:] = np.ones((5, 5))


def test_copies_casts_and_contexts():
    x = mx.nd.array([[1.5, 2.5]])
    y = x.copy()
    y[:] = 0
    assert x.asnumpy().tolist() == [[1.5, 2.5]]
    z = mx.nd.zeros((1, 2))
    assert x.copyto(z) is z and z.asnumpy().tolist() == [[1.5, 2.5]]
    w = x.copyto(mx.cpu(1))
    assert w.context == mx.cpu(1) and w.asnumpy().tolist() == [[1.5, 2.5]]
    assert x.as_in_context(mx.cpu()) is x
    assert x.astype("int32").asnumpy().tolist() == [[1, 2]]
    assert x.astype("float32", copy=False) is x
    with pytest.raises(MXNetError):
        x.copyto(mx.nd.zeros((2, 2)))
    assert mx.nd.array([3.0]).asscalar() == 3.0
    with pytest.raises(MXNetError):
        x.asscalar()
    with pytest.raises(ValueError):         # MXNet 1.9.1 raises ValueError
        x.asscalar()


def test_numpy_interop_and_pickle():
    import pickle
    x = mx.nd.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(np.asarray(x), [[1, 2], [3, 4]])
    y = pickle.loads(pickle.dumps(x))
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert "<NDArray 2x2 @cpu(0)>" in repr(x)


# Pickles written by real MXNet 1.9.1 (pickle.dumps(..., protocol=4)): the class called
# with a None handle, then __setstate__ with the raw bytes of the array record.
_MX_PICKLE_ND = (  # mx.nd.array([[1, 2], [3, 4.5]])
    b'\x80\x04\x95\x8f\x00\x00\x00\x00\x00\x00\x00\x8c\x15mxnet.ndarray.ndarray\x94\x8c\x07'
    b'NDArray\x94\x93\x94N\x85\x94R\x94}\x94\x8c\x06handle\x94\x8c\x08builtins\x94\x8c\tbytearray'
    b'\x94\x93\x94C8\xc9\xfa\x93\xf9\x00\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00'
    b'\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
    b'\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x90@\x94\x85\x94R\x94sb.')
_MX_PICKLE_NP = (  # under npx.set_np(): mx.np.array([1, 2, 3], dtype='int32')
    b'\x80\x04\x95y\x00\x00\x00\x00\x00\x00\x00\x8c\x0bmxnet.numpy\x94\x8c\x07ndarray\x94\x93'
    b'\x94N\x85\x94R\x94}\x94\x8c\x06handle\x94\x8c\x08builtins\x94\x8c\tbytearray\x94\x93\x94C,'
    b'\xca\xfa\x93\xf9\x00\x00\x00\x00\x01\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x01\x00'
    b'\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00'
    b'\x94\x85\x94R\x94sb.')


def test_pickles_are_mxnet_pickles_both_ways():
    # Gluon's Trainer.save_states pickles the optimizer states: files written by MXNet
    # must load here and the other way round (sockeye resumes training from them)
    x = pickle.loads(_MX_PICKLE_ND)
    assert type(x) is mx.nd.NDArray and x.dtype == np.float32
    np.testing.assert_array_equal(x.asnumpy(), [[1, 2], [3, 4.5]])
    assert pickle.dumps(mx.nd.array([[1, 2], [3, 4.5]]), protocol=4) == _MX_PICKLE_ND
    with mx.util.np_shape(True), mx.util.np_array(True):
        y = pickle.loads(_MX_PICKLE_NP)
        assert type(y) is mx.np.ndarray and y.dtype == np.int32
        assert y.asnumpy().tolist() == [1, 2, 3]
        # the numpy-shape record magic, which MXNet needs to load it under set_np()
        assert pickle.dumps(mx.np.array([1, 2, 3], dtype="int32"), protocol=4) == \
            _MX_PICKLE_NP


@register
class _SlowFailingOp(Op):
    """Test-only: sleeps, then fails when ``fail`` is set (runs through the engine)."""
    name = "_test_slow_op"
    params = Schema(fail=Float(0.0), delay=Float(0.0))

    def forward(self, ctx, p, inputs, aux):
        time.sleep(p.delay)
        if p.fail:
            raise ValueError("kernel failed on purpose")
        return [inputs[0] * 2]


def test_large_work_is_asynchronous_and_ordered():
    from mxnet.ndarray import dispatch
    x = mx.nd.ones((dispatch.ASYNC_MIN_ELEMS + 1,))
    t0 = time.perf_counter()
    y = mx.nd._internal._test_slow_op(x, delay=0.3)
    z = y + 1
    pushed = time.perf_counter() - t0
    assert pushed < 0.1, f"pushing took {pushed:.3f}s"
    assert z.asnumpy()[0] == 3.0          # waits for both, in order
    mx.nd.waitall()


def test_failure_surfaces_at_sync_point_and_arrays_keep_working():
    from mxnet.ndarray import dispatch
    x = mx.nd.ones((dispatch.ASYNC_MIN_ELEMS + 1,))      # pushed to the engine
    bad = mx.nd._internal._test_slow_op(x, fail=1, delay=0.05)   # returns at once
    dependent = bad + 1
    with pytest.raises(MXNetError, match="failed on purpose"):
        dependent.asnumpy()
    bad.wait_to_read()                     # raised once: consumed for bad and dependent
    mx.nd.waitall()
    assert (x + 1).asnumpy()[0] == 2.0     # the engine keeps working


def test_small_work_failure_raises_at_the_sync_point_not_the_call():
    bad = mx.nd._internal._test_slow_op(mx.nd.ones((3,)), fail=1)   # inline, still deferred
    with pytest.raises(MXNetError, match="failed on purpose"):
        bad.asnumpy()
    mx.nd.waitall()


def test_unknown_and_bad_parameters_name_operator_and_parameter():
    x = mx.nd.ones((2, 2))
    with pytest.raises(MXNetError, match=r"Reshape.*unknown parameter 'shapes'"):
        mx.nd.Reshape(x, shapes=(4,))
    with pytest.raises(MXNetError, match=r"'reverse' of operator Reshape"):
        mx.nd.Reshape(x, shape=(4,), reverse="maybe")
    with pytest.raises(MXNetError, match="dtype"):
        x.astype("notatype")


def test_asnumpy_one_element_converts_to_python_scalar():
    # MXNet 1.9.1 on NumPy 1.x: '%f' % nd.array([2.5]).asnumpy() == '2.500000' and
    # float()/int() of a one-element (1,) or (1, 1) copy work; NumPy 2 refuses them
    # for plain ndarrays of ndim > 0, so asnumpy() must keep them working.
    one = mx.nd.array([2.5]).asnumpy()
    assert "%f" % one == "2.500000"
    assert float(one) == 2.5 and int(mx.nd.array([[3.0]]).asnumpy()) == 3
    assert complex(one) == 2.5 + 0j
    # otherwise a plain NumPy array: repr, pickling and np.asarray
    assert repr(one) == repr(np.array([2.5], dtype=np.float32))
    assert type(pickle.loads(pickle.dumps(one))) is np.ndarray
    assert type(np.asarray(mx.nd.array([1.0]))) is np.ndarray
    # pieces of a larger result too (NumPy 2.4 refuses float() of a plain one),
    # as Sockeye's float(scores[i]) of an (n, 1) result
    scores = mx.nd.array([[0.5], [0.75]]).asnumpy()
    assert [float(s) for s in scores] == [0.5, 0.75]
    assert int((scores * 4)[1]) == 3 and "%.2f" % scores[0] == "0.50"
    assert repr(scores) == repr(np.array([[0.5], [0.75]], dtype=np.float32))
    assert type(pickle.loads(pickle.dumps(scores))) is np.ndarray
    with pytest.raises(TypeError):          # more than one element: NumPy's error
        float(scores)
    # reductions give NumPy scalars, as on plain arrays
    assert type(scores.mean()) is np.float32 and type(scores.max()) is np.float32
    assert type((scores > 0.6).all()) is np.bool_ and isinstance(scores.sum(), np.floating)
    # grown past one element (broadcasting), NumPy's own TypeError again
    with pytest.raises(TypeError):
        float(one + np.ones(3))


def test_broadcast_methods_prepend_axes_like_numpy():
    # MXNet 1.9.1's NDArray.broadcast_to/broadcast_like methods (not the operators) pad
    # the shape with leading 1s first; GluonTS's Box-Cox transform relies on it
    x = mx.nd.array(np.arange(3).reshape(3, 1))
    want = np.broadcast_to(np.arange(3).reshape(3, 1), (2, 3, 4))
    np.testing.assert_array_equal(x.broadcast_to((2, 3, 4)).asnumpy(), want)
    np.testing.assert_array_equal(x.broadcast_like(mx.nd.zeros((2, 3, 4))).asnumpy(), want)
    with pytest.raises(ValueError, match="requested shape"):
        x.broadcast_to((3,))
    with pytest.raises(ValueError):
        x.broadcast_to((2, 2, 4))
    with pytest.raises(mx.MXNetError):          # the operator keeps its own rule
        mx.nd.broadcast_to(x, shape=(2, 3, 4))
    # the gradient flows back through the padding: sum over the broadcast axes
    x.attach_grad()
    weights = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    with mx.autograd.record():
        y = (x.broadcast_to((2, 3, 4)) * mx.nd.array(weights)).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), weights.sum(axis=(0, 2))[:, None])


def test_T_reverses_every_axis():
    # MXNet 1.9.1: .T is transpose() for any ndim >= 2, the array itself below that
    x = mx.nd.array(np.arange(24).reshape(2, 3, 4))
    assert x.T.shape == (4, 3, 2)
    assert (x.T.asnumpy() == np.arange(24).reshape(2, 3, 4).T).all()
    v = mx.nd.ones((3,))
    assert v.T is v


def test_split_v2_unequal_sections_is_value_error():
    # MXNet's front end raises ValueError before the operator runs
    with pytest.raises(ValueError):
        mx.nd.split_v2(mx.nd.ones((2, 3)), 2, axis=1)
    assert [a.shape for a in mx.nd.split_v2(mx.nd.ones((2, 3)), 3, axis=1)] == [(2, 1)] * 3


def test_scalar_assignment_wraps_like_a_c_cast():
    # MXNet 1.9.1 values: -1 into uint8 is 255, 300 is 44, 200 into int8 is -56
    b = mx.nd.array([1, 2, 3], dtype="uint8")
    b[1] = -1
    assert b.asnumpy().tolist() == [1, 255, 3]
    b[:] = 300
    assert b.asnumpy().tolist() == [44, 44, 44]
    b[0] = 7.9
    assert b.asnumpy().tolist() == [7, 44, 44]
    c = mx.nd.array([1, 2], dtype="int8")
    c[:] = 200
    assert c.asnumpy().tolist() == [-56, -56]

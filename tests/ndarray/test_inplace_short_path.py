"""``a += b``, ``a -= 1.0`` and friends (dispatch.inplace_binary): the short path writes
what the operator writes, into the array's own memory, and the cases it must not take
(integer arrays with a number, broadcasting, other dtypes, failed inputs, recording)
behave as MXNet's operators with ``out=`` do."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError

IN_PLACE = {"+": (lambda a, b: a.__iadd__(b), np.add),
            "-": (lambda a, b: a.__isub__(b), np.subtract),
            "*": (lambda a, b: a.__imul__(b), np.multiply),
            "/": (lambda a, b: a.__itruediv__(b), np.true_divide)}


def _data(dtype, seed):
    x = np.random.RandomState(seed).rand(3, 4) * 100 + 1
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int8",
                                   "uint8"])
@pytest.mark.parametrize("sym", ["+", "-", "*"])
def test_array_operand_matches_numpy_and_keeps_the_object(sym, dtype):
    x, y = _data(dtype, 0), _data(dtype, 1)
    a, b = mx.nd.array(x, dtype=dtype), mx.nd.array(y, dtype=dtype)
    same = a
    with np.errstate(over="ignore"):
        out = IN_PLACE[sym][0](a, b)
        want = IN_PLACE[sym][1](x, y).astype(dtype)
    assert out is same and a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a.asnumpy(), want)
    np.testing.assert_array_equal(b.asnumpy(), y)          # the operand is untouched


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("sym", ["+", "-", "*", "/"])
def test_number_operand_on_a_float_array_computes_in_its_dtype(sym, dtype):
    x = _data(dtype, 2)
    a = mx.nd.array(x, dtype=dtype)
    IN_PLACE[sym][0](a, 0.3)
    want = IN_PLACE[sym][1](x, np.dtype(dtype).type(0.3))
    assert a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a.asnumpy(), want)


def test_number_operand_on_an_integer_array_is_cast_to_it_first():
    # MXNet's scalar operators cast the number to the array's integer type (is_int)
    a = mx.nd.array([1, 2, 3], dtype="int32")
    a += 1.7
    a *= 2.9
    np.testing.assert_array_equal(a.asnumpy(), [4, 6, 8])
    assert a.dtype == np.int32


def test_a_view_writes_into_its_base():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = mx.nd.array(x)
    row = a[1:2]
    row += mx.nd.ones((1, 4))
    row *= 2.0
    want = x.copy()
    want[1] = (want[1] + 1) * 2
    np.testing.assert_array_equal(a.asnumpy(), want)


def test_memory_shared_with_numpy_sees_the_write():
    host = np.arange(4, dtype=np.float32)
    a = mx.nd.from_numpy(host, zero_copy=True)
    a += mx.nd.ones(4)
    a -= 0.5
    np.testing.assert_array_equal(host, np.arange(4) + 0.5)


def test_self_operand():
    a = mx.nd.array([1.0, 2.0, 3.0])
    a += a
    a *= a
    np.testing.assert_array_equal(a.asnumpy(), [4.0, 16.0, 36.0])


def test_broadcast_operand_goes_through_the_operator():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = mx.nd.array(x)
    a += mx.nd.ones((1, 4))
    np.testing.assert_array_equal(a.asnumpy(), x + 1)
    with pytest.raises(MXNetError):
        a += mx.nd.ones((4, 3))
        a.asnumpy()


def test_other_dtype_is_refused_as_by_the_operator():
    a = mx.nd.ones(2, dtype="float32")
    with pytest.raises(MXNetError):
        a += mx.nd.ones(2, dtype="float64")
        a.asnumpy()


@pytest.mark.parametrize("side", ["lhs", "rhs"])
def test_failed_operand_carries_its_error(side):
    a, b = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, 4.0])
    bad = a if side == "lhs" else b
    mx.engine.get().record_failure(ValueError("upstream broke"), [bad._chunk], "test")
    a += b
    with pytest.raises(MXNetError, match="upstream broke"):
        a.asnumpy()
    try:
        mx.nd.waitall()
    except MXNetError:
        pass
    # the engine keeps working
    c = mx.nd.ones(2)
    c += mx.nd.ones(2)
    np.testing.assert_array_equal(c.asnumpy(), [2.0, 2.0])


def test_recording_refuses_an_in_place_write_of_an_array_in_the_graph():
    # MXNet 1.9.1: "Assigning to NDArrays that are already in a computational graph ..."
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
        with pytest.raises(MXNetError, match="already in a computational graph"):
            y += 1.0
        with pytest.raises(MXNetError, match="already in a computational graph"):
            x += mx.nd.ones(2)
        with pytest.raises(MXNetError, match="already in a computational graph"):
            mx.nd.relu(x, out=y)
        z = y * 3
    z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [6.0, 6.0])
    # once backward has freed the graph, its results are plain arrays again
    with mx.autograd.record():
        y += 1.0
        fresh = mx.nd.zeros(2)
        mx.nd.relu(x, out=fresh)            # a destination outside the graph is fine
    np.testing.assert_array_equal(y.asnumpy(), [3.0, 5.0])
    np.testing.assert_array_equal(fresh.asnumpy(), [1.0, 2.0])


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("sym", ["+", "-", "*"])
def test_numpy_mode_arrays_take_it_too(sym, dtype):
    x, y = _data(dtype, 3), _data(dtype, 4)
    with mx.np_shape(True), mx.np_array(True):
        a, b = mx.np.array(x, dtype=dtype), mx.np.array(y, dtype=dtype)
        same = a
        with np.errstate(over="ignore"):
            IN_PLACE[sym][0](a, b)
            IN_PLACE[sym][0](a, 2)
            want = IN_PLACE[sym][1](IN_PLACE[sym][1](x, y).astype(dtype), 2).astype(dtype)
        assert a is same and isinstance(a, mx.np.ndarray) and a.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(a.asnumpy(), want)
        # a float number into an integer array: NumPy's type rules, then cast back
        ints = mx.np.array([1, 2, 3], dtype="int32")
        ints += 1.5
        np.testing.assert_array_equal(ints.asnumpy(), [2, 3, 4])
        assert ints.dtype == np.int32

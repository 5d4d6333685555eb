"""mx.np views, memory sharing, 0-d reshapes under autograd, npx.reshape's codes and
the boolean-mask assignments of ``mx.np._internal``, against NumPy."""
import inspect

import numpy as onp
import pytest

import mxnet as mx
from mxnet import autograd, np, npx
from mxnet.base import MXNetError
from mxnet.operator.ops.np_shape import npx_target
from mxnet.util import use_np


@pytest.fixture(autouse=True)
def _numpy_semantics():
    """Zero-size and zero-dim arrays need MXNet's NumPy shape semantics."""
    with mx.util.np_shape(True), mx.util.np_array(True):
        yield


def test_integer_then_slice_indexing_is_a_view():
    x = np.zeros((3, 4, 5))
    y = x[1, 2, 1:3]
    assert y.shape == (2,)
    y[:] = 7
    want = onp.zeros((3, 4, 5))
    want[1, 2, 1:3] = 7
    onp.testing.assert_array_equal(x.asnumpy(), want)
    nd = mx.nd.zeros((3, 4, 5))
    nd[0, 1:3][:] = 2                     # legacy NDArray: the same view
    assert nd.asnumpy()[0, 1:3].sum() == 2 * 10 and nd.asnumpy().sum() == 20


def test_integer_indexing_out_of_range_raises():
    with pytest.raises(IndexError):
        np.zeros((3, 4))[3, 1:2]


def test_may_share_memory_compares_element_ranges():
    x = np.zeros((4, 5, 6))
    for op in (np.shares_memory, np.may_share_memory):
        assert op(x[0, 0, 2:5], x[0, 0, 3:4])
        assert not op(x[0, 1, 2:5], x[0, 2, 4:6])
        assert not op(x[0], x[1])
        assert op(x, x[2])
        assert not op(x, np.ones((5, 0)))


def test_zero_dim_views_under_autograd():
    p = np.array([2.0, -1.0, 3.0])
    x = np.array(1.5)
    for a in (p, x):
        a.attach_grad()
    with autograd.record():
        y = np.polyval(p, x) + np.transpose(x) * 2
    y.backward()
    onp.testing.assert_allclose(y.asnumpy(), onp.polyval([2.0, -1.0, 3.0], 1.5) + 3.0)
    onp.testing.assert_allclose(p.grad.asnumpy(), [1.5 ** 2, 1.5, 1.0])
    onp.testing.assert_allclose(x.grad.asnumpy(), 2 * 2.0 * 1.5 - 1.0 + 2.0)


def test_transpose_repeated_axes_is_a_value_error_and_bad_axes_an_mxnet_error():
    x = np.zeros((3, 4, 5))
    with pytest.raises(ValueError):
        x.transpose((0, 0, 1))
    with pytest.raises(MXNetError):
        x.transpose((0, 1, 3))


@pytest.mark.parametrize("axis", [0, -1, (0,), None])
def test_squeeze_zero_dim(axis):
    got = np.squeeze(np.array(2.5), axis)
    assert got.shape == () and float(got) == 2.5


def test_reshape_with_out_writes_into_it():
    out = np.zeros((3, 2))
    got = np.reshape(np.arange(6), (3, 2), out=out)
    assert got is out
    onp.testing.assert_array_equal(out.asnumpy(), onp.arange(6.0).reshape(3, 2))


def test_builtin_op_documents_its_front_end_signature():
    # every registered _np_* operator is documented, with its front end's signature
    from mxnet import _numpy_op_doc
    from mxnet.numpy_op_signature import _get_builtin_op
    from mxnet.operator import get_all_registered_operators
    names = [n for n in get_all_registered_operators() if n.startswith("_np_")]
    assert "_np_reshape" in names
    for name in names:
        op = _get_builtin_op(name)
        assert str(op.__signature__) == str(inspect.signature(getattr(_numpy_op_doc, name)))
    with pytest.raises(NotImplementedError):
        _numpy_op_doc._np_reshape(None, ())


# shape, codes, reverse, the shape MXNet 1.9.1's npx.reshape gives
NPX_RESHAPES = [
    ((2, 3, 5, 5), (-2, -1), False, (2, 75)),
    ((5, 3, 4, 5), (-2, -1, -2), False, (5, 15, 4)),
    ((2, 3, 5, 4), (-1, -2, -2), False, (8, 3, 5)),
    ((2, 1, 4, 5), (-2, -3, -2, -2), False, (2, 4, 5)),
    ((1, 1, 1, 1), (-3, -3, -3, -3), False, ()),
    ((2, 4, 5, 3), (-1, 2, 2, 1), False, (30, 2, 2, 1)),
    ((2, 3, 5, 6), (6, 1, -4), False, (6, 1, 5, 6)),
    ((2, 3, 5, 6), (-5, -1), False, (6, 30)),
    ((64,), (-6, 16, -1), False, (16, 4)),
    ((64, 1, 2, 3), (-6, 16, -1, -4), False, (16, 4, 1, 2, 3)),
    ((8, 5, 4, 6), (-4, -1, 3, -6), True, (8, 5, 4, 2, 3)),
    ((8, 5, 4, 6), (-2, -1), True, (4, 240)),
    ((2, 3), (-4, 1), False, (2, 3, 1)),
    ((), (1, 1), False, (1, 1)),
]


@pytest.mark.parametrize("shape, codes, reverse, want", NPX_RESHAPES)
def test_npx_reshape_codes(shape, codes, reverse, want):
    assert npx_target(shape, codes, reverse) == want
    x = onp.arange(int(onp.prod(shape)), dtype=onp.float32).reshape(shape)
    got = npx.reshape(np.array(x), codes, reverse=reverse)
    onp.testing.assert_array_equal(got.asnumpy(), x.reshape(want))


@pytest.mark.parametrize("shape, codes, reverse", [
    ((2, 3), (0, -1), False), ((2, 3, 4), (-2, -1, -1), False), ((2, 3), (-3, -1), False),
    ((1, 6), (-6, -1, -1), False), ((8, 5, 4, 6), (-6, 2, -1, -4), True),
    ((2, 3, 5, 6), (3, 2, -4), True), ((2, 3), (5,), False)])
def test_npx_reshape_bad_codes_raise(shape, codes, reverse):
    with pytest.raises(MXNetError):
        npx.reshape(np.zeros(shape), codes, reverse=reverse)


def test_symbolic_npx_reshape_and_its_gradient():
    out = mx.sym.npx.reshape(mx.sym.var("a"), (-6, 2, -1, -4)) * 3
    assert "_npx_reshape" in out.tojson()
    x = onp.arange(24.0).reshape(4, 3, 2)
    exe = out.simple_bind(mx.cpu(), a=x.shape)
    exe.forward(is_train=True, a=mx.nd.array(x))
    exe.backward([mx.nd.ones((2, 2, 3, 2))])
    onp.testing.assert_array_equal(exe.outputs[0].asnumpy(), 3 * x.reshape(2, 2, 3, 2))
    onp.testing.assert_array_equal(exe.grad_dict["a"].asnumpy(), onp.full(x.shape, 3.0))


@use_np
@pytest.mark.parametrize("dshape, mshape, start", [((3, 4), (3, 4), 0), ((), (), 0),
                                                   ((2, 3, 4), (3, 4), 1),
                                                   ((2, 3, 4, 5), (3,), 1)])
def test_boolean_mask_assign(dshape, mshape, start):
    rng = onp.random.RandomState(3)
    data = rng.uniform(size=dshape)
    mask = onp.asarray(rng.uniform(size=mshape) > 0.4)
    key = (slice(None),) * start + (mask,)
    want = data.copy()
    want[key] = 42.0
    a = np.array(data)
    got = np._internal.boolean_mask_assign_scalar(a, np.array(mask), 42.0, start_axis=start,
                                                  out=a)
    onp.testing.assert_allclose(a.asnumpy(), want)
    onp.testing.assert_allclose(got.asnumpy(), want)
    value = rng.uniform(size=want[key].shape)
    want[key] = value
    np._internal.boolean_mask_assign_tensor(a, np.array(mask), np.array(value),
                                            start_axis=start, out=a)
    onp.testing.assert_allclose(a.asnumpy(), want)


def test_boolean_mask_assign_checks_the_mask():
    a = np.zeros((3, 4))
    with pytest.raises(MXNetError):
        np._internal.boolean_mask_assign_scalar(a, np.ones((4,), dtype=bool), 1.0, out=a)
    with pytest.raises(MXNetError):
        np._internal.boolean_mask_assign_scalar(a, np.ones((3, 4)), 1.0, out=a)


def test_internal_names_reach_npi_operators():
    got = np._internal.nan_to_num(np.array([onp.nan, 1.0]))
    assert isinstance(got, np.ndarray)
    onp.testing.assert_array_equal(got.asnumpy(), [0.0, 1.0])
    with pytest.raises(AttributeError):
        np._internal.no_such_operator

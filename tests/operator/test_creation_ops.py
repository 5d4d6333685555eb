"""Input-less creation operators (ops/creation_ops.py: _zeros, _ones, _full, _arange,
_linspace, _eye, _zeros_without_dtype) against NumPy."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from common import check_infer, infer_shapes

nd = mx.nd


def test_creation_ops():
    I = nd._internal
    z = I._zeros(shape=(2, 3))
    assert z.dtype == np.float32 and z.shape == (2, 3) and not z.asnumpy().any()
    assert I._zeros(shape=(2,), dtype="int32").dtype == np.int32
    o = I._ones(shape=(3,), dtype="float64")
    assert o.dtype == np.float64 and o.asnumpy().tolist() == [1, 1, 1]
    f = I._full(shape=(2,), value=3.5, dtype="int32")
    assert f.dtype == np.int32 and f.asnumpy().tolist() == [3, 3]
    assert I._full(shape=(2, 2), value=-1.5).asnumpy().tolist() == [[-1.5, -1.5]] * 2
    a = I._arange(start=0, stop=5, step=1.5, repeat=2)
    assert a.asnumpy().tolist() == [0, 0, 1.5, 1.5, 3, 3, 4.5, 4.5]
    assert I._arange(start=5).asnumpy().tolist() == [0, 1, 2, 3, 4]
    assert I._arange(start=5, stop=0, step=-2).asnumpy().tolist() == [5, 3, 1]
    ai = I._arange(start=0.5, stop=5, dtype="int32")
    assert ai.dtype == np.int32 and ai.asnumpy().tolist() == [0, 1, 2, 3, 4]
    e = I._eye(N=3, M=4, k=1)
    assert np.array_equal(e.asnumpy(), np.eye(3, 4, 1))
    assert np.array_equal(I._eye(N=2, dtype="int64").asnumpy(), np.eye(2))
    ls = I._linspace(start=0, stop=1, num=5)
    assert np.allclose(ls.asnumpy(), np.linspace(0, 1, 5))
    assert np.allclose(I._linspace(start=0, stop=1, num=5, endpoint=False).asnumpy(),
                       np.linspace(0, 1, 5, endpoint=False))
    assert I._zeros_without_dtype(shape=(2,)).dtype == np.float32
    assert I._zeros_without_dtype(shape=(2,), dtype=4).dtype == np.int32
    assert I._zeros(shape=(2,), ctx=mx.cpu()).context == mx.cpu()


@pytest.mark.parametrize("call", [
    lambda: nd._internal._zeros(),
    lambda: nd._internal._arange(start=5, stop=0),
    lambda: nd._internal._arange(start=0, stop=3, step=0),
    lambda: nd._internal._arange(start=0, stop=3, infer_range=True),
    lambda: nd._internal._linspace(start=0, stop=1),
    lambda: nd._internal._zeros(shape=(2,), dtype="complex64"),
])
def test_creation_errors(call):
    with pytest.raises(MXNetError):
        call()


@pytest.mark.parametrize("name,kw", [
    ("_zeros", dict(shape=(2, 3), dtype="int64")), ("_ones", dict(shape=(4,))),
    ("_full", dict(shape=(2,), value=1, dtype="uint8")),
    ("_arange", dict(start=1, stop=4, step=0.5, repeat=2, dtype="float64")),
    ("_linspace", dict(start=0, stop=1, num=7)), ("_eye", dict(N=2, M=5, k=-1)),
    ("_zeros_without_dtype", dict(shape=(3,), dtype=1)),
])
def test_inference_matches_forward(name, kw):
    check_infer(name, [], **kw)


def test_infer_shape():
    assert infer_shapes("_zeros", [], shape=(2, 3))[1] == [(2, 3)]
    assert infer_shapes("_arange", [], start=0, stop=5, step=2, repeat=3)[1] == [(9,)]
    assert infer_shapes("_eye", [], N=3)[1] == [(3, 3)]
    # a 0 in the shape is unknown, left to symbolic inference to fill in
    assert infer_shapes("_zeros", [], shape=(0, 3))[1] == [(None, 3)]


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "float32", "float64"])
def test_arange_values_in_the_output_type(dtype):
    # MXNet casts start and step to the dtype first: int arange(1.3, 9, 1.3) counts by 1
    got = nd.arange(1.3, 9.0, 1.3, dtype=dtype).asnumpy()
    n = 6                                   # ceil((9 - 1.3) / 1.3)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        want = dt.type(1.3) + np.arange(n, dtype=dt) * dt.type(1.3)
    else:
        want = (1 + np.arange(n)).astype(dt)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == dt
    if dtype == "uint8":                    # a negative step wraps, as in C
        np.testing.assert_array_equal(nd.arange(50, -50, -2, dtype=dtype).asnumpy()[:3],
                                      [50, 48, 46])


def test_arange_infer_range():
    s = mx.sym.arange(start=2, step=0.5, repeat=2, infer_range=True)
    ex = mx.sym.elemwise_add(s, mx.sym.zeros(shape=(6,))).bind(mx.cpu(), args={})
    ex.forward()
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), [2, 2, 2.5, 2.5, 3, 3])
    with pytest.raises(MXNetError, match="cannot infer the shape"):
        nd._internal._arange(start=0, infer_range=True)    # imperative: nothing to infer


@pytest.mark.parametrize("start,stop,step", [(1, -10, 4), (1, 1, 1), (0, 5, 2), (3, -3, -1.5)])
def test_npi_arange_matches_numpy_and_allows_empty(start, stop, step):
    # mx.np.arange's operator follows NumPy, empty ranges included; nd.arange refuses
    # an empty range (MXNet 1.9.1: "Invalid range")
    got = nd._internal._npi_arange(start=start, stop=stop, step=step, dtype="float64")
    np.testing.assert_array_equal(got.asnumpy(), np.arange(start, stop, step, dtype=np.float64))
    if len(np.arange(start, stop, step)) == 0:
        with pytest.raises(MXNetError, match="empty"):
            nd.arange(start, stop, step)


def test_which_creation_nodes_need_shape_inference_to_run():
    # a node that completes its parameters from inferred shapes cannot run through the
    # imperative dispatcher before inference (gluon's CachedOp replays only others)
    from mxnet.symbol.graph import topo_order

    def needs(sym):
        node = [n for n in topo_order([h for h, _ in sym._outputs]) if n.op is not None][-1]
        return node.op.needs_inferred_params(node.params)
    assert not needs(mx.sym.zeros((2, 3)))
    assert needs(mx.sym.zeros((0, 3)))
    assert needs(mx.sym.ones((2, -1)))
    assert not needs(mx.sym.arange(0, 5))
    assert needs(mx.sym.arange(0, None, infer_range=True))
    assert not needs(mx.sym.random.uniform(shape=(2,)))
    assert needs(mx.sym.random.uniform())
    assert not needs(mx.sym.relu(mx.sym.var("x")))

"""Shape-manipulation operators (ops/matrix.py) against NumPy references, numeric
gradients and MXNet 1.9.1's golden cases; Reshape's golden cases too."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator.registry import OpContext, get_op
from common import check_forward_backward, fixture_cases_for, run_fixture_case

nd = mx.nd
rs = np.random.RandomState(11)


def rand(*shape):
    return rs.uniform(-1, 1, shape)


@pytest.mark.parametrize("case", fixture_cases_for(
    "Concat", "Flatten", "SliceChannel", "split", "SwapAxis", "expand_dims", "squeeze",
    "repeat", "tile", "slice", "slice_axis", "stack", "transpose", "broadcast_to",
    "broadcast_axis", "broadcast_like", "Reshape"))
def test_fixture(case):
    run_fixture_case(case)


# --- one-input operators: (call, input shape, numpy reference) ----------------------------

def ref_split(x, n, axis, squeeze=False):
    parts = np.split(x, n, axis=axis)
    return [np.squeeze(q, axis=axis) if squeeze else q for q in parts]


UNARY = [
    ("Flatten", lambda x: nd.Flatten(x), (2, 3, 4), lambda x: x.reshape(2, 12)),
    ("flatten_4d", lambda x: nd.flatten(x), (2, 3, 2, 2), lambda x: x.reshape(2, 12)),
    ("flatten_1d", lambda x: nd.Flatten(x), (5,), lambda x: x.reshape(5, 1)),
    ("transpose", lambda x: nd.transpose(x), (2, 3, 4), lambda x: x.T),
    ("transpose_axes", lambda x: nd.transpose(x, axes=(1, 2, 0)), (2, 3, 4),
     lambda x: np.transpose(x, (1, 2, 0))),
    ("expand_dims0", lambda x: nd.expand_dims(x, axis=0), (2, 3), lambda x: x[None]),
    ("expand_dims_end", lambda x: nd.expand_dims(x, axis=2), (2, 3), lambda x: x[..., None]),
    ("expand_dims_neg", lambda x: nd.expand_dims(x, axis=-2), (2, 3), lambda x: x[:, None]),
    ("squeeze_all", lambda x: nd.squeeze(x), (1, 3, 1, 2), lambda x: x.reshape(3, 2)),
    ("squeeze_axis", lambda x: nd.squeeze(x, axis=(0, 2)), (1, 3, 1, 2),
     lambda x: x.reshape(3, 2)),
    ("squeeze_neg", lambda x: nd.squeeze(x, axis=-1), (2, 3, 1), lambda x: x[..., 0]),
    ("squeeze_to_1", lambda x: nd.squeeze(x), (1, 1), lambda x: x.reshape(1)),
    ("SwapAxis", lambda x: nd.SwapAxis(x, dim1=0, dim2=2), (2, 3, 4),
     lambda x: np.swapaxes(x, 0, 2)),
    ("swapaxes_neg", lambda x: nd.swapaxes(x, dim1=-1, dim2=1), (2, 3, 4),
     lambda x: np.swapaxes(x, 2, 1)),
    ("flip", lambda x: nd.flip(x, axis=1), (2, 3, 4), lambda x: x[:, ::-1]),
    ("reverse_multi", lambda x: nd.reverse(x, axis=(0, 2)), (2, 3, 4),
     lambda x: x[::-1, :, ::-1]),
    ("tile_same", lambda x: nd.tile(x, reps=(2, 3)), (2, 3), lambda x: np.tile(x, (2, 3))),
    ("tile_short", lambda x: nd.tile(x, reps=(2,)), (2, 3), lambda x: np.tile(x, (2,))),
    ("tile_long", lambda x: nd.tile(x, reps=(2, 1, 3)), (2, 3),
     lambda x: np.tile(x, (2, 1, 3))),
    ("repeat_flat", lambda x: nd.repeat(x, repeats=2), (2, 3), lambda x: np.repeat(x, 2)),
    ("repeat_axis0", lambda x: nd.repeat(x, repeats=3, axis=0), (2, 3),
     lambda x: np.repeat(x, 3, axis=0)),
    ("repeat_neg", lambda x: nd.repeat(x, repeats=2, axis=-1), (2, 3, 2),
     lambda x: np.repeat(x, 2, axis=-1)),
    ("split", lambda x: nd.split(x, num_outputs=2, axis=2), (2, 3, 4),
     lambda x: ref_split(x, 2, 2)),
    ("split_default_axis", lambda x: nd.SliceChannel(x, num_outputs=3), (2, 3, 4),
     lambda x: ref_split(x, 3, 1)),
    ("split_squeeze", lambda x: nd.split(x, num_outputs=2, axis=0, squeeze_axis=True),
     (2, 3, 4), lambda x: ref_split(x, 2, 0, True)),
    ("split_neg", lambda x: nd.split(x, num_outputs=2, axis=-1), (2, 3, 4),
     lambda x: ref_split(x, 2, 2)),
    ("split_v2_indices", lambda x: nd._internal._split_v2(x, indices=(0, 1, 3), axis=2),
     (2, 3, 4), lambda x: np.split(x, [1, 3], axis=2)),
    ("split_v2_sections", lambda x: nd._internal._split_v2(x, indices=(), sections=3, axis=1),
     (2, 3, 4), lambda x: np.split(x, 3, axis=1)),
    ("slice", lambda x: nd.slice(x, begin=(1, None), end=(None, 2)), (3, 4, 2),
     lambda x: x[1:, :2]),
    ("slice_step", lambda x: nd.slice(x, begin=(None, 3), end=(None, 0), step=(2, -2)),
     (3, 4, 2), lambda x: x[::2, 3:0:-2]),
    ("slice_neg", lambda x: nd.slice(x, begin=(-2, -3, 0), end=(None, -1, 1)), (3, 4, 2),
     lambda x: x[-2:, -3:-1, 0:1]),
    ("slice_reverse", lambda x: nd.slice(x, begin=(None,), end=(None,), step=(-1,)),
     (3, 4), lambda x: x[::-1]),
    ("slice_clamped", lambda x: nd.slice(x, begin=(-10, 1), end=(10, 100)), (3, 4),
     lambda x: x[-10:10, 1:100]),
    ("slice_axis", lambda x: nd.slice_axis(x, axis=1, begin=1, end=3), (2, 4, 3),
     lambda x: x[:, 1:3]),
    ("slice_axis_none", lambda x: nd.slice_axis(x, axis=-1, begin=-2, end=None), (2, 4, 3),
     lambda x: x[..., -2:]),
    ("slice_axis_negend", lambda x: nd.slice_axis(x, axis=0, begin=0, end=-1), (3, 2),
     lambda x: x[:-1]),
    ("broadcast_to", lambda x: nd.broadcast_to(x, shape=(2, 3, 4)), (2, 1, 4),
     lambda x: np.broadcast_to(x, (2, 3, 4))),
    ("broadcast_to_zero", lambda x: nd.broadcast_to(x, shape=(0, 5)), (3, 1),
     lambda x: np.broadcast_to(x, (3, 5))),
    ("broadcast_axis", lambda x: nd.broadcast_axis(x, axis=(0, 2), size=(2, 3)), (1, 2, 1),
     lambda x: np.broadcast_to(x, (2, 2, 3))),
    ("broadcast_axes_int", lambda x: nd.broadcast_axes(x, axis=1, size=4), (2, 1),
     lambda x: np.broadcast_to(x, (2, 4))),
    ("diag_1d", lambda x: nd.diag(x), (3,), lambda x: np.diag(x)),
    ("diag_1d_k", lambda x: nd.diag(x, k=1), (3,), lambda x: np.diag(x, 1)),
    ("diag_1d_kneg", lambda x: nd.diag(x, k=-2), (3,), lambda x: np.diag(x, -2)),
    ("diag_2d", lambda x: nd.diag(x), (3, 4), lambda x: np.diag(x)),
    ("diag_2d_k", lambda x: nd.diag(x, k=2), (3, 4), lambda x: np.diag(x, 2)),
    ("diag_2d_kneg", lambda x: nd.diag(x, k=-1), (3, 4), lambda x: np.diag(x, -1)),
    ("diag_3d", lambda x: nd.diag(x, k=-1, axis1=0, axis2=2), (3, 2, 4),
     lambda x: np.diagonal(x, -1, 0, 2)),
    ("diag_3d_neg", lambda x: nd.diag(x, k=1, axis1=-1, axis2=1), (2, 3, 4),
     lambda x: np.diagonal(x, 1, 2, 1)),
]


@pytest.mark.parametrize("name,call,shape,ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, call, shape, ref):
    check_forward_backward(call, [rand(*shape)], ref)


@pytest.mark.parametrize("dtype", ["float64", "int32", "float16", "uint8"])
def test_dtype_kept(dtype):
    x = nd.array(np.arange(24).reshape(2, 3, 4), dtype=dtype)
    for out in (nd.Flatten(x), nd.transpose(x), nd.tile(x, reps=(2,)), nd.repeat(x, 2),
                nd.slice(x, begin=(1,), end=(2,)), nd.flip(x, axis=0), nd.diag(x),
                nd.concat(x, x, dim=0), nd.stack(x, x), nd.split(x, 3)[0],
                nd.broadcast_to(x[:1], shape=(3, 3, 4)), nd.expand_dims(x, 0)):
        assert out.dtype == np.dtype(dtype)


# --- several inputs ----------------------------------------------------------------------

@pytest.mark.parametrize("shapes,dim", [
    ([(2, 1, 3), (2, 2, 3), (2, 3, 3)], 1),
    ([(1, 3), (2, 3)], 0),
    ([(2, 3), (2, 1)], -1),
    ([(4,), (2,), (1,)], 0),
    ([(2, 3)], 1),
])
def test_concat(shapes, dim):
    check_forward_backward(lambda *a: nd.Concat(*a, dim=dim), [rand(*s) for s in shapes],
                           lambda *a: np.concatenate(a, axis=dim))


@pytest.mark.parametrize("n,axis", [(2, 0), (3, 1), (2, 2), (2, -1), (1, 0)])
def test_stack(n, axis):
    check_forward_backward(lambda *a: nd.stack(*a, axis=axis), [rand(2, 3) for _ in range(n)],
                           lambda *a: np.stack(a, axis=axis))


def test_slice_like():
    like = np.zeros((1, 2, 3))
    check_forward_backward(lambda x, l: nd.slice_like(x, l), [rand(2, 3, 4), like],
                           lambda x, l: x[:1, :2, :3], grad_nodes=[0])
    check_forward_backward(lambda x, l: nd.slice_like(x, l, axes=(0, -1)),
                           [rand(2, 3, 4), like], lambda x, l: x[:1, :, :3], grad_nodes=[0])
    check_forward_backward(lambda x, l: nd.slice_like(x, l, axes=(1,)),
                           [rand(2, 3, 4), np.zeros((5, 2))], lambda x, l: x[:, :2],
                           grad_nodes=[0])


@pytest.mark.parametrize("ls,rs_,kw,out", [
    ((1, 3, 1), (2, 3, 4), {}, (2, 3, 4)),
    ((1, 3, 1), (5, 6), dict(lhs_axes=(0, 2), rhs_axes=(1, 0)), (6, 3, 5)),
    ((1, 3, 1), (5, 6), dict(lhs_axes=(-1,), rhs_axes=(-1,)), (1, 3, 6)),
])
def test_broadcast_like(ls, rs_, kw, out):
    check_forward_backward(lambda a, b: nd.broadcast_like(a, b, **kw),
                           [rand(*ls), np.zeros(rs_)],
                           lambda a, b: np.broadcast_to(a, out), grad_nodes=[0])


@pytest.mark.parametrize("ls,rs_,kw,out", [
    ((2, 3, 4), (6, 4), {}, (6, 4)),
    ((30, 7), (15, 2, 4), dict(lhs_begin=0, lhs_end=1, rhs_begin=0, rhs_end=2), (15, 2, 7)),
    ((30, 12), (4, 2, 2, 3), dict(lhs_begin=-1, rhs_begin=1), (30, 2, 2, 3)),
])
def test_reshape_like(ls, rs_, kw, out):
    check_forward_backward(lambda a, b: nd.reshape_like(a, b, **kw),
                           [rand(*ls), np.zeros(rs_)], lambda a, b: a.reshape(out),
                           grad_nodes=[0], grad=np.prod(ls) < 100)
    # the shape-only input gets a zero gradient
    a, b = nd.array(rand(*ls)), nd.array(np.ones(rs_))
    b.attach_grad()
    with mx.autograd.record():
        y = nd.reshape_like(a, b, **kw)
    y.backward()
    assert not b.grad.asnumpy().any()


# --- depth/space ---------------------------------------------------------------------------

def ref_depth_to_space(x, b):
    """Element-wise definition: out[n, c, h, w] = x[n, ((h%b)*b + w%b)*C' + c, h//b, w//b]."""
    n, c, h, w = x.shape
    c2 = c // (b * b)
    out = np.empty((n, c2, h * b, w * b), x.dtype)
    for hh in range(h * b):
        for ww in range(w * b):
            ch = ((hh % b) * b + ww % b) * c2
            out[:, :, hh, ww] = x[:, ch:ch + c2, hh // b, ww // b]
    return out


def ref_space_to_depth(x, b):
    n, c, h, w = x.shape
    out = np.empty((n, c * b * b, h // b, w // b), x.dtype)
    for bh in range(b):
        for bw in range(b):
            ch = (bh * b + bw) * c
            out[:, ch:ch + c] = x[:, :, bh::b, bw::b]
    return out


def test_depth_to_space():
    check_forward_backward(lambda x: nd.depth_to_space(x, block_size=2), [rand(2, 8, 2, 3)],
                           lambda x: ref_depth_to_space(x, 2))
    # values MXNet 1.9.1 printed for arange input
    got = nd.depth_to_space(nd.array(np.arange(96).reshape(2, 8, 2, 3)), 2).asnumpy()
    assert got.ravel()[:12].tolist() == [0, 12, 1, 13, 2, 14, 24, 36, 25, 37, 26, 38]


def test_space_to_depth():
    check_forward_backward(lambda x: nd.space_to_depth(x, block_size=2), [rand(2, 2, 4, 6)],
                           lambda x: ref_space_to_depth(x, 2))
    got = nd.space_to_depth(nd.array(np.arange(96).reshape(2, 2, 4, 6)), 2).asnumpy()
    assert got.ravel()[:12].tolist() == [0, 2, 4, 12, 14, 16, 24, 26, 28, 36, 38, 40]
    x = rand(1, 3, 4, 2)
    assert np.array_equal(nd.depth_to_space(nd.space_to_depth(nd.array(x), 2), 2).asnumpy(),
                          x.astype(np.float32))


# --- shape_array, size_array ---------------------------------------------------------------

def test_shape_size_array():
    x = nd.ones((2, 3, 4), dtype="float16")
    s, n = nd.shape_array(x), nd.size_array(x)
    assert s.dtype == np.int64 and s.asnumpy().tolist() == [2, 3, 4]
    assert n.dtype == np.int64 and n.shape == (1,) and n.asnumpy().tolist() == [24]
    x = nd.array(rand(2, 3))
    x.attach_grad()
    with mx.autograd.record():
        ys = [nd.shape_array(x), nd.size_array(x)]
    mx.autograd.backward(ys)
    assert not x.grad.asnumpy().any()


# --- creation operators --------------------------------------------------------------------

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


# --- shape inference (what the symbolic executor relies on) --------------------------------

def infer(name, shapes, **kw):
    op = get_op(name)
    p = op.parse(kw)
    ins, outs, _ = op.infer_shape(p, shapes)
    return [None if s is None else tuple(s) for s in ins], \
        [None if s is None else tuple(s) for s in outs]


def check_infer(name, arrays, **kw):
    """infer_shape/infer_type must predict every output (hidden ones too) exactly."""
    op = get_op(name)
    if op.variadic:
        kw.setdefault(op.variadic, len(arrays))
    p = op.parse(kw)
    outs = op.forward(OpContext(np, mx.cpu()), p, arrays, [])
    _, shapes, _ = op.infer_shape(p, [a.shape for a in arrays])
    _, types, _ = op.infer_type(p, [a.dtype for a in arrays])
    assert len(outs) == len(shapes) == len(types) == len(op.outputs(p))
    for o, s, t in zip(outs, shapes, types):
        assert o.shape == tuple(s) and o.dtype == np.dtype(t), (name, kw, o.shape, s, o.dtype, t)


A3 = np.arange(24, dtype=np.float64).reshape(2, 3, 4)


@pytest.mark.parametrize("name,arrays,kw", [
    ("Flatten", [A3], {}), ("transpose", [A3], dict(axes=(1, 0, 2))),
    ("expand_dims", [A3], dict(axis=-1)), ("squeeze", [A3[:1]], {}),
    ("squeeze", [np.ones((1, 1), np.int32)], {}), ("SwapAxis", [A3], dict(dim1=1)),
    ("reverse", [A3], dict(axis=(0, 1))), ("tile", [A3], dict(reps=(2, 1, 1, 2))),
    ("repeat", [A3], dict(repeats=2)), ("repeat", [A3], dict(repeats=3, axis=1)),
    ("Concat", [A3, A3[:, :1]], dict(dim=1)), ("stack", [A3, A3], dict(axis=-1)),
    ("SliceChannel", [A3], dict(num_outputs=3, squeeze_axis=True)),
    ("SliceChannel", [A3[:, 0, 0]], dict(num_outputs=2, axis=0, squeeze_axis=True)),
    ("_split_v2", [A3], dict(indices=(0, 3), axis=2)),
    ("slice", [A3], dict(begin=(None, 2), end=(1, 0), step=(1, -1))),
    ("slice", [A3], dict(begin=(1,), end=(1,))),
    ("slice_axis", [A3], dict(axis=2, begin=1, end=None)),
    ("slice_like", [A3, np.ones((1, 2, 3))], {}),
    ("broadcast_to", [A3[:1]], dict(shape=(5, 0, 0))),
    ("broadcast_axis", [A3[:, :1]], dict(axis=(1,), size=(7,))),
    ("broadcast_like", [A3[:1], np.ones((3, 3, 4), np.float32)], {}),
    ("reshape_like", [A3, np.ones((4, 6))], {}),
    ("diag", [A3[0, 0]], dict(k=2)), ("diag", [A3], dict(k=1, axis1=2, axis2=0)),
    ("shape_array", [A3], {}), ("size_array", [A3], {}),
    ("depth_to_space", [np.ones((1, 8, 2, 3), np.float16)], dict(block_size=2)),
    ("space_to_depth", [np.ones((1, 2, 4, 6), np.int32)], dict(block_size=2)),
    ("_zeros", [], dict(shape=(2, 3), dtype="int64")), ("_ones", [], dict(shape=(4,))),
    ("_full", [], dict(shape=(2,), value=1, dtype="uint8")),
    ("_arange", [], dict(start=1, stop=4, step=0.5, repeat=2, dtype="float64")),
    ("_linspace", [], dict(start=0, stop=1, num=7)), ("_eye", [], dict(N=2, M=5, k=-1)),
    ("_zeros_without_dtype", [], dict(shape=(3,), dtype=1)),
])
def test_inference_matches_forward(name, arrays, kw):
    check_infer(name, arrays, **kw)


def test_infer_shape_full():
    assert infer("Flatten", [(2, 3, 4)])[1] == [(2, 12)]
    assert infer("transpose", [(2, 3, 4)], axes=(2, 0, 1))[1] == [(4, 2, 3)]
    assert infer("Concat", [(2, 1), (2, 3)], num_args=2, dim=1)[1] == [(2, 4)]
    assert infer("stack", [(2, 3), (2, 3)], num_args=2, axis=2)[1] == [(2, 3, 2)]
    assert infer("SliceChannel", [(2, 6)], num_outputs=3)[1] == [(2, 2)] * 3
    assert infer("split", [(3, 2)], num_outputs=3, axis=0, squeeze_axis=True)[1] == [(2,)] * 3
    assert infer("split", [(2,)], num_outputs=2, axis=0, squeeze_axis=True)[1] == [(1,)] * 2
    assert infer("_split_v2", [(2, 5)], indices=(0, 2))[1] == [(2, 2), (2, 3)]
    assert infer("slice", [(5, 4)], begin=(1, None), end=(None, -1), step=(2, 1))[1] == \
        [(2, 3)]
    assert infer("slice", [(5, 4)], begin=(1,), end=(1,))[1] == [(0, 4)]
    assert infer("slice_axis", [(5, 4)], axis=1, begin=-3, end=None)[1] == [(5, 3)]
    assert infer("slice_like", [(5, 4), (2, 3)])[1] == [(2, 3)]
    assert infer("broadcast_to", [(1, 4)], shape=(3, 0))[1] == [(3, 4)]
    assert infer("broadcast_like", [(1, 4), (3, 4)])[1] == [(3, 4)]
    assert infer("reshape_like", [(6, 2), (3, 4)])[1] == [(3, 4)]
    assert infer("diag", [(3,)], k=-1)[1] == [(4, 4)]
    assert infer("diag", [(3, 4, 5)], axis1=1, axis2=2)[1] == [(3, 4)]
    assert infer("shape_array", [(3, 4, 5)])[1] == [(3,)]
    assert infer("size_array", [(3, 4, 5)])[1] == [(1,)]
    assert infer("depth_to_space", [(1, 8, 2, 3)], block_size=2)[1] == [(1, 2, 4, 6)]
    assert infer("_zeros", [], shape=(2, 3))[1] == [(2, 3)]
    assert infer("_arange", [], start=0, stop=5, step=2, repeat=3)[1] == [(9,)]
    assert infer("_eye", [], N=3)[1] == [(3, 3)]


def test_infer_shape_partial():
    assert infer("Flatten", [None])[1] == [None]
    assert infer("Flatten", [(2, None, 4)])[1] == [(2, None)]
    assert infer("transpose", [(None, 3)])[1] == [(3, None)]
    assert infer("expand_dims", [(None, 3)], axis=1)[1] == [(None, 1, 3)]
    assert infer("tile", [(None, 3)], reps=(2, 2))[1] == [(None, 6)]
    ins, outs = infer("Concat", [(2, 3), None, (None, 4)], num_args=3, dim=1)
    assert ins == [(2, 3), (2, None), (2, 4)] and outs == [(2, None)]
    ins, outs = infer("stack", [None, (2, 3)], num_args=2, axis=0)
    assert ins == [(2, 3), (2, 3)] and outs == [(2, 2, 3)]
    assert infer("SliceChannel", [(None, 6)], num_outputs=2)[1] == [(None, 3)] * 2
    assert infer("SliceChannel", [(2, None)], num_outputs=2)[1] == [(2, None)] * 2
    assert infer("slice_axis", [(None, 4)], axis=1, begin=1, end=3)[1] == [(None, 2)]
    assert infer("slice_axis", [(5, None)], axis=1, begin=1, end=3)[1] == [(5, None)]
    assert infer("broadcast_to", [(None, 1)], shape=(0, 4))[1] == [(None, 4)]
    assert infer("shape_array", [(None, 2)])[1] == [(2,)]
    assert infer("_zeros", [], shape=(0, 3))[1] == [(None, 3)]


def test_outputs_and_types():
    op = get_op("SliceChannel")
    p = op.parse({"num_outputs": 3})
    assert op.outputs(p) == ["output0", "output1", "output2"]
    assert op.outputs(op.parse({"num_outputs": 1})) == ["output0"]
    assert op.variadic is None and get_op("Concat").variadic == "num_args"
    assert get_op("stack").variadic == "num_args"
    sa = get_op("shape_array")
    assert sa.infer_type(sa.parse({}), [np.dtype("float16")])[1] == [np.dtype("int64")]
    c = get_op("Concat")
    with pytest.raises(MXNetError):
        c.infer_type(c.parse({"num_args": 2}), [np.dtype("float32"), np.dtype("float64")])
    assert get_op("flip") is get_op("reverse")
    assert get_op("crop") is get_op("slice")
    assert get_op("broadcast_axes") is get_op("broadcast_axis")


def test_split_one_output_returns_array():
    x = nd.array(rand(2, 3))
    out = nd.split(x, num_outputs=1, axis=1)
    assert isinstance(out, mx.nd.NDArray) and out.shape == (2, 3)


def test_param_strings_from_json():
    """Parameters arrive as strings from symbol JSON."""
    x = nd.array(np.arange(24).reshape(2, 3, 4))
    out = nd.slice(x, begin="(1, None)", end="(None, 2)", step="(1, -1)")
    assert np.array_equal(out.asnumpy(), np.arange(24).reshape(2, 3, 4)[1:, :2:-1])
    assert nd.transpose(x, axes="(2, 0, 1)").shape == (4, 2, 3)
    assert nd.squeeze(nd.ones((1, 2)), axis="None").shape == (2,)


# --- errors ----------------------------------------------------------------------------------

X = nd.array(np.arange(24).reshape(2, 3, 4))


@pytest.mark.parametrize("call", [
    lambda: nd.transpose(X, axes=(0, 1)),
    lambda: nd.transpose(X, axes=(0, -1, 1)),
    lambda: nd.transpose(X, axes=(0, 0, 1)),
    lambda: nd.expand_dims(X, axis=4),
    lambda: nd.expand_dims(X, axis=-5),
    lambda: nd.squeeze(X, axis=1),
    lambda: nd.squeeze(nd.ones((2, 1)), axis=(1, 1)),
    lambda: nd.SwapAxis(X, dim1=3, dim2=0),
    lambda: nd.flip(X, axis=3),
    lambda: nd.flip(X, axis=-1),
    lambda: nd.tile(X, reps=(0, 1)),
    lambda: nd.repeat(X, repeats=-1),
    lambda: nd.repeat(X, repeats=2, axis=3),
    lambda: nd.Concat(X, nd.ones((2, 4, 4)), dim=2),
    lambda: nd.Concat(X, X, dim=3),
    lambda: nd.Concat(X, nd.ones((2, 3))),
    lambda: nd.Concat(X, X.astype("float64"), dim=0),
    lambda: nd.Concat(X, X, num_args=3),
    lambda: nd.stack(X, X, axis=4),
    lambda: nd.stack(X, nd.ones((2, 3, 5))),
    lambda: nd.split(X, num_outputs=2, axis=1),
    lambda: nd.split(X, num_outputs=2, axis=2, squeeze_axis=True),
    lambda: nd.split(X, num_outputs=2, axis=3),
    lambda: nd._internal._split_v2(X, indices=(1, 3), axis=2),
    lambda: nd.slice(X, begin=(0,), end=(2,), step=(0,)),
    lambda: nd.slice(X, begin=(0, 0, 0, 0), end=(1, 1, 1, 1)),
    lambda: nd.slice(X, begin=(0, 0), end=(1,)),
    lambda: nd.slice(X, begin=(0, 0), end=(2, 3), step=(2,)),
    lambda: nd.slice_axis(X, axis=1, begin=2, end=1),
    lambda: nd.slice_axis(X, axis=1, begin=0, end=5),
    lambda: nd.slice_axis(X, axis=1, begin=-5, end=2),
    lambda: nd.slice_axis(X, axis=3, begin=0, end=1),
    lambda: nd.slice_like(X, nd.ones((3, 2, 3))),
    lambda: nd.slice_like(X, nd.ones((1, 2))),
    lambda: nd.broadcast_to(nd.ones((3,)), shape=(2, 3)),
    lambda: nd.broadcast_to(nd.ones((2, 3)), shape=(4, 3)),
    lambda: nd.broadcast_axis(nd.ones((1, 3)), axis=(1,), size=(3,)),
    lambda: nd.broadcast_axis(nd.ones((1, 3)), axis=(-1,), size=(4,)),
    lambda: nd.broadcast_axis(nd.ones((1, 3)), axis=(0, 1), size=(3,)),
    lambda: nd.broadcast_like(nd.ones((3, 1)), nd.ones((2, 3, 4))),
    lambda: nd.broadcast_like(nd.ones((2, 3, 1)), nd.ones((5, 3, 4))),
    lambda: nd.broadcast_like(nd.ones((1, 3)), nd.ones((5, 6)), lhs_axes=(0,)),
    lambda: nd.reshape_like(X, nd.ones((6, 5))),
    lambda: nd.reshape_like(nd.ones((2, 3)), nd.ones((1, 5)), lhs_begin=1, lhs_end=1),
    lambda: nd.diag(nd.ones((3, 4)), k=5),
    lambda: nd.diag(X, axis1=1, axis2=1),
    lambda: nd.depth_to_space(nd.ones((2, 6, 2, 3)), block_size=2),
    lambda: nd.space_to_depth(nd.ones((2, 2, 3, 4)), block_size=2),
    lambda: nd.depth_to_space(nd.ones((8, 2, 3)), block_size=2),
    lambda: nd.transpose(X, bad_param=1),
    lambda: nd.tile(X),
])
def test_errors(call):
    with pytest.raises(MXNetError):
        call()

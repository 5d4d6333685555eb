"""Shape inference with partly known shapes (0 = unknown dimension; -1 under
mx.np_shape()). Expected shapes are worked out by hand from each operator's
definition (and agree with MXNet 1.9.1's infer_shape_partial)."""
import pytest

import mxnet as mx
from mxnet.executor.partial_shape import infer_node, merge_dims
from mxnet.operator.registry import get_op


@pytest.fixture(autouse=True)
def _own_names():
    """Auto-names from a private counter: other tests' expected names stay put."""
    with mx.name.NameManager():
        yield


def _partial(sym, **shapes):
    return sym.infer_shape_partial(**shapes)


def test_merge_dims():
    assert merge_dims((0, 10), (12, 0)) == (12, 10)
    assert merge_dims(None, (2, 0)) == (2, 0)
    with pytest.raises(ValueError):
        merge_dims((2, 0), (3, 0))
    with pytest.raises(ValueError):
        merge_dims((2,), (2, 1))


def test_elementwise_merges_inputs_and_outputs():
    a = mx.sym.var("a", shape=(0, 10))
    b = mx.sym.var("b", shape=(12, 0))
    args, outs, _ = (a + b).infer_shape()
    assert args == [(12, 10), (12, 10)] and outs == [(12, 10)]


def test_forward_partial_outputs():
    x = mx.sym.var("x")
    # FullyConnected: batch unknown, the weight is fully determined by the features
    args, outs, _ = _partial(mx.sym.FullyConnected(x, num_hidden=21), x=(0, 10))
    assert args == [(0, 10), (21, 10), (21,)] and outs == [(0, 21)]
    # Convolution: (H + 2*0 - 3) + 1 for the known width, unknown batch and height
    _, outs, _ = _partial(mx.sym.Convolution(x, num_filter=4, kernel=(3, 3)), x=(0, 2, 0, 8))
    assert outs == [(0, 4, 0, 6)]
    _, outs, _ = _partial(mx.sym.transpose(x, axes=(0, 3, 2, 1)), x=(0, 3, 5, 7))
    assert outs == [(0, 7, 5, 3)]
    _, outs, _ = _partial(mx.sym.sum(x, axis=0), x=(0, 8))
    assert outs == [(8,)]
    _, outs, _ = _partial(mx.sym.sum(x, axis=1), x=(0, 8))
    assert outs == [(0,)]
    # reshape's -1 depends on the unknown size: unknown
    _, outs, _ = _partial(mx.sym.reshape(x, shape=(-1, 4)), x=(0, 8))
    assert outs == [(0, 4)]


def test_inputs_that_must_agree():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    _, outs, _ = _partial(mx.sym.batch_dot(x, y), x=(0, 3, 4), y=(0, 4, 5))
    assert outs == [(0, 3, 5)]
    # the contracted dimension unknown on one side: nothing can be said
    _, outs, _ = _partial(mx.sym.batch_dot(x, y), x=(0, 3, 4), y=(0, 0, 5))
    assert outs == [()]


def test_known_outputs_flow_back():
    a = mx.sym.var("a", shape=(0, 10))
    c = mx.sym.var("c", shape=(5, 0))
    args, _, _ = (mx.sym.FullyConnected(a, num_hidden=21) + c).infer_shape()
    assert dict(zip(["a", "w", "b", "c"], args)) == {
        "a": (5, 10), "w": (21, 10), "b": (21,), "c": (5, 21)}
    a, b = mx.sym.var("a", shape=(0, 10)), mx.sym.var("b", shape=(0, 5))
    d = mx.sym.var("d", shape=(2, 0))
    args, _, _ = (d + mx.sym.Concat(a, b, num_args=2, dim=1)).infer_shape()
    assert args == [(2, 15), (2, 10), (2, 5)]


def test_backward_through_identity_with_attr_like_rhs():
    w, wshift = mx.sym.var("weight"), mx.sym.var("wshift", shape=(1,))
    wt = mx.sym._internal._identity_with_attr_like_rhs(mx.sym.broadcast_add(w, wshift), w)
    net = mx.sym.FullyConnected(mx.sym.var("data"), weight=wt, num_hidden=11, no_bias=True)
    args, _, _ = net.infer_shape(data=(7, 100))
    assert dict(zip(net.list_arguments(), args))["weight"] == (11, 100)


def test_where_needs_a_complete_condition():
    c, x, y = mx.sym.var("c"), mx.sym.var("x"), mx.sym.var("y")
    w = mx.sym.where(c, x, y)
    assert _partial(w, c=(0, 2), x=(0, 2), y=(0, 2))[1] == [()]
    assert _partial(w, c=(0,), x=(2, 2), y=(2, 2))[1] == [()]
    assert _partial(w, c=(2,), x=(2, 2), y=(2, 2))[1] == [(2, 2)]


def test_where_merges_x_y_and_output_once_the_condition_is_complete():
    # MXNet 1.9.1's infer_shape_partial gives exactly these
    c, x, y = mx.sym.var("c"), mx.sym.var("x"), mx.sym.var("y")
    w = mx.sym.where(c, x, y)
    assert _partial(w, c=(3, 2), x=(0, 2), y=(0, 2))[:2] == ([(3, 2), (0, 2), (0, 2)],
                                                             [(0, 2)])
    assert _partial(w, c=(3, 2), x=(3, 0), y=(0, 2))[:2] == ([(3, 2)] * 3, [(3, 2)])
    out = mx.sym.elemwise_add(w, mx.sym.var("z"))
    assert _partial(out, c=(3, 2), x=(0, 2), y=(0, 2), z=(3, 2))[0] == [(3, 2)] * 4
    assert _partial(out, c=(0, 2), x=(0, 2), y=(0, 2), z=(3, 2))[0] == \
        [(0, 2), (0, 2), (0, 2), (3, 2)]
    with pytest.raises(mx.MXNetError):
        _partial(w, c=(3, 2), x=(3, 0), y=(4, 2))


def test_np_shape_notation():
    x = mx.sym.var("x")
    with mx.np_shape(True):
        _, outs, _ = _partial(mx.sym.dot(x, mx.sym.var("y")), x=(-1, 3, 4), y=(4, 5))
        assert outs == [(-1, 3, 5)]
        args, outs, _ = mx.sym.sin(x).infer_shape_partial()
        assert args == [None] and outs == [None]
    args, outs, _ = mx.sym.sin(x).infer_shape_partial()
    assert args == [()] and outs == [()]


def test_infer_node_keeps_complete_answers():
    # complete inputs: the operator's own rule, untouched by probing
    op = get_op("FullyConnected")
    p = op.parse({"num_hidden": 3})
    args, outs, _ = infer_node(op, p, [(2, 4), None, None], [None])
    assert outs == [(2, 3)] and args[1] == (3, 4)


def test_slicing_an_unknown_axis_leaves_it_unknown():
    data = mx.sym.var("data", shape=(0, 20))
    out = mx.sym.slice(data, begin=(None, 3), end=(5, 10))
    assert out.infer_shape_partial()[1] == [(0, 7)]
    out = mx.sym.slice(data, begin=(2, 3), end=(None, 10), step=(3, 3))
    assert out.infer_shape_partial()[1] == [(0, 3)]
    data = mx.sym.var("data", shape=(10, 0))
    assert mx.sym.slice_axis(data, axis=0, begin=0, end=5).infer_shape_partial()[1] == [(5, 0)]
    assert mx.sym.slice_axis(data, axis=1, begin=0, end=5).infer_shape_partial()[1] == [(10, 0)]


def test_np_shape_variable_attribute():
    with mx.np_shape(True):
        data = mx.sym.var("data", shape=(-1, 20))
        out = mx.sym.slice(data, begin=(None, 3), end=(None, 10))
        assert out.infer_shape_partial()[1] == [(-1, 7)]


@pytest.mark.parametrize("first, second", [((2, 3), (-1, -1)), ((2, -1), (3, -1))])
def test_creation_shapes_learnt_through_transpose(first, second):
    # -1 in a creation op's shape is unknown; the sum fixes (2, 3), the transpose
    # carries it back as (3, 2), and the ops run with the shapes found
    t = mx.sym.transpose(mx.sym.ones(shape=second))
    ex = (mx.sym.ones(shape=first) + t).bind(mx.cpu(), args={})
    out = ex.forward()[0].asnumpy()
    assert out.shape == (2, 3) and (out == 2).all()


def test_one_unknown_dimension_solved_through_affine_outputs():
    # Reshape(-1) gives 40*u, Concat adds 7: the known total 807 gives u = 20
    w, b = mx.sym.var("w", shape=(40, 0)), mx.sym.var("b", shape=(7,))
    cat = mx.sym.concat(mx.sym.reshape(w, shape=(-1,)), b, dim=0)
    args, outs, _ = (cat + mx.sym.var("v", shape=(807,))).infer_shape()
    assert args == [(40, 20), (7,), (807,)] and outs == [(807,)]
    # a total the unknown cannot reach in whole steps leaves it unknown
    args, _, _ = (cat + mx.sym.var("v", shape=(808,))).infer_shape_partial()
    assert args[0] == (40, 0)


def test_unknown_dimension_through_a_fractional_reshape():
    # (2, u, 5, 3) reshaped to (-1, 2, 2, 1): the first output dimension is 30*u/4
    net = mx.sym.elemwise_add(mx.sym.var("data").reshape((-1, 2, 2, 1)),
                              mx.sym.ones(shape=(30, 2, 2, 1)))
    args, outs, _ = net.infer_shape(data=(2, 0, 5, 3))
    assert args[0] == (2, 4, 5, 3) and outs == [(30, 2, 2, 1)]


@pytest.mark.parametrize("args,reverse,src", [((6, 1, -2), False, (2, 3, 5, 6)),
                                              ((-4, 16, 4), False, (64,)),
                                              ((-2, 1, 30), True, (2, 3, 5, 6))])
def test_reshape_data_dim_solved_from_output_size(args, reverse, src):
    # Reshape keeps the size: a known output fills the data's one unknown dimension,
    # even one the output does not depend on
    for i in range(len(src)):
        held = tuple(0 if k == i else d for k, d in enumerate(src))
        net = mx.sym.Variable("data").reshape(args, reverse=reverse)
        dst = mx.nd.zeros(src).reshape(args, reverse=reverse).shape
        net = mx.sym.elemwise_add(net, mx.sym.ones(shape=dst))
        ins, outs, _ = net.infer_shape(data=held)
        assert ins[0] == src and outs[0] == dst

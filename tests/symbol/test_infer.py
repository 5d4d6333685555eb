"""Symbol.infer_shape / infer_shape_partial / infer_type: results and errors as in
MXNet 1.9.1 (recorded from it)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.name import NameManager


@pytest.fixture
def net():
    with NameManager():
        x = mx.sym.Variable("x")
        fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
        y = mx.sym.Variable("y")
        yield fc + y


def test_infer_shape_forward_and_from_consumers(net):
    assert net.infer_shape(x=(2, 4)) == ([(2, 4), (3, 4), (3,), (2, 3)], [(2, 3)], [])
    assert net.infer_shape((2, 4)) == ([(2, 4), (3, 4), (3,), (2, 3)], [(2, 3)], [])
    assert net.infer_shape_partial(x=(2, 4)) == ([(2, 4), (3, 4), (3,), (2, 3)],
                                                 [(2, 3)], [])


def test_incomplete_inference_warns_and_returns_none(net):
    with pytest.warns(UserWarning, match="Cannot decide shape"):
        assert net.infer_shape(y=(2, 3)) == (None, None, None)
    assert net.infer_shape_partial(y=(2, 3)) == ([(), (), (), (2, 3)], [(2, 3)], [])
    assert net.infer_shape_partial() == ([(), (), (), ()], [()], [])


def test_contradicting_shapes_name_both(net):
    with pytest.raises(MXNetError) as err:
        net.infer_shape(x=(2, 4), y=(3, 3))
    msg = str(err.value)
    assert "_plus0" in msg and "(2, 3)" in msg and "(3, 3)" in msg


def test_unknown_argument_name(net):
    with pytest.raises(MXNetError, match="zz"):
        net.infer_shape(x=(2, 4), zz=(3, 3))


def test_variable_shape_attribute_and_override():
    v = mx.sym.Variable("v", shape=(4, 5))
    r = mx.sym.relu(v)
    assert r.infer_shape() == ([(4, 5)], [(4, 5)], [])
    assert r.infer_shape(v=(4, 6)) == ([(4, 6)], [(4, 6)], [])
    # 0 marks an unknown dimension (legacy semantics), completed by inference
    w = mx.sym.Variable("w", shape=(3, 0))
    fc = mx.sym.FullyConnected(mx.sym.var("d"), weight=w, num_hidden=3, name="f")
    assert fc.infer_shape(d=(2, 7))[0] == [(2, 7), (3, 7), (3,)]


def test_elementwise_inputs_inferred_from_each_other():
    z, y = mx.sym.var("z"), mx.sym.var("y")
    assert (z + y).infer_shape(z=(2,)) == ([(2,), (2,)], [(2,)], [])
    with pytest.warns(UserWarning):
        assert mx.sym.relu(z).infer_shape() == (None, None, None)


def test_batchnorm_aux_shapes():
    with NameManager():
        bn = mx.sym.BatchNorm(mx.sym.var("data"), name="bn")
    args, outs, aux = bn.infer_shape(data=(2, 5, 3, 3))
    assert args == [(2, 5, 3, 3), (5,), (5,)]
    assert outs == [(2, 5, 3, 3)] and aux == [(5,), (5,)]


def test_infer_type(net):
    f64 = np.float64
    assert net.infer_type(x="float64") == ([f64, f64, f64, f64], [f64], [])
    assert net.infer_type(x=np.float16)[1] == [np.float16]
    with pytest.warns(UserWarning, match="Cannot decide type"):
        assert net.infer_type() == (None, None, None)
    with pytest.raises(MXNetError) as err:
        net.infer_type(x="float16", y="float32")
    assert "float16" in str(err.value) and "float32" in str(err.value)
    v = mx.sym.var("v", dtype="float64")
    assert mx.sym.relu(v).infer_type() == ([f64], [f64], [])
    assert mx.sym.var("v").astype("float16").infer_type(v="float32")[1] == [np.float16]


def test_zero_dims_of_creation_ops_inferred_from_consumers():
    # MXNet 1.9.1: a 0 in sym.zeros/ones/full's shape is unknown, filled in backwards
    z = mx.sym.zeros(shape=(0, 10))
    y = mx.sym.FullyConnected(z, num_hidden=4, name="fc") + mx.sym.var("b")
    assert y.infer_shape(b=(7, 4)) == ([(4, 10), (4,), (7, 4)], [(7, 4)], [])
    y = mx.sym.relu(mx.sym.ones(shape=(0, 3))) + mx.sym.var("b")
    assert y.infer_shape(b=(2, 3)) == ([(2, 3)], [(2, 3)], [])
    c = mx.sym.concat(mx.sym.zeros(shape=(0, 3)), mx.sym.var("b"), dim=1)
    assert c.infer_shape(b=(5, 2)) == ([(5, 2)], [(5, 5)], [])
    assert mx.sym.zeros(shape=(0, 3)).infer_shape_partial() == ([], [(0, 3)], [])
    with pytest.warns(UserWarning):
        assert mx.sym.zeros(shape=(0, 3)).infer_shape() == (None, None, None)


def test_zero_dims_of_creation_ops_run_with_the_inferred_shape():
    y = mx.sym.full(shape=(0, 3), val=2) * mx.sym.var("b")
    b = np.arange(6, dtype=np.float32).reshape(2, 3)
    exe = y.bind(mx.cpu(), {"b": mx.nd.array(b)})
    assert np.array_equal(exe.forward()[0].asnumpy(), 2 * b)
    assert '"shape": "(0, 3)"' in y.tojson()          # the graph keeps the unknown


def test_known_shapes_run_each_rule_once_and_partial_ones_until_settled(monkeypatch):
    # binding a hybridized block for a new input shape runs the shape pass on a graph
    # whose inputs are all known: each operator's rule is needed once (MXNet's pass
    # likewise visits each node once when nothing is left to infer)
    from mxnet.operator.nn.fully_connected import FullyConnected
    calls = []
    rule = FullyConnected.infer_shape

    def counted(self, p, shapes):
        calls.append([None if s is None else tuple(s) for s in shapes])
        return rule(self, p, shapes)
    monkeypatch.setattr(FullyConnected, "infer_shape", counted)
    with NameManager():
        x = mx.sym.Variable("x")
        h = mx.sym.FullyConnected(x, num_hidden=5, name="fc1")
        net = mx.sym.FullyConnected(mx.sym.relu(h), num_hidden=3, name="fc2")
    assert net.infer_shape(x=(2, 4))[1] == [(2, 3)]
    assert len(calls) == 2
    # a weight learnt from the data it multiplies still reaches every node
    calls.clear()
    arg, out, _ = net.infer_shape_partial(fc2_weight=(3, 5))
    assert out == [()] and arg[0] == ()
    arg, out, _ = net.infer_shape(x=(7, 4), fc1_weight=(5, 4))
    assert out == [(7, 3)] and arg == [(7, 4), (5, 4), (5,), (3, 5), (3,)]


def test_known_shapes_and_types_by_position_or_by_name_not_both(net):
    # MXNet 1.9.1 raises ValueError when both ways are used in one call
    for call in (net.infer_shape, net.infer_shape_partial):
        with pytest.raises(ValueError):
            call((2, 4), y=(2, 3))
    for call in (net.infer_type, net.infer_type_partial):
        with pytest.raises(ValueError):
            call(np.float32, y=np.float32)


def test_input_types_inferred_from_a_known_output_type():
    # MXNet 1.9.1 runs its type rules both ways: expected values recorded from it
    x, y = mx.sym.var("x"), mx.sym.var("y")
    fc = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    args, outs, _ = (fc + y).infer_type_partial(y="float16")
    assert args == [np.float16] * 4 and outs == [np.float16]
    args, _, aux = (mx.sym.BatchNorm(x, name="bn") + y).infer_type_partial(y="float64")
    assert args == [np.float64] * 4 and aux == [np.float64] * 2
    for unary in (mx.sym.relu, mx.sym.exp, mx.sym.transpose):
        assert (unary(x) + y).infer_type_partial(y="float16")[0] == [np.float16] * 2
    # a weight reached only through its consumer's output
    w = mx.sym.var("w")
    tied = mx.sym.FullyConnected(x, weight=mx.sym.transpose(w), num_hidden=2, no_bias=True)
    assert tied.infer_type(x="float16")[0] == [np.float16, np.float16]
    assert (mx.sym.argmax(x, axis=0) + y).infer_type_partial(y="int32")[0] == [np.int32] * 2
    # an operator whose output type does not follow the input tells nothing about it
    assert (mx.sym.cast(x, dtype="float16") + y).infer_type_partial(y="float16")[0] == \
        [None, np.float16]


def test_empty_shape_means_unknown_outside_np_shape():
    # MXNet 1.x legacy shapes: () is an unknown shape (recorded from MXNet 1.9.1)
    x, y = mx.sym.var("x"), mx.sym.var("y")
    with pytest.warns(UserWarning):
        assert (x + y).infer_shape(x=()) == (None, None, None)
    assert (x + y).infer_shape(x=(), y=(2, 3)) == ([(2, 3), (2, 3)], [(2, 3)], [])
    v = mx.sym.var("v", shape=())
    assert (v + y).infer_shape(y=(2,)) == ([(2,), (2,)], [(2,)], [])
    ex = (x + y).simple_bind(mx.cpu(), x=(), y=(2,))
    assert ex.arg_dict["x"].shape == (2,)
    with mx.np_shape(True):     # there () is a 0-d shape
        assert (x + y).infer_shape(x=(), y=()) == ([(), ()], [()], [])

"""mx.nd's generated operator functions (ndarray/register.py): a call with the same
parameters as an earlier one reuses that call's binding, and must give exactly what
binding it afresh gives (values equal under == but of other types included)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.ndarray.dispatch import invoke_by_name

nd = mx.nd
rs = np.random.RandomState(5)


def _outcome(call):
    """("ok", values) or ("error", exception type) of call()."""
    try:
        out = call()
    except (MXNetError, TypeError, ValueError) as err:
        return "error", type(err)
    outs = out if isinstance(out, (list, tuple)) else [out]
    return "ok", [o.asnumpy() for o in outs]


def _same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1] is b[1]
    else:
        for x, y in zip(a[1], b[1]):
            np.testing.assert_array_equal(x, y)


# (operator, positional parameters, keywords); neighbours differ in one value, some
# only in its type (1 / True / 1.0)
CALLS = [
    ("sum", (), {"axis": 1}), ("sum", (), {"axis": True}), ("sum", (), {"axis": 1.0}),
    ("sum", (), {"axis": (0, 1)}), ("sum", (), {"axis": 1, "keepdims": True}),
    ("sum", (), {"axis": 0, "exclude": True}),
    ("Activation", (), {"act_type": "relu"}), ("Activation", (), {"act_type": "tanh"}),
    ("clip", (), {"a_min": 0, "a_max": 1}), ("clip", (), {"a_min": 0.25, "a_max": 0.5}),
    ("log_softmax", (0,), {}), ("log_softmax", (1,), {}), ("log_softmax", (), {"axis": 0}),
    ("sum", (), {"axis": "one"}), ("Activation", (), {"act_type": "nope"}),
]


def test_repeated_calls_equal_a_fresh_binding():
    x = nd.array(rs.randn(2, 3))
    for _ in range(2):          # the second round is served by remembered bindings
        for name, pos, kw in CALLS:
            got = _outcome(lambda: getattr(nd, name)(x, *pos, **kw))
            # invoke_by_name parses the keywords itself (no front-end binding)
            fresh_kw = dict(kw, **({"axis": pos[0]} if pos else {}))
            _same(got, _outcome(lambda: invoke_by_name(name, [x], fresh_kw)))


def test_inputs_given_otherwise_are_bound_each_time():
    x, w, b = (nd.array(rs.randn(*s)) for s in ((4, 3), (2, 3), (2,)))
    want = x.asnumpy() @ w.asnumpy().T
    for _ in range(2):
        np.testing.assert_allclose(
            nd.FullyConnected(x, w, None, num_hidden=2, no_bias=True).asnumpy(), want,
            rtol=1e-5)
        np.testing.assert_allclose(
            nd.FullyConnected(x, w, b, num_hidden=2).asnumpy(), want + b.asnumpy(),
            rtol=1e-5)
        np.testing.assert_allclose(       # inputs by keyword
            nd.FullyConnected(data=x, weight=w, bias=b, num_hidden=2).asnumpy(),
            want + b.asnumpy(), rtol=1e-5)
    for _ in range(2):
        with pytest.raises(MXNetError):      # a missing input, every time
            nd.FullyConnected(x, num_hidden=2)


def test_an_operators_own_parsing_keeps_per_call_state():
    # Custom keeps each call's operator instance in its parameters: two calls with
    # the same keywords must not share them
    made = []

    class Count(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] + len(made))

    @mx.operator.register("test_register_count")
    class CountProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            made.append(1)
            return Count()

    x = nd.zeros((2,))
    nd.Custom(x, op_type="test_register_count").wait_to_read()
    nd.Custom(x, op_type="test_register_count").wait_to_read()
    assert len(made) == 2


def test_symbol_argument_is_named_assertion():
    # MXNet 1.9.1's generated nd functions: nd.X given a Symbol (nd used where F was
    # meant in a hybridized hybrid_forward) raises AssertionError naming the argument,
    # messages copied from its output
    s = mx.sym.var("x")
    cases = [(lambda: nd.expand_dims(s, axis=0), "Argument data must"),
             (lambda: nd.Dropout(s, p=0.1), "Argument data must"),
             (lambda: nd.Dropout(data=s, p=0.1), "Argument data must"),
             (lambda: nd.elemwise_add(nd.ones(1), s), "Argument rhs must"),
             (lambda: nd.concat(nd.ones(1), s, dim=0), "Positional arguments must"),
             (lambda: nd.FullyConnected(nd.ones((1, 2)), s, num_hidden=3, no_bias=True),
              "Argument weight must"),
             (lambda: nd.relu(s), "Argument data must")]
    for call, msg in cases:
        with pytest.raises(AssertionError, match=msg + r" have NDArray type, but got <Symbol x>"):
            call()

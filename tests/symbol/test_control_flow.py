"""mx.sym.contrib.foreach / while_loop / cond: the graphs they build and the symbol JSON
(against files MXNet 1.9.1 wrote for the same code), and bound runs against MXNet's
outputs and gradients, against the imperative mx.nd.contrib forms, and against NumPy.
"""
import importlib.util
from collections import defaultdict

import numpy as np
import pytest

import mxnet as mx
from mxnet.attribute import AttrScope
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal

from common import fixture_path

_spec = importlib.util.spec_from_file_location(
    "control_flow_graphs", fixture_path("control_flow", "control_flow_graphs.py"))
graphs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(graphs)
# rows of a while_loop's stacked outputs that MXNet defines (the rest it leaves unset)
_STEPS = {"while_loop": (4, 2)}


def _fixture(case):
    with open(fixture_path("control_flow", f"{case}-symbol.json")) as f:
        text = f.read()
    return text, np.load(fixture_path("control_flow", f"{case}.npz"))


def _run(sym, data, prefix, heads, steps):
    names = [k[len(prefix):] for k in data.files if k.startswith(prefix)]
    args = {k: mx.nd.array(data[prefix + k]) for k in names}
    grad_prefix = "grad_" if prefix == "in_" else "grad2_"
    grads = {k: mx.nd.zeros(args[k].shape) for k in names
             if grad_prefix + k in data.files}
    ex = sym.bind(mx.cpu(), args=args, args_grad=grads)
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    ex.backward([mx.nd.array(h) for h in heads])
    if steps is not None:
        outs[0] = outs[0][:steps]
    return outs, {k: g.asnumpy() for k, g in grads.items()}


@pytest.mark.parametrize("case", graphs.CASES)
def test_graph_and_json_match_mxnet(case):
    text, _ = _fixture(case)
    with graphs.fresh_names(mx):
        sym, _ = getattr(graphs, "build_" + case)(mx)
    assert sym.tojson() == text                      # built as MXNet builds it
    assert mx.sym.load_json(text).tojson() == text   # and read back unchanged


@pytest.mark.parametrize("step_executors", ["1", "0"])
@pytest.mark.parametrize("case", graphs.CASES)
def test_bound_run_matches_mxnet(case, step_executors, monkeypatch):
    # (foreach runs its body on step executors, or operator by operator with 0)
    monkeypatch.setenv("MXNET_FOREACH_STEP_EXECUTORS", step_executors)
    text, data = _fixture(case)
    sym = mx.sym.load_json(text)
    heads = [data[f"head_{i}"] for i in range(len(sym.list_outputs()))]
    for k, (prefix, out_prefix, grad_prefix) in enumerate(
            [("in_", "out_", "grad_"), ("in2_", "out2_", "grad2_")]):
        steps = _STEPS.get(case, (None, None))[k]
        outs, grads = _run(sym, data, prefix, heads, steps)
        for i, o in enumerate(outs):
            want = data[f"{out_prefix}{i}"]
            assert_almost_equal(o, want[:steps] if i == 0 and steps else want,
                                rtol=1e-4, atol=1e-5)
        for name, g in grads.items():
            assert_almost_equal(g, data[grad_prefix + name], rtol=1e-4, atol=1e-5)


def test_while_loop_rows_after_the_last_step_are_zero():
    _, data = _fixture("while_loop")
    sym = mx.sym.load_json(_fixture("while_loop")[0])
    outs, _ = _run(sym, data, "in2_", [data[f"head_{i}"] for i in range(3)], None)
    assert (outs[0][2:] == 0).all()


def test_infer_shape_reaches_into_the_body():
    # the state's and the weight's shapes come from the body's FullyConnected and add
    data, h = mx.sym.var("data"), mx.sym.var("h")
    out, states = mx.sym.contrib.foreach(
        lambda x, s: (mx.sym.FullyConnected(x, num_hidden=4, name="fc") + s[0],) * 2,
        data, [h])
    arg, outs, _ = mx.sym.Group([out] + states).infer_shape(data=(5, 2, 3))
    shapes = dict(zip(mx.sym.Group([out] + states).list_arguments(), arg))
    assert shapes == {"data": (5, 2, 3), "fc_weight": (4, 3), "fc_bias": (4,),
                      "h": (2, 4)}
    assert outs == [(5, 2, 4), (2, 4)]
    # unknown leading dimension, as test_foreach_with_unkown_dim
    x = mx.sym.var("x", shape=(0, 3, 8))
    o, _ = mx.sym.contrib.foreach(lambda d, s: (d + s[0], [s[0] * 2]), x, [mx.sym.var("s")])
    assert o.infer_shape_partial()[1] == [(0, 3, 8)]


def test_infer_type_follows_the_body():
    x, s = mx.sym.var("x"), mx.sym.var("s")
    o, st = mx.sym.contrib.foreach(lambda d, s: (mx.sym.cast(d, "float16"), s), x, s)
    _, outs, _ = mx.sym.Group([o, st]).infer_type(x=np.float64, s=np.int32)
    assert outs == [np.float16, np.int32]


def _bind_run(sym, values, train=False):
    ex = sym.bind(mx.cpu(), args={k: mx.nd.array(v) for k, v in values.items()})
    return [o.asnumpy() for o in ex.forward(is_train=train)]


def test_symbolic_matches_imperative_and_numpy():
    rs = np.random.RandomState(3)
    xv, wv = rs.randn(5, 3).astype(np.float32), rs.randn(3).astype(np.float32)

    def body(F):
        return lambda d, s: (F.relu(d * s[0]), [s[0] + d * 0.5])
    x, w = mx.sym.var("x"), mx.sym.var("w")
    out, st = mx.sym.contrib.foreach(body(mx.sym), x, [w])
    sym_out = _bind_run(mx.sym.Group([out] + st), {"x": xv, "w": wv})
    nd_out, nd_st = mx.nd.contrib.foreach(body(mx.nd), mx.nd.array(xv), [mx.nd.array(wv)])
    s, ref = wv.copy(), []
    for row in xv:
        ref.append(np.maximum(row * s, 0))
        s = s + row * 0.5
    assert_almost_equal(sym_out[0], np.stack(ref), atol=1e-6)
    assert_almost_equal(sym_out[1], s, atol=1e-6)
    assert_almost_equal(nd_out.asnumpy(), sym_out[0])
    assert_almost_equal(nd_st[0].asnumpy(), sym_out[1])


def test_nested_while_loop_in_foreach_gradient_against_numeric():
    # foreach over rows; each step raises its row to a power with a while_loop
    def body(d, s):
        _, (_, p) = mx.sym.contrib.while_loop(
            lambda i, p: i < 3, lambda i, p: ([], [i + 1, p * d]),
            [mx.sym.zeros((1,)), mx.sym.ones_like(d)], max_iterations=5)
        return p + s[0], [s[0] + p]
    x, s = mx.sym.var("x"), mx.sym.var("s")
    out, st = mx.sym.contrib.foreach(body, x, [s])
    sym = mx.sym.Group([out] + st)
    xv = np.random.RandomState(1).uniform(0.5, 1.5, (3, 2)).astype(np.float32)
    sv = np.array([0.25, -0.5], np.float32)
    grads = {"x": mx.nd.zeros((3, 2)), "s": mx.nd.zeros((2,))}
    ex = sym.bind(mx.cpu(), args={"x": mx.nd.array(xv), "s": mx.nd.array(sv)},
                  args_grad=grads)
    o, fs = ex.forward(is_train=True)
    cube = xv ** 3
    acc = sv + np.concatenate([[0 * sv], np.cumsum(cube, 0)[:-1]])
    assert_almost_equal(o.asnumpy(), cube + acc, rtol=1e-5)
    assert_almost_equal(fs.asnumpy(), sv + cube.sum(0), rtol=1e-5)
    ex.backward([mx.nd.ones((3, 2)), mx.nd.ones((2,))])
    # d/dx_t: 3 x_t^2 (its own output, every later output, the final state)
    later = np.array([3, 2, 1], np.float32)[:, None]
    assert_almost_equal(grads["x"].asnumpy(), 3 * xv ** 2 * (later + 1), rtol=1e-4)
    assert_almost_equal(grads["s"].asnumpy(), np.full(2, 4.0), rtol=1e-5)


def test_subgraph_names_count_per_name():
    AttrScope._subgraph_names = defaultdict(int)
    x = mx.sym.var("x")
    for _ in range(2):
        mx.sym.contrib.cond(x.sum() > 0, lambda: x * 2, lambda: x * 3, name="c")
    assert dict(AttrScope._subgraph_names) == {"c_pred": 2, "c_then": 2, "c_else": 2}


def test_result_layout_follows_the_arguments():
    d, s = mx.sym.var("d"), mx.sym.var("s")
    out, st = mx.sym.contrib.foreach(lambda x, st: (x, st), d, s)
    assert isinstance(out, mx.sym.Symbol) and isinstance(st, mx.sym.Symbol)
    out, st = mx.sym.contrib.foreach(lambda x, st: ([x], st), d, [s, [s * 1]])
    assert isinstance(out, list) and isinstance(st[1], list)
    out, vars_ = mx.sym.contrib.while_loop(lambda a: a.sum() < 9, lambda a: (None, a + 1),
                                           (s,), max_iterations=3)
    assert out == [] and isinstance(vars_, list) and len(vars_) == 1
    res = mx.sym.contrib.cond(s.sum() < 1, lambda: (s, s), lambda: (s * 2, s))
    assert isinstance(res, list) and len(res) == 2


def test_errors_name_what_is_wrong():
    d, s = mx.sym.var("d"), mx.sym.var("s")
    with pytest.raises(AssertionError, match="data arrays have to be used"):
        mx.sym.contrib.foreach(lambda x, st: (st * 2, st), d, s)
    with pytest.raises(AssertionError, match="state arrays have to be used"):
        mx.sym.contrib.foreach(lambda x, st: (x * 2, [x * 1]), d, [s])
    with pytest.raises(ValueError, match="1-th loop_var"):
        mx.sym.contrib.while_loop(lambda a, b: a < 3, lambda a, b: (None, [a + 1, a * 2]),
                                  [d, s], max_iterations=3)
    with pytest.raises(ValueError, match="max_iterations"):
        mx.sym.contrib.while_loop(lambda a: a < 3, lambda a: (None, a + 1), d)
    with pytest.raises(ValueError, match="as many"):
        mx.sym.contrib.cond(d.sum() < 0, lambda: [d, s], lambda: d)
    with pytest.raises(AssertionError, match="unique names"):
        mx.sym.contrib.foreach(lambda x, st: (x[0] + x[1], st * 1), [d, d], s)
    # a node without its subgraphs (called directly) says how to build one
    node = mx.sym._internal._foreach(d, s, num_args=3, num_outputs=1, num_out_data=1,
                                     in_data_locs=[0], in_state_locs=[1])
    with pytest.raises(MXNetError, match="needs its subgraphs"):
        node.infer_shape(d=(2, 3), s=(3,))


def test_json_with_bad_subgraphs_is_refused():
    text, _ = _fixture("cond")
    doc = __import__("json").loads(text)
    node = next(n for n in doc["nodes"] if n["op"] == "_cond")
    node["subgraphs"] = node["subgraphs"][:2]
    with pytest.raises(MXNetError, match="3 subgraph"):
        mx.sym.load_json(__import__("json").dumps(doc))
    del node["subgraphs"]
    with pytest.raises(MXNetError, match="subgraphs"):
        mx.sym.load_json(__import__("json").dumps(doc))


def test_cond_predicate_must_be_scalar():
    x = mx.sym.var("x")
    y = mx.sym.contrib.cond(x, lambda: x * 2, lambda: x * 3)
    ex = y.bind(mx.cpu(), args={"x": mx.nd.ones((2,))})
    with pytest.raises(MXNetError, match="scalar"):
        ex.forward()[0].asnumpy()
    # the engine keeps working
    ex2 = y.bind(mx.cpu(), args={"x": mx.nd.ones((1,))})
    assert ex2.forward()[0].asnumpy().tolist() == [2.0]


def test_backward_uses_the_forward_recording():
    # Dropout draws a fresh mask per call: a backward that ran the body again would
    # differentiate another mask than the outputs were made with
    x = mx.sym.var("x")
    out, _ = mx.sym.contrib.foreach(lambda d, s: (mx.sym.Dropout(d, p=0.5) + s[0] * 0, s),
                                    x, [mx.sym.var("s")])
    xv = np.random.RandomState(2).uniform(1, 2, (4, 50)).astype(np.float32)
    grad = mx.nd.zeros((4, 50))
    ex = out.bind(mx.cpu(), args={"x": mx.nd.array(xv), "s": mx.nd.zeros((50,))},
                  args_grad={"x": grad}, grad_req={"x": "write", "s": "null"})
    for _ in range(2):
        o = ex.forward(is_train=True)[0].asnumpy()
        ex.backward([mx.nd.ones((4, 50))])
        assert 0 < (o == 0).sum() < o.size
        assert_almost_equal(grad.asnumpy(), o / xv, rtol=1e-5)


def test_runs_on_a_gpu_context():
    """The bound foreach fixture on gpu(0) (the real device where CuPy sees one, else
    one emulated on the host) gives MXNet's outputs and gradients."""
    from mxnet.backend import cupy_or_none
    import contextlib
    if cupy_or_none() is not None:
        scope = contextlib.nullcontext()
    else:
        from multi_gpu_host import emulated_gpus
        scope = emulated_gpus(1)
    text, data = _fixture("foreach_rnn")
    sym = mx.sym.load_json(text)
    with scope:
        ctx = mx.gpu(0)
        args = {k[3:]: mx.nd.array(data[k], ctx=ctx) for k in data.files
                if k.startswith("in_")}
        grads = {k: mx.nd.zeros(v.shape, ctx=ctx) for k, v in args.items()}
        ex = sym.bind(ctx, args=args, args_grad=grads)
        outs = [o.asnumpy() for o in ex.forward(is_train=True)]
        ex.backward([mx.nd.array(data[f"head_{i}"], ctx=ctx) for i in range(2)])
        for i, o in enumerate(outs):
            assert_almost_equal(o, data[f"out_{i}"], rtol=1e-4, atol=1e-5)
        for k, g in grads.items():
            assert_almost_equal(g.asnumpy(), data[f"grad_{k}"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("step_executors", ["1", "0"])
def test_integer_data_and_both_foreach_paths(step_executors, monkeypatch):
    """Token ids (int64, no gradient) through an Embedding in the body: the same
    outputs and weight gradient with the body bound once per step and operator by
    operator (MXNET_FOREACH_STEP_EXECUTORS=0), as the imperative loop gives."""
    monkeypatch.setenv("MXNET_FOREACH_STEP_EXECUTORS", step_executors)
    rs = np.random.RandomState(4)
    ids = rs.randint(0, 6, (5, 3)).astype(np.int64)
    wv = rs.randn(6, 4).astype(np.float32)
    hv = rs.randn(3, 4).astype(np.float32)

    def body(F, w):
        return lambda tok, s: (F.Embedding(tok, w, input_dim=6, output_dim=4) * s[0],
                               [F.tanh(s[0] + 1)])
    w, tok, h = mx.sym.var("w"), mx.sym.var("tok", dtype="int64"), mx.sym.var("h")
    out, st = mx.sym.contrib.foreach(body(mx.sym, w), tok, [h])
    sym = mx.sym.Group([out] + st)
    args = {"w": mx.nd.array(wv), "tok": mx.nd.array(ids, dtype="int64"),
            "h": mx.nd.array(hv)}
    grads = {"w": mx.nd.zeros((6, 4)), "h": mx.nd.zeros((3, 4)),
             "tok": mx.nd.zeros((5, 3), dtype="int64")}
    ex = sym.bind(mx.cpu(), args=args, args_grad=grads)
    heads = [mx.nd.array(rs.randn(5, 3, 4)), mx.nd.array(rs.randn(3, 4))]
    for train in (False, True):
        outs = [o.asnumpy() for o in ex.forward(is_train=train)]
    ex.backward(heads)
    wi, hi = mx.nd.array(wv), mx.nd.array(hv)
    wi.attach_grad()
    hi.attach_grad()
    with mx.autograd.record():
        o, s = mx.nd.contrib.foreach(body(mx.nd, wi), mx.nd.array(ids, dtype="int64"), [hi])
        loss = (o * heads[0]).sum() + (s[0] * heads[1]).sum()
    loss.backward()
    assert_almost_equal(outs[0], o.asnumpy(), rtol=1e-5, atol=1e-6)
    assert_almost_equal(outs[1], s[0].asnumpy(), rtol=1e-5, atol=1e-6)
    assert_almost_equal(grads["w"].asnumpy(), wi.grad.asnumpy(), rtol=1e-4, atol=1e-5)
    assert_almost_equal(grads["h"].asnumpy(), hi.grad.asnumpy(), rtol=1e-4, atol=1e-5)
    assert (grads["tok"].asnumpy() == 0).all()

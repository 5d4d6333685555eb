"""Shared test helpers: the golden cases written by the real MXNet 1.9.1 and checks of
an operator's shape/type inference (operator checks themselves are tests/opcheck.py)."""
import json
import os

import numpy as np

import mxnet as mx
from mxnet.test_utils import assert_almost_equal

# Files written by the real MXNet 1.9.1, kept in the repository so a fresh clone tests
# itself with nothing beside it.
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "mxnet-1.9.1")

_cases = None


def fixture_path(*parts):
    return os.path.join(FIXTURES, *parts)


def all_fixture_cases():
    global _cases
    if _cases is None:
        with open(fixture_path("ops", "cases.json")) as f:
            _cases = json.load(f)["cases"]
    return _cases


def fixture_cases_for(*ops):
    """Names of the golden cases whose operator is one of ops (for parametrize)."""
    return [c["case"] for c in all_fixture_cases() if c["op"] in ops]


def run_fixture_case(name, rtol=1e-4, atol=1e-5):
    """Replay a golden case imperatively and compare outputs, input gradients and
    BatchNorm's updated moving statistics with what MXNet 1.9.1 produced."""
    case = next(c for c in all_fixture_cases() if c["case"] == name)
    data = np.load(fixture_path(case["file"]))
    inputs = {}
    for spec in case["inputs"]:
        arr = mx.nd.array(data[spec["key"]], dtype=spec["dtype"])
        if spec["differentiable"]:
            arr.attach_grad()
        inputs[spec["name"]] = arr
    fn = getattr(mx.nd, case["op"])
    with mx.autograd.record(train_mode=case["autograd_train_mode"]):
        if case["call"].startswith(f"mx.nd.{case['op']}(*inputs"):
            out = fn(*inputs.values(), **case["kwargs"])
        else:
            out = fn(**inputs, **case["kwargs"])
    outs = out if isinstance(out, (list, tuple)) else [out]
    assert len(outs) == case["num_outputs_returned"], \
        f"{name}: {len(outs)} outputs, MXNet returned {case['num_outputs_returned']}"
    for i, spec in enumerate(case["outputs"]):
        got = outs[i]
        assert np.dtype(got.dtype) == np.dtype(spec["dtype"]), \
            f"{name}: output {i} dtype {np.dtype(got.dtype)} vs MXNet {spec['dtype']}"
        assert_almost_equal(got.asnumpy(), data[spec["key"]], rtol=rtol, atol=atol,
                            names=(f"{name} out_{i}", "mxnet"))
    if case["grad_keys"]:
        heads = [outs[int(k.split("_")[1])] for k in case["head_grad_keys"]]
        head_grads = [mx.nd.array(data[k], dtype=h.dtype) for k, h in
                      zip(case["head_grad_keys"], heads)]
        mx.autograd.backward(heads, head_grads)
        for key in case["grad_keys"]:
            got = inputs[key[len("grad_"):]].grad
            assert_almost_equal(got.asnumpy(), data[key], rtol=rtol, atol=atol,
                                names=(f"{name} {key}", "mxnet"))
    for key in case["after_keys"]:
        assert_almost_equal(inputs[key[len("after_"):]].asnumpy(), data[key], rtol=rtol,
                            atol=atol, names=(f"{name} {key}", "mxnet"))


def check_infer(name, arrays, **kw):
    """Operator ``name``'s infer_shape/infer_type must predict every output of its
    forward on ``arrays`` (hidden outputs too) exactly."""
    from mxnet.operator.registry import OpContext, get_op
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


def infer_shapes(name, shapes, **kw):
    """(argument shapes, output shapes) operator ``name`` infers from ``shapes``
    (None: unknown), as tuples."""
    from mxnet.operator.registry import get_op
    op = get_op(name)
    ins, outs, _ = op.infer_shape(op.parse(kw), shapes)
    return [None if s is None else tuple(s) for s in ins], \
        [None if s is None else tuple(s) for s in outs]


def mentioned_words(tests_dir, skip=()):
    """Every identifier, attribute, imported name and string constant in the test
    modules under ``tests_dir`` (files named in ``skip`` left out); a dotted string
    ("linalg.det") also counts as its namespaced operator name (``_linalg_det``). The
    coverage sweeps use it to ask whether a name has some test."""
    import ast
    words = set()
    for root, _, files in os.walk(tests_dir):
        for f in files:
            if not f.endswith(".py") or f in skip:
                continue
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute):
                    words.add(node.attr)
                elif isinstance(node, ast.Name):
                    words.add(node.id)
                elif isinstance(node, ast.alias):
                    words.add(node.name.rpartition(".")[2])
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    words.add(node.value)
                    if "." in node.value:     # opcheck.Case("linalg.det", ...)
                        space, _, leaf = node.value.rpartition(".")
                        words.add(f"_{space.replace('.', '_')}_{leaf}")
                        words.add(leaf)
    return words

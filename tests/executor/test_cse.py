"""Common-subexpression elimination in bound graphs (executor/cse.py)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.executor.cse import eliminate_common_expr


@pytest.fixture(autouse=True)
def _own_names():
    """Auto-names from a private counter: other tests' expected names stay put."""
    with mx.name.NameManager():
        yield


def _count(sym):
    return len(sym.get_internals().list_outputs())


def _bind(sym, flag, monkeypatch, **shapes):
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", flag)
    return sym.simple_bind(mx.cpu(), **shapes)


@pytest.mark.parametrize("build, saved", [
    (lambda a, b: (a + 1) + (a + 2), 0),           # different parameters: kept apart
    (lambda a, b: (a + b) + (a + b), 1),
    (lambda a, b: ((a + b) * 2) + ((a + b) * 2), 2),  # merging cascades to users
    (lambda a, b: mx.sym.Group([a * b, a * b]), 0),   # merged, then a copy per output
    (lambda a, b: mx.sym.Group([a * b + b, a * b + b]), 1),
    (lambda a, b: mx.sym.Dropout(a) + mx.sym.Dropout(a), 0),  # random: never merged
])
def test_savings_and_same_results(build, saved, monkeypatch):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    sym = build(a, b)
    shapes = {n: (3, 4) for n in sym.list_arguments()}
    plain = _bind(sym, "0", monkeypatch, **shapes)
    cse = _bind(sym, "1", monkeypatch, **shapes)
    assert _count(plain.get_optimized_symbol()) == _count(sym)
    assert _count(cse.get_optimized_symbol()) + saved == _count(sym)
    if "Dropout" in sym.tojson():
        return
    rng = np.random.RandomState(0)
    data = {n: mx.nd.array(rng.uniform(-1, 1, s)) for n, s in shapes.items()}
    for ex in (plain, cse):
        outs = ex.forward(is_train=True, **data)
        ex.backward([mx.nd.ones_like(o) for o in outs])
    for x, y in zip(plain.outputs + plain.grad_arrays, cse.outputs + cse.grad_arrays):
        np.testing.assert_allclose(x.asnumpy(), y.asnumpy(), rtol=1e-6)
    # every output keeps its own array
    assert len({id(o) for o in cse.outputs}) == len(cse.outputs)


def test_caller_symbol_untouched_and_noop_returns_same():
    a = mx.sym.var("a")
    sym = (a * 2) + (a * 2)
    before = sym.tojson()
    assert _count(eliminate_common_expr(sym)) == _count(sym) - 1
    assert sym.tojson() == before
    lone = a * 2
    assert eliminate_common_expr(lone) is lone


def test_output_names_are_the_callers(monkeypatch):
    a = mx.sym.var("a")
    sym = mx.sym.Group([a * 3, a * 3])
    ex = _bind(sym, "1", monkeypatch, a=(2,))
    assert list(ex.output_dict) == sym.list_outputs()

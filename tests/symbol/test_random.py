"""mx.sym.random samplers: parameter spellings, shapes taken from the graph, seeds."""
import numpy as np

import mxnet as mx


def _run(sym, shape, seed=None):
    x = mx.nd.zeros(shape)
    ex = sym.bind(mx.cpu(), {"X": x}, {"X": mx.nd.zeros(shape)})
    if seed is not None:
        mx.random.seed(seed)
    ex.forward(is_train=True)
    return ex.outputs[0].asnumpy()


def test_exponential_takes_the_mean_scale():
    s = mx.sym.random.exponential(scale=4.0, shape=(20000,))
    assert s.attr_dict()[s.name]["lam"] == "0.25"
    mx.random.seed(3)
    ex = s.bind(mx.cpu(), {})
    ex.forward()
    assert abs(ex.outputs[0].asnumpy().mean() - 4.0) < 0.15
    # a Symbol scale goes to the per-element sampler as its rate
    lam = mx.sym.random.exponential(scale=mx.sym.var("s"), shape=(2,))
    assert "_sample_exponential" in lam.tojson() and "_rdiv_scalar" in lam.tojson()


def test_sampler_without_shape_takes_the_inferred_one():
    # (the Symbol keyword argument is ignored: the operator has no inputs, as in MXNet)
    X = mx.sym.var("X")
    y = mx.sym.random.randn(loc=10.0, scale=0.5, data=mx.sym.ones((3, 4))) + X
    out = _run(y, (300, 200), seed=1)
    assert out.shape == (300, 200)
    assert abs(out.mean() - 10.0) < 0.01 and abs(out.std() - 0.5) < 0.01


def test_seed_orders_with_executor_draws():
    # the executor's run writes the generator's engine variable, so a seed set after
    # a forward that may still be queued does not change that forward's numbers
    X = mx.sym.var("X")
    y = mx.sym.random.uniform(low=-1.5, high=3.0, shape=(50, 50)) + X
    x = mx.nd.zeros((50, 50))
    ex = y.bind(mx.cpu(), {"X": x}, {"X": mx.nd.zeros((50, 50))})
    mx.random.seed(42)
    ex.forward(is_train=True)
    ex.backward(ex.outputs[0])
    first = ex.outputs[0] - x
    mx.random.seed(42)
    ex.forward()
    second = ex.outputs[0].asnumpy()
    np.testing.assert_array_equal(first.asnumpy(), second)
    mx.random.seed(42)
    np.testing.assert_array_equal(mx.nd.random.uniform(-1.5, 3.0, shape=(50, 50)).asnumpy(),
                                  second)

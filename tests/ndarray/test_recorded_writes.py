"""Writes into given arrays while autograd records (``out=``, ``+=``, ``x[key] = v``,
``copyto``): refused where MXNet 1.9.1 refuses them, recorded where it records them.

Each case runs ``y = 2 * x`` (x a variable) and a fresh ``zeros(2)``, the write, then
``z = sum(3 * y) + sum(fresh)``: ``dz/dx`` is 6 where the write leaves ``fresh`` out of
the graph and 8 where ``fresh`` became a recorded copy of ``y``. The expectations are
MXNet 1.9.1's outcomes for the same code."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError

IN_GRAPH = "already in a computational graph"
IN_PLACE = "Inplace operations"

CASES = {
    # destination already in the graph
    "y[:] = 1": (lambda x, y, f: y.__setitem__(slice(None), 1), IN_GRAPH),
    "y[0] = 5": (lambda x, y, f: y.__setitem__(0, 5), IN_GRAPH),
    "x[:] = 2": (lambda x, y, f: x.__setitem__(slice(None), 2), IN_GRAPH),
    "x[:] = y": (lambda x, y, f: x.__setitem__(slice(None), y), IN_GRAPH),
    "y[:] = fresh": (lambda x, y, f: y.__setitem__(slice(None), f), IN_GRAPH),
    "x.copyto(y)": (lambda x, y, f: x.copyto(y), IN_GRAPH),
    "y *= 2": (lambda x, y, f: y.__imul__(2), IN_GRAPH),
    # a recorded call writing into one of its own inputs
    "fresh += y": (lambda x, y, f: f.__iadd__(y), IN_PLACE),
    "fresh[0:1] = y[0:1]": (lambda x, y, f: f.__setitem__(slice(0, 1), y[0:1]), IN_PLACE),
    # recorded copies: the gradient flows through fresh
    "fresh[:] = y": (lambda x, y, f: f.__setitem__(slice(None), y), 8.0),
    "fresh[...] = y": (lambda x, y, f: f.__setitem__(Ellipsis, y), 8.0),
    "fresh[None] = y": (lambda x, y, f: f.__setitem__(None, y), 8.0),
    "fresh[:] = reverse(y)": (lambda x, y, f: f.__setitem__(
        slice(None), mx.nd.reverse(y, axis=0)), 8.0),
    "y.copyto(fresh)": (lambda x, y, f: y.copyto(f), 8.0),
    "relu(y, out=fresh)": (lambda x, y, f: mx.nd.relu(y, out=f), 8.0),
    # nothing recorded is written: allowed, fresh stays out of the graph
    "fresh += 1": (lambda x, y, f: f.__iadd__(1), 6.0),
    "fresh[:] = ones": (lambda x, y, f: f.__setitem__(slice(None), mx.nd.ones(2)), 6.0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_write_while_recording_as_mxnet(name):
    write, expected = CASES[name]
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
        fresh = mx.nd.zeros(2)
        if isinstance(expected, str):
            with pytest.raises(MXNetError, match=expected):
                write(x, y, fresh)
            return
        write(x, y, fresh)
        z = (y * 3).sum() + (fresh * 1).sum()
    z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [expected, expected])


def test_a_broadcast_recorded_value_over_a_whole_array_is_a_recorded_copy():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    big = mx.nd.zeros((3, 2))
    with mx.autograd.record():
        big[:] = x * 2
        z = big.sum()
    z.backward()
    np.testing.assert_array_equal(big.asnumpy(), [[2.0, 4.0]] * 3)
    np.testing.assert_array_equal(x.grad.asnumpy(), [6.0, 6.0])


def test_after_backward_results_are_plain_arrays_again():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
    y.backward()
    with mx.autograd.record():
        y += 1.0                    # the graph is freed: y is a constant now
        y[0] = 7.0
        fresh = mx.nd.zeros(2)
        fresh += y
    np.testing.assert_array_equal(fresh.asnumpy(), [7.0, 5.0])
    # a variable stays in the graph
    with mx.autograd.record():
        with pytest.raises(MXNetError, match=IN_GRAPH):
            x[:] = 0


@pytest.mark.parametrize("key", [None, Ellipsis, slice(None), (slice(None), slice(None)),
                                 (Ellipsis, slice(None)), (None, slice(None))])
def test_every_key_selecting_the_whole_array_is_a_recorded_copy(key):
    # MXNet 1.9.1: x[key] = v over the whole array records a copy (v reshaped if the
    # key adds an axis, as x[None] does); the gradient of sum(2 * x) reaches v
    x = mx.nd.zeros((2, 3))
    v = mx.nd.ones(x[key].shape)
    v.attach_grad()
    with mx.autograd.record():
        x[key] = v * 3
        z = (x * 2).sum()
    z.backward()
    np.testing.assert_array_equal(x.asnumpy(), np.full((2, 3), 3.0))
    np.testing.assert_array_equal(v.grad.asnumpy(), np.full(v.shape, 6.0))


@pytest.mark.parametrize("key", [0, slice(0, 1), (slice(None), 1), [0, 1], "array"])
def test_a_recorded_value_into_part_of_an_array_is_refused(key):
    x = mx.nd.zeros((2, 3))
    if key == "array":
        key = mx.nd.array([0, 1])
    v = mx.nd.ones(x[key].shape)
    v.attach_grad()
    with mx.autograd.record():
        with pytest.raises(MXNetError, match=IN_PLACE):
            x[key] = v

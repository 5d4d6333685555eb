"""mx.util: NumPy-semantics switches (per thread), environment access, set_module."""
import threading

import pytest

import mxnet as mx
from mxnet import util


def test_np_shape_scope_sets_and_restores():
    assert not util.is_np_shape()
    with util.np_shape(True):
        assert util.is_np_shape()
        with util.np_shape(False):
            assert not util.is_np_shape()
        assert util.is_np_shape()
    assert not util.is_np_shape()


def test_set_np_shape_returns_previous_state():
    assert util.set_np_shape(True) is False
    try:
        assert util.set_np_shape(True) is True
    finally:
        assert util.set_np_shape(False) is True
    assert not mx.is_np_shape()


def test_np_shape_is_per_thread_unless_global():
    seen = []
    with util.np_shape(True):
        t = threading.Thread(target=lambda: seen.append(util.is_np_shape()))
        t.start()
        t.join()
    assert seen == [False]               # a new thread starts with its own (off) flag
    util.set_np_shape(2)                 # MXNet's global mode reaches every thread
    try:
        t = threading.Thread(target=lambda: seen.append(util.is_np_shape()))
        t.start()
        t.join()
    finally:
        util.set_np_shape(0)
    assert seen == [False, True]
    assert not util.is_np_shape()


def test_use_np_shape_decorates_functions_and_classes():
    @util.use_np_shape
    def inside():
        return util.is_np_shape()

    @util.use_np_shape
    class Thing:
        def probe(self):
            return util.is_np_shape()

    assert inside() is True
    assert Thing().probe() is True
    assert not util.is_np_shape()


def test_np_array_scope_and_use_np():
    assert not util.is_np_array()
    with util.np_array(True):
        assert util.is_np_array()
    assert not util.is_np_array()

    @util.use_np
    def inside():
        return util.is_np_array(), util.is_np_shape()
    assert inside() == (True, True)
    assert not util.is_np_shape() and not util.is_np_array()


def test_getenv_setenv_roundtrip(monkeypatch):
    monkeypatch.delenv("MXNET_CONFORMANCE_PROBE", raising=False)
    assert util.getenv("MXNET_CONFORMANCE_PROBE") is None
    util.setenv("MXNET_CONFORMANCE_PROBE", "7")
    assert util.getenv("MXNET_CONFORMANCE_PROBE") == "7"
    util.setenv("MXNET_CONFORMANCE_PROBE", None)
    assert util.getenv("MXNET_CONFORMANCE_PROBE") is None


def test_set_module_sets_dunder_module():
    @util.set_module("mxnet.somewhere")
    def f():
        return 0
    assert f.__module__ == "mxnet.somewhere"


def test_symbol_json_marks_np_shape():
    import json
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3)
    assert "is_np_shape" not in json.loads(net.tojson())["attrs"]
    with util.np_shape(True):
        assert json.loads(net.tojson())["attrs"]["is_np_shape"] == ["int", 1]

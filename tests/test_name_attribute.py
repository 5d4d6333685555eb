"""NameManager / Prefix / AttrScope: automatic names and scoped attributes, with the
names and attribute listings MXNet 1.9.1 gives (recorded from it)."""
import threading

import pytest

import mxnet as mx
from mxnet.attribute import AttrScope
from mxnet.name import NameManager, Prefix


def test_name_manager_counts_per_hint():
    with NameManager():
        x = mx.sym.var("x")
        a = mx.sym.FullyConnected(x, num_hidden=3)
        b = mx.sym.FullyConnected(a, num_hidden=3)
        c = mx.sym.relu(b)
    assert (a.name, b.name, c.name) == ("fullyconnected0", "fullyconnected1", "relu0")
    assert b.list_arguments() == ["x", "fullyconnected0_weight", "fullyconnected0_bias",
                                  "fullyconnected1_weight", "fullyconnected1_bias"]


def test_name_manager_scopes_restore_counters():
    outer = NameManager()
    with outer:
        assert NameManager.current is outer
        assert outer.get(None, "conv") == "conv0"
        with NameManager() as inner:
            assert NameManager.current is inner
            assert inner.get(None, "conv") == "conv0"
        assert outer.get(None, "conv") == "conv1"
    assert NameManager.current is not outer


def test_explicit_name_wins_and_hint_is_used_as_given():
    nm = NameManager()
    assert nm.get("mine", "conv") == "mine"
    assert nm.get(None, "dense") == "dense0"


def test_prefix_applies_to_generated_and_given_names():
    x = mx.sym.var("x")
    with Prefix("pre_"):
        z = mx.sym.FullyConnected(x, num_hidden=2)
        named = mx.sym.relu(x, name="r")
        v = mx.sym.var("v")
    assert z.list_arguments() == ["x", "pre_fullyconnected0_weight", "pre_fullyconnected0_bias"]
    assert z.name == "pre_fullyconnected0"
    assert named.name == "pre_r"
    assert v.name == "v"            # variables are named exactly as asked


def test_attr_scope_applies_and_nests():
    with AttrScope(ctx_group="dev1", foo="x"):
        w = mx.sym.Variable("w")
        with AttrScope(foo="y"):
            y = mx.sym.relu(w)
    assert w.list_attr() == {"foo": "x", "__ctx_group__": "dev1", "ctx_group": "dev1"}
    assert y.list_attr() == {"foo": "y", "__ctx_group__": "dev1", "ctx_group": "dev1"}
    assert y.attr("ctx_group") == "dev1"
    assert mx.sym.relu(mx.sym.var("q")).list_attr() == {}


def test_attr_scope_explicit_attr_overrides_scope():
    with AttrScope(group="a"):
        assert AttrScope.current.get({"group": "b"}) == {"group": "b"}
        assert AttrScope.current.get(None) == {"group": "a"}


def test_attr_scope_values_must_be_strings():
    with pytest.raises(ValueError):
        AttrScope(lr_mult=2)


def test_scopes_are_per_thread():
    seen = {}
    with NameManager(), AttrScope(x="1"):
        def worker():
            seen["attr"] = AttrScope.current.get(None)
            seen["name"] = NameManager.current.get(None, "t")
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen["attr"] == {}
    assert seen["name"].startswith("t")

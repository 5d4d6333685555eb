"""gluon.Block / HybridBlock structure: naming, parameter collection, save/load by
attribute path, hooks, apply, summary, reprs. Every name, key list, repr and message
stated as a literal here came from running the same code on MXNet 1.9.1."""
import io
import json
import contextlib

import numpy as np
import pytest

import mxnet as mx
from mxnet import gluon
from mxnet.gluon import nn
from mxnet.test_utils import assert_almost_equal


class Inner(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.fc = nn.Dense(3, in_units=2)
            self.scale = self.params.get("scale", shape=(1,), init="ones")

    def hybrid_forward(self, F, x, scale):
        return F.broadcast_mul(self.fc(x), scale)


class Outer(gluon.Block):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.body = nn.Sequential()
            with self.body.name_scope():
                self.body.add(Inner(), nn.Dense(4, in_units=3))
            self.head = nn.Dense(2, in_units=4)

    def forward(self, x):
        return self.head(self.body(x))


def test_prefixes_follow_mxnet():
    with mx.name.NameManager():
        d = nn.Dense(10)
        assert (d.prefix, d.name) == ("dense0_", "dense0")
        assert list(d.collect_params().keys()) == ["dense0_weight", "dense0_bias"]
        d2 = nn.Dense(5, activation="relu", in_units=3)
        assert d2.act.prefix == "dense1_relu_"
        assert nn.Activation("relu").prefix == "relu0_"
        assert nn.MaxPool2D().prefix == "pool0_"
        assert nn.Conv2DTranspose(4, 3).prefix == "conv0_"
        # the block counter is the symbol name counter (MXNet 1.9.1 gives relu1 here)
        assert mx.sym.relu(mx.sym.var("x")).name == "relu1"
        s = nn.HybridSequential()
        with s.name_scope():
            s.add(nn.Dense(3), nn.BatchNorm(), nn.Dense(4, in_units=3))
        assert list(s.collect_params().keys()) == [
            "hybridsequential0_dense0_weight", "hybridsequential0_dense0_bias",
            "hybridsequential0_batchnorm0_gamma", "hybridsequential0_batchnorm0_beta",
            "hybridsequential0_batchnorm0_running_mean",
            "hybridsequential0_batchnorm0_running_var",
            "hybridsequential0_dense1_weight", "hybridsequential0_dense1_bias"]
        assert s[0:2].prefix == "hybridsequential0_" and len(s[0:2]) == 2
        net = Outer()
        assert list(net.collect_params().keys()) == [
            "outer0_sequential0_inner0_scale", "outer0_sequential0_inner0_dense0_weight",
            "outer0_sequential0_inner0_dense0_bias", "outer0_sequential0_dense0_weight",
            "outer0_sequential0_dense0_bias", "outer0_dense0_weight", "outer0_dense0_bias"]
        assert list(net.collect_params(".*weight").keys()) == [
            "outer0_sequential0_inner0_dense0_weight", "outer0_sequential0_dense0_weight",
            "outer0_dense0_weight"]
        assert Outer(prefix="foo_").collect_params().keys().__iter__().__next__() == \
            "foo_sequential0_inner0_scale"
        assert Outer().prefix == "outer1_"   # a given prefix uses no counter


def test_name_counters_are_per_thread():
    import threading
    names = []

    def worker():
        names.append(nn.Dense(2).prefix)
    t = threading.Thread(target=worker)
    with mx.name.NameManager():
        nn.Dense(2)
        nn.Dense(2)
        t.start()
        t.join()
    assert names == ["dense0_"]


def test_reprs():
    with mx.name.NameManager():
        net = Outer()
    assert repr(net) == (
        "Outer(\n  (body): Sequential(\n    (0): Inner(\n      (fc): Dense(2 -> 3, linear)\n"
        "    )\n    (1): Dense(3 -> 4, linear)\n  )\n  (head): Dense(4 -> 2, linear)\n)")
    assert repr(nn.Dense(5, activation="relu", in_units=3)) == \
        "Dense(3 -> 5, Activation(relu))"
    assert repr(nn.Conv2D(4, 3, groups=2, dilation=2, in_channels=2, activation="relu",
                          use_bias=False)) == \
        ("Conv2D(1 -> 4, kernel_size=(3, 3), stride=(1, 1), dilation=(2, 2), groups=2, "
         "bias=False, Activation(relu))")
    assert repr(nn.Conv2DTranspose(4, 3, output_padding=1, strides=2, in_channels=2)) == \
        "Conv2DTranspose(4 -> 2, kernel_size=(3, 3), stride=(2, 2))"
    assert repr(nn.Conv1D(4, 3)) == "Conv1D(None -> 4, kernel_size=(3,), stride=(1,))"
    assert repr(nn.AvgPool3D()) == (
        "AvgPool3D(size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0), ceil_mode=False, "
        "global_pool=False, pool_type=avg, layout=NCDHW)")
    assert repr(nn.Dropout(0.5)) == "Dropout(p = 0.5, axes=())"
    assert repr(nn.Embedding(10, 4)) == "Embedding(10 -> 4, float32)"
    assert repr(nn.LeakyReLU(0.2)) == "LeakyReLU(0.2)"
    assert repr(nn.PReLU()) == "PReLU(\n\n)"
    assert repr(nn.InstanceNorm()) == \
        "InstanceNorm(eps=1e-05, axis=1, center=True, scale=False, in_channels=0)"
    assert repr(nn.LayerNorm()) == \
        "LayerNorm(eps=1e-05, axis=-1, center=True, scale=True, in_channels=0)"
    assert repr(nn.GroupNorm()) == "GroupNorm(eps=1e-05, num_groups=1, center=True, scale=True)"
    assert repr(nn.BatchNorm()) == ("BatchNorm(axis=1, eps=1e-05, momentum=0.9, "
                                    "fix_gamma=False, use_global_stats=False, "
                                    "in_channels=None)")
    assert repr(nn.Flatten()) == "Flatten"
    assert repr(nn.Lambda("tanh")) == "Lambda(tanh)"
    assert repr(nn.HybridLambda("tanh")) == "HybridLambda(tanh)"
    assert repr(gluon.loss.L2Loss()) == "L2Loss(batch_axis=0, w=1.0)"
    assert repr(gluon.loss.SoftmaxCELoss()) == "SoftmaxCrossEntropyLoss(batch_axis=0, w=None)"


def test_save_load_parameters_by_attribute_path(tmp_path):
    with mx.name.NameManager():
        net = Outer()
    net.initialize(mx.init.Normal(1.0))
    x = mx.nd.array(np.random.rand(2, 2))
    ref = net(x).asnumpy()
    fname = str(tmp_path / "net.params")
    net.save_parameters(fname)
    assert list(mx.nd.load(fname).keys()) == [
        "body.0.scale", "body.0.fc.weight", "body.0.fc.bias", "body.1.weight", "body.1.bias",
        "head.weight", "head.bias"]
    other = Outer()             # different prefixes: keys are attribute paths
    other.load_parameters(fname, ctx=mx.cpu())
    assert_almost_equal(other(x).asnumpy(), ref)
    # legacy files keyed by full names (collect_params().save with the prefix stripped)
    legacy = str(tmp_path / "legacy.params")
    net.collect_params().save(legacy, strip_prefix=net.prefix)
    third = Outer()
    third.load_parameters(legacy)
    assert_almost_equal(third(x).asnumpy(), ref)


def test_load_parameters_errors_and_dedup(tmp_path):
    d1 = nn.Dense(3, in_units=3)
    d2 = nn.Dense(3, in_units=3, params=d1.collect_params())
    assert d1.weight is d2.weight and list(d2.params.keys()) == [d1.prefix + "weight",
                                                                 d1.prefix + "bias"]
    seq = nn.HybridSequential()
    seq.add(d1, d2)
    seq.initialize()
    full, dedup = str(tmp_path / "s.params"), str(tmp_path / "d.params")
    seq.save_parameters(full)
    seq.save_parameters(dedup, deduplicate=True)
    assert list(mx.nd.load(full).keys()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert list(mx.nd.load(dedup).keys()) == ["1.weight", "1.bias"]
    seq.load_parameters(dedup)                       # shared: any one path suffices
    with pytest.raises(AssertionError, match="Parameter 'body.0.scale' is missing in file "
                                             ".*, which contains parameters: '0.weight', "
                                             "'0.bias', '1.weight', '1.bias'. Set "
                                             "allow_missing=True"):
        Outer().load_parameters(full)
    other = str(tmp_path / "o.params")
    Outer().collect_params().initialize()
    o = Outer()
    o.initialize()
    o.save_parameters(other)
    with pytest.raises(ValueError, match="Parameter 'body.0.scale' loaded from file .* is "
                                         "not present in ParameterDict"):
        seq.load_parameters(other, allow_missing=True)
    seq.load_parameters(other, allow_missing=True, ignore_extra=True)


def test_attribute_rules():
    with pytest.raises(ValueError, match="Children of HybridBlock must also be HybridBlock"):
        nn.HybridSequential().add(Outer())
    net = Outer()
    with pytest.raises(TypeError, match="Changing attribute type for body from"):
        net.body = nn.Dense(3)
    with pytest.raises(AssertionError, match="Overriding Parameter attribute fc_w"):
        blk = nn.Dense(2)
        blk.fc_w = gluon.Parameter("a")
        blk.fc_w = gluon.Parameter("b")


def test_apply_cast_zero_grad_register_child():
    net = Outer()
    seen = []
    assert net.apply(lambda b: seen.append(type(b).__name__)) is net
    assert seen == ["Dense", "Inner", "Dense", "Sequential", "Dense", "Outer"]
    net.initialize()
    net.cast("float64")
    assert all(p.data().dtype == np.float64 for p in net.collect_params().values())
    out = net(mx.nd.ones((1, 2), dtype="float64"))
    assert out.dtype == np.float64
    net.zero_grad()
    blk = gluon.Block()
    blk.register_child(nn.Dense(2))
    blk.register_child(nn.Dense(2), "named")
    assert list(blk._children.keys()) == ["0", "named"]


def test_summary_matches_mxnet_layout():
    with mx.name.NameManager():
        net = Outer()
    net.initialize()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        net.summary(mx.nd.ones((2, 2)))
    # printed by MXNet 1.9.1 for the same model and input
    expected = """\
--------------------------------------------------------------------------------
        Layer (type)                                Output Shape         Param #
================================================================================
               Input                                      (2, 2)               0
             Dense-1                                      (2, 3)               9
             Inner-2                                      (2, 3)               1
             Dense-3                                      (2, 4)              16
             Dense-4                                      (2, 2)              10
             Outer-5                                      (2, 2)               0
================================================================================
Parameters in forward computation graph, duplicate included
   Total params: 36
   Trainable params: 36
   Non-trainable params: 0
Shared params in forward computation graph: 0
Unique parameters in model: 36
--------------------------------------------------------------------------------
"""
    assert buf.getvalue() == expected
    net.head.hybridize()
    with pytest.raises(AssertionError, match="must not be hybridized to print summary"):
        net.summary(mx.nd.ones((2, 2)))


def test_forward_hooks_see_inputs_and_outputs():
    net = nn.Dense(2, in_units=3)
    net.initialize()
    calls = []
    net.register_forward_pre_hook(lambda b, inp: calls.append(("pre", inp[0].shape)))
    net.register_forward_hook(lambda b, inp, out: calls.append(("post", out.shape)))
    net(mx.nd.ones((4, 3)))
    assert calls == [("pre", (4, 3)), ("post", (4, 2))]


def test_deferred_init_dense_and_conv():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(3, 3), nn.Dense(4))
    net.initialize()
    with pytest.raises(gluon.DeferredInitializationError):
        net[0].weight.data()
    net(mx.nd.ones((2, 5, 6, 6)))
    assert net[0].weight.shape == (3, 5, 3, 3) and net[1].weight.shape == (4, 48)
    d = nn.Dense(3)
    d.initialize()
    with mx.np_shape(True):       # as in MXNet, a zero-size array needs np_shape
        empty = mx.nd.ones((2, 0))
    with pytest.raises(ValueError, match="Deferred initialization failed because shape "
                                         "cannot be inferred"):
        d(empty)


def test_save_and_load_model_structure(tmp_path):
    net = nn.HybridSequential()
    net.add(nn.Dense(3, in_units=2), nn.Dense(2, in_units=3))
    net.initialize()
    net.hybridize()
    x = mx.nd.ones((1, 2))
    ref = net(x).asnumpy()
    prefix = str(tmp_path / "blk")
    net.save(prefix)
    other = nn.HybridSequential()
    other.add(nn.Dense(3, in_units=2), nn.Dense(2, in_units=3))
    other.load(prefix)
    assert other._active
    assert_almost_equal(other(x).asnumpy(), ref)


def test_save_load_restores_child_keys_of_a_differently_named_model(tmp_path):
    # children registered under keys made from their (counter-based) names: a second
    # model built the same way has other keys until load() restores the saved ones
    class Chain(mx.gluon.nn.Block):
        def add(self, block):
            self._children[block.name + str(len(self._children))] = block

        def forward(self, x):
            for block in self._children.values():
                x = block(x)
            return x

    def build():
        inner = Chain()
        inner.add(nn.Dense(4))
        net = Chain()
        net.add(inner)
        net.add(nn.Dense(2))
        return net

    net = build()
    net.initialize()
    net.hybridize()
    x = mx.nd.array(np.arange(6).reshape(2, 3))
    ref = net(x).asnumpy()
    prefix = str(tmp_path / "chain")
    net.save(prefix)
    with open(prefix + "-model.json") as f:
        tree = json.load(f)
    (top_key, top), = tree.items()
    assert top_key == "chain0" and top["orig_name"] == net.name
    assert sorted(top["children"].values()) == sorted(net._children)
    other = build()
    assert list(other._children) != list(net._children)
    other.load(prefix)
    assert list(other._children) == list(net._children)
    assert_almost_equal(other(x).asnumpy(), ref)


def test_hybrid_block_needs_an_array_or_symbol_input():
    class PickOne(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b=None):
            return a if b is None else (b if a is None else a + b)

    for hybridize in (False, True):
        blk = PickOne()
        if hybridize:
            blk.hybridize()
        with pytest.raises(ValueError, match="one NDArray or one Symbol"):
            blk(None, None)
        x = mx.nd.ones((2,))
        assert_almost_equal(blk(None, x).asnumpy(), np.ones(2))
        if hybridize:       # the cached graph holds for the argument structure it saw
            with pytest.raises(ValueError, match="argument structure"):
                blk(x, x)
        else:
            assert_almost_equal(blk(x, x).asnumpy(), 2 * np.ones(2))


def test_hybridized_dynamic_shape_operator_runs_op_by_op():
    class Mask(gluon.HybridBlock):
        def hybrid_forward(self, F, data, index):
            return F.contrib.boolean_mask(data, index) * 2

    blk = Mask()
    blk.hybridize()
    data = mx.nd.array(np.arange(9).reshape(3, 3))
    index = mx.nd.array([1, 0, 1])
    data.attach_grad()
    with mx.autograd.record():
        out = blk(data, index)
    out.backward()
    assert_almost_equal(out.asnumpy(), 2 * np.arange(9).reshape(3, 3)[[0, 2]])
    assert_almost_equal(data.grad.asnumpy(), 2 * np.array([[1.0] * 3, [0.0] * 3, [1.0] * 3]))


def test_a_child_shared_by_parents_does_not_keep_the_last_parent_alive():
    import gc
    import weakref

    class Parent(gluon.HybridBlock):
        def __init__(self, child, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.child = child

        def hybrid_forward(self, F, x):
            return self.child(x) * 2

    child = nn.Dense(3, in_units=4)
    child.initialize()
    x = mx.nd.ones((2, 4))
    first = Parent(child)
    first.hybridize()
    first(x).wait_to_read()
    gone = weakref.ref(first)
    del first
    gc.collect()
    assert gone() is None
    second = Parent(child)
    assert_almost_equal(second(x), child(x) * 2)

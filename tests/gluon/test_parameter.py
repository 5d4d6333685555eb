"""gluon.Parameter, Constant and ParameterDict. Messages, reprs and behaviours below
were taken from MXNet 1.9.1 (run once as an oracle)."""
import warnings

import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd
from mxnet.gluon import Constant, Parameter, ParameterDict
from mxnet.gluon.parameter import DeferredInitializationError
from mxnet.test_utils import assert_almost_equal


def test_repr_and_defaults():
    # reprs as MXNet 1.9.1 prints them
    assert repr(Parameter("w", shape=(2, 3))) == \
        "Parameter w (shape=(2, 3), dtype=<class 'numpy.float32'>)"
    assert repr(Parameter("w", shape=3, dtype="float16")) == \
        "Parameter w (shape=(3,), dtype=float16)"
    assert repr(Constant("c", [1, 2])) == \
        "Constant c (shape=(2,), dtype=<class 'numpy.float32'>)"
    p = Parameter("w")
    assert p.shape is None and p.grad_req == "write" and p.lr_mult == 1.0


def test_initialize_data_grad_and_errors():
    p = Parameter("w", shape=(2, 3), init=mx.init.Constant(0.5))
    with pytest.raises(RuntimeError, match="Parameter 'w' has not been initialized. Note"):
        p.data()
    p.initialize()
    assert_almost_equal(p.data().asnumpy(), np.full((2, 3), 0.5, np.float32))
    assert_almost_equal(p.grad().asnumpy(), np.zeros((2, 3), np.float32))
    assert p.list_ctx() == [mx.cpu()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p.initialize()
    assert "Parameter 'w' is already initialized, ignoring. Set force_reinit=True to " \
           "re-initialize." in str(caught[0].message)
    p.initialize(mx.init.One(), force_reinit=True)
    assert p.data().asnumpy().sum() == 6
    with pytest.raises(RuntimeError, match=r"Parameter 'w' was not initialized on context "
                                           r"cpu\(1\). It was only initialized on \[cpu\(0\)\]."):
        p.data(mx.cpu(1))
    with pytest.raises(AssertionError, match="grad_req must be one of 'write', 'add', or "
                                             "'null', but got 'foo'"):
        p.grad_req = "foo"
    with pytest.raises(ValueError, match=r"Cannot initialize Parameter 'q' because it has "
                                         r"invalid shape: \(2, 0\)."):
        Parameter("q", shape=(2, 0)).initialize()


def test_deferred_initialization():
    p = Parameter("w", shape=(2, 0), allow_deferred_init=True)
    p.initialize(init=mx.init.One(), ctx=mx.cpu(1))
    assert p.list_ctx() == [mx.cpu(1)]
    with pytest.raises(DeferredInitializationError, match="initialization was deferred"):
        p.data()
    assert issubclass(DeferredInitializationError, mx.base.MXNetError)
    p.shape = (2, 5)
    with pytest.raises(AssertionError, match=r"Expected shape \(3, 5\) is incompatible with "
                                             r"given shape \(2, 5\)."):
        p.shape = (3, 5)
    p._finish_deferred_init()
    assert p.data().shape == (2, 5) and p.data().context == mx.cpu(1)
    assert p.data().asnumpy().sum() == 10


def test_unknown_dims_read_as_minus_one_under_np_shape(tmp_path):
    # MXNet 1.9.1 after npx.set_np(): nn.Dense(1).weight.shape == (1, -1) and
    # repr(nn.Dense(256)) == 'Dense(-1 -> 256, linear)'; legacy mode keeps 0.
    from mxnet.gluon import nn
    dense = nn.Dense(256)
    assert dense.weight.shape == (256, 0)
    mx.npx.set_np()
    try:
        assert dense.weight.shape == (256, -1)
        assert repr(dense) == "Dense(-1 -> 256, linear)"
        assert "shape=(256, -1)" in repr(dense.weight)
        dense.initialize()          # still deferred, -1 must not be taken as a size
        assert dense(mx.np.ones((2, 7))).shape == (2, 256)
        assert dense.weight.shape == (256, 7)
        # loading into a parameter whose input size is unknown fills it in
        dense.save_parameters(str(tmp_path / "d.params"))
        fresh = nn.Dense(256)
        fresh.load_parameters(str(tmp_path / "d.params"))
        assert fresh.weight.shape == (256, 7)
        # sharing the params of a layer whose input size is still unknown
        shared = nn.Dense(8)
        tied = nn.Dense(8, params=shared.params)
        tied.initialize()
        assert tied(mx.np.ones((2, 5))).shape == (2, 8) and shared.weight.shape == (8, 5)
    finally:
        mx.npx.reset_np()


def test_initializer_gets_np_array_in_np_mode():
    # MXNet 1.9.1: under npx.set_np() a custom Initializer's _init_weight receives an
    # mx.np.ndarray, so NumPy-style code (multiplying by a bool mask) works.
    from mxnet.gluon import nn

    seen = []

    class MaskInit(mx.init.Initializer):
        def _init_weight(self, name, data):
            seen.append(type(data))
            data[:] = mx.np.arange(data.size).reshape(data.shape) - 5
            data *= mx.np.abs(data) >= 3

    mx.npx.set_np()
    try:
        dense = nn.Dense(3)
        dense.initialize(MaskInit())
        dense(mx.np.ones((1, 4)))
        assert seen == [mx.np.ndarray]
        ref = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
        np.testing.assert_array_equal(dense.weight.data().asnumpy(), ref * (np.abs(ref) >= 3))
    finally:
        mx.npx.reset_np()
    legacy = nn.Dense(3, in_units=4)
    legacy.initialize(mx.init.Constant(2))
    assert float(legacy.weight.data().asnumpy().sum()) == 24.0


def test_grad_req_null_add_and_differentiable():
    p = Parameter("a", shape=(2,))
    p.initialize()
    p.grad_req = "null"
    with pytest.raises(RuntimeError, match="because grad_req='null'"):
        p.grad()
    p.grad_req = "add"
    x = p.data()
    for _ in range(2):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    assert_almost_equal(p.grad().asnumpy(), 4 * x.asnumpy())
    p.zero_grad()
    assert p.grad().asnumpy().sum() == 0
    q = Parameter("q", shape=(2,), differentiable=False)
    q.grad_req = "write"
    assert q.grad_req == "null"


def test_cast_reset_ctx_set_data_and_var():
    p = Parameter("a", shape=(2, 2), lr_mult=2.0, init=mx.init.Normal(0.1))
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    p.set_data(mx.nd.ones((2, 2)) * 3)
    assert all(d.asnumpy().sum() == 12 for d in p.list_data())
    p.cast("float16")
    assert p.data(mx.cpu(1)).dtype == np.float16 and p.grad(mx.cpu(0)).dtype == np.float16
    p.reset_ctx(mx.cpu(2))
    assert p.list_ctx() == [mx.cpu(2)] and p.grad().context == mx.cpu(2)
    assert p.data().asnumpy().sum() == 12
    # attributes of the symbol variable, as MXNet 1.9.1 lists them
    attrs = Parameter("r", shape=(2,), lr_mult=2.0, init=mx.init.Normal(0.1)).var().list_attr()
    assert attrs["__shape__"] == "(2,)" and attrs["__dtype__"] == "0"
    assert attrs["__lr_mult__"] == "2.0" and attrs["__wd_mult__"] == "1.0"
    assert attrs["__init__"] == '["normal", {"sigma": 0.1}]'
    assert attrs["__storage_type__"] == "0"


def test_load_init_dtype_and_shape_checks():
    src = Parameter("a", shape=(2,), dtype="float64")
    src.initialize(init=mx.init.Constant(3))
    dst = Parameter("a", shape=(2,))
    with pytest.raises(AssertionError, match="dtype incompatible expected <class "
                                             "'numpy.float32'> vs saved <class "
                                             "'numpy.float64'>"):
        dst._load_init(src.data(), None)
    dst._load_init(src.data(), None, cast_dtype=True)
    assert dst.data().dtype == np.float32 and dst.data().asnumpy().tolist() == [3, 3]
    other = Parameter("a", shape=(3,))
    with pytest.raises(AssertionError, match="shape incompatible"):
        other._load_init(src.data(), None, cast_dtype=True)


def test_constant():
    c = Constant("c", [[1, 2]])
    assert c.grad_req == "null"
    c.initialize()
    assert c.data().asnumpy().tolist() == [[1, 2]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c.grad_req = "write"
    assert "does not support grad_req other than \"null\"" in str(caught[0].message)
    assert c.grad_req == "null"


def test_parameter_dict_get_merge_and_errors():
    pd = ParameterDict("net_")
    w = pd.get("w", shape=(3, 0), init="ones")
    assert pd.get("w", shape=(0, 4)) is w and w.shape == (3, 4)
    with pytest.raises(AssertionError, match="desired attribute does not match with stored "
                                             "for attribute 'shape': desired '\\(5, 4\\)' "
                                             "vs stored '\\(3, 4\\)'"):
        pd.get("w", shape=(5, 4))
    with pytest.raises(AssertionError, match="attribute 'init': desired 'zeros' vs "
                                             "stored 'ones'"):
        pd.get("w", init="zeros")
    c = pd.get_constant("c", [[1, 2]])
    assert pd.get_constant("c") is c
    with pytest.raises(KeyError, match="No constant named 'net_d'"):
        pd.get_constant("d")
    assert repr(pd) == ("net_ (\n  Parameter net_w (shape=(3, 4), dtype=<class "
                        "'numpy.float32'>)\n  Constant net_c (shape=(1, 2), dtype=<class "
                        "'numpy.float32'>)\n)")
    shared = ParameterDict("net_", shared=pd)
    assert shared.get("w") is w
    other = ParameterDict("x_")
    other.get("w", shape=(1,))
    bad = ParameterDict()
    bad._params["net_w"] = Parameter("net_w")
    with pytest.raises(AssertionError, match="different Parameters with the same name "
                                             "'net_w'"):
        pd.update(bad)
    pd.update(other)
    assert list(pd.keys()) == ["net_w", "net_c", "x_w"]


def test_parameter_dict_initialize_save_load(tmp_path):
    pd = ParameterDict("net_")
    pd.get("w", shape=(3, 4), init="ones")
    pd.get_constant("c", [[1, 2]])
    pd.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    assert pd.list_ctx() == [mx.cpu(0), mx.cpu(1)]
    pd["net_w"].set_data(mx.nd.ones((3, 4)) * 2)
    fname = str(tmp_path / "pd.params")
    pd.save(fname, strip_prefix="net_")
    assert list(mx.nd.load(fname).keys()) == ["w", "c"]
    with pytest.raises(ValueError, match="Prefix 'xx' is to be striped before saving, but "
                                         "Parameter's name 'net_w' does not start with 'xx'"):
        pd.save(str(tmp_path / "x.params"), strip_prefix="xx")
    pd2 = ParameterDict("net_")
    pd2.get("w", shape=(3, 0))
    pd2.get_constant("c", [[1, 2]])
    pd2.load(fname, restore_prefix="net_")
    assert pd2["net_w"].shape == (3, 4) and pd2["net_w"].list_ctx() == [mx.cpu()]
    assert pd2["net_w"].data().asnumpy().sum() == 24
    with pytest.raises(AssertionError, match="Parameter 'net_w' is missing in file: .*, "
                                             "which contains parameters: 'w', 'c'"):
        pd2.load(fname)
    pd3 = ParameterDict("net_")
    pd3.get("zz", shape=(1,))
    with pytest.raises(AssertionError, match="Parameter 'zz' is missing"):
        pd3.load(fname, restore_prefix="net_")
    pd3.load(fname, restore_prefix="net_", allow_missing=True, ignore_extra=True)
    pd.zero_grad()
    pd.setattr("lr_mult", 0.5)
    assert all(p.lr_mult == 0.5 for p in pd.values())
    pd.reset_ctx(mx.cpu(3))
    assert pd.list_ctx() == [mx.cpu(3)]


def test_load_cast_dtype_saved_casts_the_values_held(tmp_path):
    fname = str(tmp_path / "p.params")
    saved = ParameterDict("")
    saved.get("w0", shape=(3, 4), dtype="float32")
    saved.get("w1", shape=(3, 4), dtype="int8")
    saved.initialize(mx.init.One())
    saved.save(fname)
    held = ParameterDict("")
    held.get("w0", shape=(3, 4), dtype="float16")
    held.get("w1", shape=(3, 4), dtype="float64")
    held.load(fname, cast_dtype=True, dtype_source="current")
    assert held["w0"].data().dtype == np.float16 and held["w1"].data().dtype == np.float64
    # already initialised: adopting the saved types casts the values (and gradients)
    held.load(fname, cast_dtype=True, dtype_source="saved")
    assert held["w0"].data().dtype == np.float32 and held["w1"].data().dtype == np.int8
    assert held["w0"].grad().dtype == np.float32
    np.testing.assert_array_equal(held["w1"].data().asnumpy(), np.ones((3, 4), np.int8))


def test_data_on_gives_what_data_gives():
    """The hybridized call's gathering of parameter inputs (parameter.data_on): the
    arrays data(ctx) returns, on each context, and data()'s errors where a parameter
    is not on the context or still deferred; mx.np arrays in NumPy mode."""
    from mxnet.gluon.parameter import data_on
    ctxs = [mx.cpu(0), mx.cpu(1)]
    a, b = Parameter("a", shape=(2, 3)), Parameter("b", shape=(4,))
    a.initialize(ctx=ctxs)
    b.initialize(ctx=ctxs[1])
    for c in ctxs:
        got = data_on([a], c)
        assert len(got) == 1 and got[0] is a.data(c)
    assert [x is y for x, y in zip(data_on([a, b], ctxs[1]),
                                   [a.data(ctxs[1]), b.data(ctxs[1])])] == [True, True]
    with pytest.raises(RuntimeError, match="not initialized on context"):
        data_on([a, b], ctxs[0])
    late = Parameter("late", shape=(0, 3), allow_deferred_init=True)
    late.initialize(ctx=ctxs[0])
    with pytest.raises(DeferredInitializationError):
        data_on([a, late], ctxs[0])
    with mx.util.np_array(True):
        got = data_on([a], ctxs[0])[0]
        assert isinstance(got, mx.np.ndarray)
        np.testing.assert_array_equal(got.asnumpy(), a.data(ctxs[0]).asnumpy())

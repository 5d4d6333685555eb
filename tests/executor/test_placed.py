"""Model parallelism: ``group2ctx`` placing ctx groups of one graph on a CPU and a GPU,
or on two GPUs (executor/placed.py). Without a GPU, two GPUs are emulated on the host
(tests/multi_gpu_host.py); on a machine with GPUs the cases its GPUs allow run on them.
Every array's device is checked, and every number must equal the same graph bound to
one CPU."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.backend import cupy_or_none
from mxnet.base import MXNetError
from mxnet.executor.placed import PlacedExecutor

from multi_gpu_host import emulated_gpus, host_copies

REAL_GPUS = cupy_or_none() is not None


@pytest.fixture
def two_gpus():
    """The number of GPUs the test may use: the machine's, else two emulated ones."""
    if REAL_GPUS:
        yield mx.context.num_gpus()
    else:
        with emulated_gpus(2):
            yield 2


def _needs(count, available):
    if available < count:
        pytest.skip(f"needs {count} GPUs")


def _on(arr, ctx):
    """arr lives on ctx (its context, and its memory's device)."""
    assert arr.context.device_type == ctx.device_type
    arr.wait_to_read()
    data = arr._data
    device = None if isinstance(data, np.ndarray) else data.device.id
    assert device == (ctx.device_id if ctx.device_type == "gpu" else None)


def _chain(dtype):
    """(data1 + data2) * 3 in group dev1, + data3 in group dev2."""
    d1, d2, d3 = (mx.sym.Variable(f"data{i}", dtype=dtype) for i in (1, 2, 3))
    with mx.AttrScope(ctx_group="dev1"):
        net = (d1 + d2) * dtype(3)
    with mx.AttrScope(ctx_group="dev2"):
        net = net + d3
    return net


PAIRS = [("cpu", 0), (0, "cpu"), (0, 1), (1, 0)]


def _ctx(k):
    return mx.cpu() if k == "cpu" else mx.gpu(k)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("pair", PAIRS)
def test_chain_over_two_devices_equals_one_cpu(two_gpus, pair, dtype):
    _needs(1 + max(k for k in pair if k != "cpu"), two_gpus)
    ctx1, ctx2 = (_ctx(k) for k in pair)
    net = _chain(dtype)
    rng = np.random.RandomState(0)
    values = [rng.uniform(-1, 1, (4, 5)).astype(dtype) for _ in range(3)]
    places = [ctx1, ctx1, ctx2]
    args = [mx.nd.array(v, ctx=c, dtype=dtype) for v, c in zip(values, places)]
    grads = [mx.nd.zeros((4, 5), ctx=c, dtype=dtype) for c in places]
    ex = net.bind(ctx1, args=args, args_grad=grads, group2ctx={"dev1": ctx1, "dev2": ctx2})
    if ctx1.device_type != ctx2.device_type or ctx1.device_id != ctx2.device_id:
        assert isinstance(ex, PlacedExecutor)
    ref = net.bind(mx.cpu(), args=[mx.nd.array(v, dtype=dtype) for v in values],
                   args_grad=[mx.nd.zeros((4, 5), dtype=dtype) for _ in values])
    head = np.random.RandomState(1).uniform(-1, 1, (4, 5)).astype(dtype)
    ex.forward(is_train=True)
    ex.backward([mx.nd.array(head, ctx=ctx1, dtype=dtype)])
    ref.forward(is_train=True)
    ref.backward([mx.nd.array(head, dtype=dtype)])
    _on(ex.outputs[0], ctx2)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), rtol=1e-6)
    for g, r, c in zip(ex.grad_arrays, ref.grad_arrays, places):
        _on(g, c)
        np.testing.assert_allclose(g.asnumpy(), r.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(ex.grad_arrays[0].asnumpy(), 3 * head.astype(np.float64),
                               rtol=1e-3)


def _mlp():
    data = mx.sym.Variable("data")
    with mx.AttrScope(ctx_group="dev1"):
        h = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
        h = mx.sym.BatchNorm(h, name="bn")
        h = mx.sym.Activation(h, act_type="relu")
    with mx.AttrScope(ctx_group="dev2"):
        out = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
        out = mx.sym.SoftmaxOutput(out, name="softmax")
    return out


def test_simple_bind_places_arrays_and_trains_like_one_cpu(two_gpus):
    """simple_bind puts each variable on its group's device; forward/backward (a loss
    head, BatchNorm's moving statistics) equal one CPU's, twice in a row."""
    _needs(2, two_gpus)
    sym = _mlp()
    group2ctx = {"dev1": mx.gpu(0), "dev2": mx.gpu(1)}
    ex = sym.simple_bind(mx.gpu(0), data=(6, 4), group2ctx=group2ctx)
    ref = sym.simple_bind(mx.cpu(), data=(6, 4))
    assert isinstance(ex, PlacedExecutor)
    for name in ("fc1_weight", "bn_gamma", "data"):
        _on(ex.arg_dict[name], mx.gpu(0))
    for name in ("fc2_weight", "softmax_label"):
        _on(ex.arg_dict[name], mx.gpu(1))
    _on(ex.aux_dict["bn_moving_mean"], mx.gpu(0))
    rng = np.random.RandomState(2)
    init = {n: rng.uniform(-0.5, 0.5, a.shape).astype(np.float32)
            for n, a in ref.arg_dict.items()}
    init["softmax_label"] = np.array([0, 1, 2, 0, 1, 2], np.float32)
    for n, v in init.items():
        ex.arg_dict[n][:] = mx.nd.array(v, ctx=ex.arg_dict[n].context)
        ref.arg_dict[n][:] = v
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward()
        ref.forward(is_train=True)
        ref.backward()
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), rtol=1e-5)
    for n in init:
        if ref.grad_dict[n] is not None:
            np.testing.assert_allclose(ex.grad_dict[n].asnumpy(), ref.grad_dict[n].asnumpy(),
                                       rtol=1e-4, atol=1e-6, err_msg=n)
    for n in ref.aux_dict:
        np.testing.assert_allclose(ex.aux_dict[n].asnumpy(), ref.aux_dict[n].asnumpy(),
                                   rtol=1e-5, err_msg=n)
    ex.forward(is_train=False)                 # inference: the moving statistics
    ref.forward(is_train=False)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), rtol=1e-5)


@pytest.mark.skipif(REAL_GPUS, reason="counts host reads of emulated GPUs")
def test_copies_between_the_two_gpus_skip_the_host(two_gpus):
    sym = _mlp()
    ex = sym.simple_bind(mx.gpu(0), data=(6, 4),
                         group2ctx={"dev1": mx.gpu(0), "dev2": mx.gpu(1)})
    mx.nd.waitall()
    with host_copies() as copied:
        ex.forward(is_train=True)
        ex.backward()
        mx.nd.waitall()
    assert copied == []


def test_grad_req_add_accumulates_and_a_head_gradient_is_required(two_gpus):
    _needs(1, two_gpus)
    net = _chain(np.float32)
    g2c = {"dev1": mx.cpu(), "dev2": mx.gpu(0)}
    ex = net.simple_bind(mx.cpu(), grad_req="add", group2ctx=g2c,
                         data1=(2, 3), data2=(2, 3), data3=(2, 3))
    for a in ex.arg_arrays:
        a[:] = 1
    with pytest.raises(MXNetError, match="forward"):
        ex.backward([mx.nd.ones((2, 3))])
    ex.forward(is_train=True)
    with pytest.raises(MXNetError, match="head_gradient is required"):
        ex.backward()
    for _ in range(2):
        ex.backward([mx.nd.ones((2, 3))])
    np.testing.assert_allclose(ex.grad_dict["data1"].asnumpy(), np.full((2, 3), 6.0))
    np.testing.assert_allclose(ex.grad_dict["data3"].asnumpy(), np.full((2, 3), 2.0))
    _on(ex.grad_dict["data3"], mx.gpu(0))


@pytest.mark.parametrize("data_parallel", [False, True])
def test_module_with_group2ctxs_over_two_gpus_fits_like_the_cpu(two_gpus, data_parallel):
    """Module(group2ctxs=...) trains a model split over two GPUs to the numbers of the
    same model on the CPU; with two contexts, each holding the model split the other
    way round (data and model parallel), as on two CPU contexts."""
    _needs(2, two_gpus)
    rng = np.random.RandomState(4)
    x = rng.uniform(-1, 1, (24, 4)).astype(np.float32)
    y = rng.randint(0, 3, 24).astype(np.float32)

    def fit(**placement):
        mx.random.seed(7)
        it = mx.io.NDArrayIter(x, y, batch_size=6)
        mod = mx.mod.Module(_mlp(), **placement)
        mod.fit(it, num_epoch=2, optimizer="sgd", initializer=mx.init.Xavier(),
                optimizer_params={"learning_rate": 0.1, "momentum": 0.9}, kvstore="device")
        return mod.get_params()
    gpu0, gpu1 = mx.gpu(0), mx.gpu(1)
    if data_parallel:
        args, aux = fit(context=[gpu0, gpu1], group2ctxs=[{"dev1": gpu0, "dev2": gpu1},
                                                          {"dev1": gpu1, "dev2": gpu0}])
        ref_args, ref_aux = fit(context=[mx.cpu(0), mx.cpu(1)])
    else:
        args, aux = fit(context=[gpu0], group2ctxs={"dev1": gpu0, "dev2": gpu1})
        ref_args, ref_aux = fit(context=[mx.cpu()])
    for n in ref_args:
        np.testing.assert_allclose(args[n].asnumpy(), ref_args[n].asnumpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=n)
    for n in ref_aux:
        np.testing.assert_allclose(aux[n].asnumpy(), ref_aux[n].asnumpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=n)


def test_monitor_sees_every_operator_output(two_gpus):
    _needs(1, two_gpus)
    net = _chain(np.float32)
    ex = net.simple_bind(mx.cpu(), group2ctx={"dev1": mx.cpu(), "dev2": mx.gpu(0)},
                         data1=(2, 2), data2=(2, 2), data3=(2, 2))
    ref = net.simple_bind(mx.cpu(), data1=(2, 2), data2=(2, 2), data3=(2, 2))
    seen, ref_seen = [], []
    ex.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=True)
    ref.set_monitor_callback(lambda name, arr: ref_seen.append(name), monitor_all=True)
    ex.forward()
    ref.forward()
    mx.nd.waitall()
    assert seen == ref_seen and seen


@pytest.mark.parametrize("how", ["bind", "simple_bind"])
def test_binding_builds_the_graph_once(two_gpus, how, monkeypatch):
    # bind, the executor factory and PlacedExecutor share one Graph and its placement
    from mxnet.executor import bind as bind_module
    from mxnet.executor import graph as graph_module
    built, placed = [], []
    real_init = graph_module.Graph.__init__
    monkeypatch.setattr(graph_module.Graph, "__init__",
                        lambda self, *a, **k: built.append(1) or real_init(self, *a, **k))
    from mxnet.executor import placement as placement_module
    real_place = placement_module.place_nodes
    for module in (bind_module, placement_module):
        monkeypatch.setattr(module, "place_nodes",
                            lambda *a: placed.append(1) or real_place(*a))
    net = _chain(np.float32)
    group2ctx = {"dev1": mx.cpu(), "dev2": mx.gpu(0)}
    shapes = {f"data{i}": (2, 3) for i in (1, 2, 3)}
    if how == "bind":
        args = {k: mx.nd.ones(s, ctx=mx.cpu() if k != "data3" else mx.gpu(0))
                for k, s in shapes.items()}
        ex = net.bind(mx.cpu(), args, group2ctx=group2ctx)
    else:
        ex = net.simple_bind(mx.cpu(), group2ctx=group2ctx, **shapes)
    assert isinstance(ex, PlacedExecutor)
    assert len(built) == 1
    assert len(placed) == 1

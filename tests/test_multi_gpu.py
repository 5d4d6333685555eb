"""Multi-GPU placement: work for ``mx.gpu(k)`` runs on device k and its arrays live
there, as in MXNet. Two GPUs are emulated on the host (tests/multi_gpu_host.py: CuPy's
device rule on NumPy arrays tagged with their device), so the d2l book's data-parallel
training, Module over several contexts and KVStore('device') are checked here without
GPUs: every array of gpu(k) must be in device k's memory, and every number must equal
the same training on one CPU. Skipped where a real GPU is present (the emulation would
stand in for CuPy there)."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd, gluon, nd
from mxnet.backend import cupy_or_none

from multi_gpu_host import (DeviceMismatch, device_of, emulated_gpus, host_copies,
                            stream_waits)

pytestmark = pytest.mark.skipif(cupy_or_none() is not None,
                                reason="a real GPU is present: the emulation stands aside")


@pytest.fixture
def two_gpus():
    with emulated_gpus(2) as cp:
        yield cp


def test_the_emulation_keeps_cupys_contract(two_gpus):
    cp = two_gpus
    with cp.cuda.Device(1):
        a = cp.ones(3)
    assert a.device_id == 1 and not isinstance(a, np.ndarray)
    with pytest.raises(DeviceMismatch):
        a + 1
    with cp.cuda.Device(1):
        assert (a + 1).device_id == 1
        with pytest.raises(TypeError):
            a + np.ones(3)              # a host array in a kernel
        with pytest.raises(TypeError):
            a[:] = np.ones(3)           # host data assigned into device memory
        assert isinstance(a.sum(), cp.ndarray)     # reductions stay on the device
    with pytest.raises(TypeError):
        np.asarray(a)                   # no implicit conversion to the host
    np.testing.assert_array_equal(a.get(), np.ones(3))


@pytest.mark.parametrize("k", [0, 1])
def test_arrays_and_operators_live_on_their_gpu(two_gpus, k):
    ctx = mx.gpu(k)
    a = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3), ctx=ctx)
    for made in (nd.ones((2, 3), ctx=ctx), nd.zeros((4,), ctx=ctx),
                 nd.random.uniform(shape=(3,), ctx=ctx), a, a * 2 + 1,
                 nd.dot(a, a.T), a.sum(axis=1), nd.concat(a, a, dim=0), a[1], a.copy()):
        assert made.context == ctx
        assert device_of(made) == k
    np.testing.assert_allclose(nd.dot(a, a.T).asnumpy(),
                               a.asnumpy() @ a.asnumpy().T)
    b = nd.zeros((2, 3), ctx=ctx)
    b[:] = a + 1                # __setitem__ and out= write on the array's device
    nd.elemwise_add(a, a, out=b)
    assert device_of(b) == k
    np.testing.assert_allclose(b.asnumpy(), 2 * a.asnumpy())


def test_an_operator_on_a_gpu_asks_the_driver_for_the_device_once(two_gpus, monkeypatch):
    # invoke enters the device's scope; the runner under it must not ask again (a
    # driver call per operator is host time on the no-graph path)
    rt = two_gpus.cuda.runtime
    asked = []
    real = rt.getDevice
    monkeypatch.setattr(rt, "getDevice", lambda: asked.append(1) or real())
    for k in (0, 1):
        a, x, w = nd.ones((4,), ctx=mx.gpu(k)), nd.ones((1, 4), ctx=mx.gpu(k)), \
            nd.ones((2, 4), ctx=mx.gpu(k))
        del asked[:]
        nd.relu(a)
        a + a
        nd.FullyConnected(x, w, num_hidden=2, no_bias=True)
        assert len(asked) == 3


def test_copies_between_gpus_land_on_the_target(two_gpus):
    """... straight from one device to the other: nothing goes through the host."""
    a = nd.array([1.0, 2.0, 3.0], ctx=mx.gpu(0))
    nd.waitall()
    with host_copies() as copied:
        b = a.copyto(mx.gpu(1))
        c = a.as_in_context(mx.gpu(1))
        d = nd.zeros((3,), ctx=mx.gpu(1))
        a.copyto(d)
        t = a.T.copyto(mx.gpu(1))             # a strided source
        nd.waitall()
    assert copied == []
    for x in (b, c, d, t):
        assert device_of(x) == 1
        np.testing.assert_array_equal(x.asnumpy(), [1, 2, 3])
    d[:] = a.as_in_context(mx.gpu(1)) * 2
    np.testing.assert_array_equal(d.copyto(mx.cpu()).asnumpy(), [2, 4, 6])


@pytest.mark.parametrize("current", [0, 1])
@pytest.mark.parametrize("src, dst", [(0, 1), (1, 0)])
def test_a_copy_between_gpus_is_waited_for_on_the_destination(two_gpus, current, src,
                                                              dst):
    # a copy runs on its source's stream after the destination's stream frees the
    # memory; the destination's stream must then wait for the copy before its kernels
    # read the result, whichever device is current (CuPy's default stream acts on the
    # current device). The gradient's copy back is waited for on the source.
    a = nd.array([1.0, 2.0], ctx=mx.gpu(src))
    a.attach_grad()
    nd.waitall()
    start = len(stream_waits())
    with two_gpus.cuda.Device(current):
        with autograd.record():
            b = a.as_in_context(mx.gpu(dst))
            loss = (b * b).sum()
    assert set(stream_waits()[start:]) == {(src, dst), (dst, src)}
    start = len(stream_waits())
    with two_gpus.cuda.Device(current):
        loss.backward()
    assert set(stream_waits()[start:]) == {(dst, src), (src, dst)}
    np.testing.assert_array_equal(a.grad.asnumpy(), [2, 4])


def test_autograd_on_the_second_gpu(two_gpus):
    x = nd.array([[1.0, -2.0], [3.0, 4.0]], ctx=mx.gpu(1))
    w = nd.array([[0.5], [-1.0]], ctx=mx.gpu(1))
    w.attach_grad()
    with autograd.record():
        y = (nd.relu(nd.dot(x, w)) ** 2).sum()
    y.backward()
    assert device_of(w.grad) == 1
    h = x.asnumpy() @ w.asnumpy()
    expect = x.asnumpy().T @ (2 * np.maximum(h, 0) * (h > 0))
    np.testing.assert_allclose(w.grad.asnumpy(), expect, rtol=1e-6)


def _mlp():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(16, activation="relu"), gluon.nn.Dense(4))
    return net


def _data(n=8, seed=0):
    rng = np.random.RandomState(seed)
    return rng.randn(n, 6).astype(np.float32), rng.randint(0, 4, n).astype(np.float32)


def _parallel_steps(net, trainer, loss_fn, x, y, ctx_list, steps):
    """The d2l book's data-parallel loop: split_and_load, one loss per device, backward
    on each, one trainer step over the whole batch."""
    for _ in range(steps):
        xs = gluon.utils.split_and_load(x, ctx_list)
        ys = gluon.utils.split_and_load(y, ctx_list)
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
        for l in losses:
            l.backward()
        trainer.step(x.shape[0])


def _train_on(ctx_list, hybridize, steps=3, kvstore="device"):
    mx.random.seed(7)
    net = _mlp()
    net.initialize(mx.init.Xavier(), ctx=ctx_list)
    if hybridize:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.1, "momentum": 0.9}, kvstore=kvstore)
    x, y = _data()
    _parallel_steps(net, trainer, gluon.loss.SoftmaxCrossEntropyLoss(), x, y, ctx_list,
                    steps)
    return net


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("devices", [(0, 1), (1, 0)])
def test_data_parallel_training_equals_one_device(two_gpus, hybridize, devices):
    ctx_list = [mx.gpu(k) for k in devices]
    net = _train_on(ctx_list, hybridize)
    ref = _train_on([mx.cpu()], hybridize)
    for (name, p), r in zip(net.collect_params().items(), ref.collect_params().values()):
        want = r.data(mx.cpu()).asnumpy()
        for ctx in dict.fromkeys(ctx_list):
            got = p.data(ctx)
            assert device_of(got) == ctx.device_id, name
            assert device_of(p.grad(ctx)) == ctx.device_id, name
            np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6,
                                       err_msg=name)


def test_d2l_allreduce_by_hand(two_gpus):
    """d2l's from-scratch allreduce: sum every device's copy on the first device, then
    broadcast the sum back."""
    data = [nd.ones((1, 2), ctx=mx.gpu(k)) * (k + 1) for k in range(2)]
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].context)
    for i in range(1, len(data)):
        data[0].copyto(data[i])
    for k, d in enumerate(data):
        assert device_of(d) == k
        np.testing.assert_array_equal(d.asnumpy(), [[3, 3]])


@pytest.mark.parametrize("devices", [(0, 1), (1, 1)])
def test_kvstore_device_reduces_across_gpus(two_gpus, devices):
    kv = mx.kv.create("device")
    kv.init("w", nd.zeros((2, 3), ctx=mx.gpu(0)))
    grads = [nd.ones((2, 3), ctx=mx.gpu(k)) * (i + 1) for i, k in enumerate(devices)]
    outs = [nd.zeros((2, 3), ctx=mx.gpu(k)) for k in devices]
    nd.waitall()
    with host_copies() as copied:
        kv.push("w", grads)
        kv.pull("w", out=outs)
        nd.waitall()
    assert copied == []                    # reduced and broadcast on the devices
    for k, o in zip(devices, outs):
        assert device_of(o) == k
        np.testing.assert_array_equal(o.asnumpy(), np.full((2, 3), 3.0))


def _fit_module(contexts):
    mx.random.seed(11)
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
    out = mx.sym.SoftmaxOutput(fc, name="softmax")
    x, y = _data(n=16, seed=3)
    it = mx.io.NDArrayIter(x, y, batch_size=8)
    mod = mx.mod.Module(out, context=contexts)
    mod.fit(it, num_epoch=2, optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            initializer=mx.init.Xavier(), kvstore="device")
    return mod


@pytest.mark.parametrize("devices", [(0, 1), (1, 1)])
def test_module_over_two_gpus_equals_one_cpu(two_gpus, devices):
    """Module splits each batch over its contexts; the same GPU twice works too."""
    mod = _fit_module([mx.gpu(k) for k in devices])
    ref = _fit_module(mx.cpu())
    args, _ = mod.get_params()
    want, _ = ref.get_params()
    for name in want:
        np.testing.assert_allclose(args[name].asnumpy(), want[name].asnumpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)
    for k, ex in zip(devices, mod._exec_group.execs):
        for name, arr in ex.arg_dict.items():
            assert device_of(arr) == k, name


def test_gradient_requests_and_parameter_helpers_on_the_second_gpu(two_gpus):
    ctx = mx.gpu(1)
    x = nd.array([1.0, 2.0, 3.0], ctx=ctx)
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    assert device_of(x.grad) == 1
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * 2 * x.asnumpy())
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize(mx.init.One(), ctx=ctx)
    with autograd.record():
        out = net(x.reshape((1, 3)))
    out.backward()
    net.collect_params().zero_grad()
    assert device_of(net.weight.grad(ctx)) == 1
    np.testing.assert_array_equal(net.weight.grad(ctx).asnumpy(), np.zeros((2, 3)))
    net.weight.set_data(nd.ones((2, 3)) * 5)
    assert device_of(net.weight.data(ctx)) == 1
    np.testing.assert_array_equal(net.weight.data(ctx).asnumpy(), np.full((2, 3), 5.0))


def test_saved_parameters_load_onto_the_second_gpu(two_gpus, tmp_path):
    net = _mlp()
    net.initialize(mx.init.Xavier(), ctx=mx.gpu(0))
    net(nd.ones((1, 6), ctx=mx.gpu(0)))
    path = str(tmp_path / "mlp.params")
    net.save_parameters(path)
    other = _mlp()
    other.load_parameters(path, ctx=mx.gpu(1))
    for p, q in zip(net.collect_params().values(), other.collect_params().values()):
        assert device_of(q.data(mx.gpu(1))) == 1
        np.testing.assert_array_equal(q.data(mx.gpu(1)).asnumpy(),
                                      p.data(mx.gpu(0)).asnumpy())
    loaded = nd.load(path)
    moved = {k: v.as_in_context(mx.gpu(1)) for k, v in loaded.items()}
    assert all(device_of(v) == 1 for v in moved.values())


@pytest.mark.parametrize("optimizer", ["adam", "rmsprop", "nag"])
def test_updates_on_each_gpu_without_a_kvstore(two_gpus, optimizer):
    """update_on_kvstore off: each device updates its own copy (the Trainer sums the
    gradients across devices first); every copy equals the one-CPU result."""
    def train(ctx_list):
        mx.random.seed(5)
        net = _mlp()
        net.initialize(mx.init.Xavier(), ctx=ctx_list)
        trainer = gluon.Trainer(net.collect_params(), optimizer, {"learning_rate": 0.01},
                                update_on_kvstore=False)
        x, _ = _data()
        _parallel_steps(net, trainer, gluon.loss.L2Loss(), x, np.tanh(x[:, :4]), ctx_list, 2)
        return net
    net = train([mx.gpu(0), mx.gpu(1)])
    ref = train([mx.cpu()])
    for p, r in zip(net.collect_params().values(), ref.collect_params().values()):
        want = r.data(mx.cpu()).asnumpy()
        for k in (0, 1):
            assert device_of(p.data(mx.gpu(k))) == k
            np.testing.assert_allclose(p.data(mx.gpu(k)).asnumpy(), want, rtol=1e-5,
                                       atol=1e-6)


def test_seeding_one_gpu_draws_there(two_gpus):
    mx.random.seed(3, ctx=mx.gpu(1))
    a = nd.random.normal(shape=(4,), ctx=mx.gpu(1))
    mx.random.seed(3, ctx=mx.gpu(1))
    b = nd.random.normal(shape=(4,), ctx=mx.gpu(1))
    assert device_of(a) == device_of(b) == 1
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def _lenet_params(rng):
    shapes = [(6, 1, 3, 3), (6,), (16, 6, 3, 3), (16,), (10, 16 * 2 * 2), (10,)]
    return [nd.array(rng.normal(scale=0.1, size=s).astype(np.float32)) for s in shapes]


def _lenet(x, params):
    w1, b1, w2, b2, w3, b3 = params
    h = nd.relu(nd.Convolution(x, w1, b1, kernel=(3, 3), num_filter=6))
    h = nd.Pooling(h, pool_type="avg", kernel=(2, 2), stride=(2, 2))
    h = nd.relu(nd.Convolution(h, w2, b2, kernel=(3, 3), num_filter=16))
    h = nd.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2))
    return nd.FullyConnected(h.flatten(), w3, b3, num_hidden=10)


def _d2l_from_scratch(ctx_list, steps=2, lr=0.2):
    """d2l's "multiple GPUs from scratch": a copy of the parameters per device,
    split_and_load, a backward per device, an allreduce by hand (sum on the first
    device, broadcast), plain SGD on every copy."""
    rng = np.random.RandomState(1)
    params = _lenet_params(rng)
    copies = [[p.copyto(c) for p in params] for c in ctx_list]
    for ps in copies:
        for p in ps:
            p.attach_grad()
    x = rng.rand(8, 1, 14, 14).astype(np.float32)
    y = rng.randint(0, 10, 8).astype(np.float32)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(steps):
        xs = gluon.utils.split_and_load(x, ctx_list)
        ys = gluon.utils.split_and_load(y, ctx_list)
        with autograd.record():
            losses = [loss_fn(_lenet(a, ps), b) for a, b, ps in zip(xs, ys, copies)]
        for l in losses:
            l.backward()
        for i in range(len(params)):
            grads = [ps[i].grad for ps in copies]
            for g in grads[1:]:
                grads[0][:] += g.copyto(grads[0].context)
            for g in grads[1:]:
                grads[0].copyto(g)
        for ps in copies:
            for p in ps:
                p[:] = p - lr * p.grad / x.shape[0]
    return copies


def test_d2l_multi_gpu_from_scratch_equals_one_device(two_gpus):
    copies = _d2l_from_scratch([mx.gpu(0), mx.gpu(1)])
    ref = _d2l_from_scratch([mx.cpu()])[0]
    for k, ps in enumerate(copies):
        for p, r in zip(ps, ref):
            assert device_of(p) == k and device_of(p.grad) == k
            np.testing.assert_allclose(p.asnumpy(), r.asnumpy(), rtol=1e-5, atol=1e-6)


def test_batchnorm_network_trains_on_each_gpu(two_gpus):
    """A d2l-style ResNet block with BatchNorm, data-parallel on two devices: every
    parameter, gradient and running statistic stays on its device."""
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 3, padding=1), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"),
            gluon.nn.GlobalAvgPool2D(), gluon.nn.Dense(3))
    ctx_list = [mx.gpu(0), mx.gpu(1)]
    net.initialize(mx.init.Xavier(), ctx=ctx_list)
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x = np.random.RandomState(2).rand(4, 2, 6, 6).astype(np.float32)
    y = np.array([0, 1, 2, 1], dtype=np.float32)
    _parallel_steps(net, trainer, gluon.loss.SoftmaxCrossEntropyLoss(), x, y, ctx_list, 2)
    for name, p in net.collect_params().items():
        for k, ctx in enumerate(ctx_list):
            assert device_of(p.data(ctx)) == k, name
            assert np.isfinite(p.data(ctx).asnumpy()).all(), name
    bn = net[1]
    # each device normalised its own half of the batch: different running means
    assert not np.allclose(bn.running_mean.data(mx.gpu(0)).asnumpy(),
                           bn.running_mean.data(mx.gpu(1)).asnumpy())


@pytest.mark.parametrize("k", [0, 1])
def test_module_fit_score_predict_on_one_gpu(two_gpus, k):
    """Batches from a host iterator are placed on the bound GPU (Module, as in seed
    programs run with their GPU option), and the results equal the CPU's."""
    mod = _fit_module(mx.gpu(k))
    ref = _fit_module(mx.cpu())
    x, y = _data(n=16, seed=3)
    it = mx.io.NDArrayIter(x, y, batch_size=8)
    got = mod.predict(it)
    assert got.context == mx.gpu(k) and device_of(got) == k
    np.testing.assert_allclose(got.asnumpy(), ref.predict(it).asnumpy(), rtol=1e-5,
                               atol=1e-6)
    assert mod.score(it, "acc")[0][1] == ref.score(it, "acc")[0][1]


def test_gluon_dataloader_batches_train_on_the_second_gpu(two_gpus):
    x, y = _data(n=12, seed=4)
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=4)

    def train(ctx):
        mx.random.seed(9)
        net = _mlp()
        net.initialize(mx.init.Xavier(), ctx=ctx)
        net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        for data, label in loader:
            data, label = data.as_in_context(ctx), label.as_in_context(ctx)
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
        return net
    net, ref = train(mx.gpu(1)), train(mx.cpu())
    for p, r in zip(net.collect_params().values(), ref.collect_params().values()):
        assert device_of(p.data(mx.gpu(1))) == 1
        np.testing.assert_allclose(p.data(mx.gpu(1)).asnumpy(), r.data().asnumpy(),
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("hops", [("gpu1", "cpu", "gpu0"), ("cpu", "gpu0"), ("gpu1",)])
def test_gradients_flow_back_across_device_copies(two_gpus, hops):
    """Copies between devices are recorded (as MXNet's _copyto): the gradient of
    tanh(tanh(x) moved across devices) reaches x on its own device."""
    places = {"gpu0": mx.gpu(0), "gpu1": mx.gpu(1), "cpu": mx.cpu()}
    x = nd.array([0.1, -0.5, 0.9], ctx=mx.gpu(0))
    x.attach_grad()
    with autograd.record():
        y = nd.tanh(x)
        for hop in hops:
            y = nd.tanh(y.copyto(places[hop]))
        (y * x.copyto(y.context)).sum().backward()
    assert device_of(x.grad) == 0
    v = x.asnumpy()
    chain, d = np.tanh(v), 1 - np.tanh(v) ** 2
    for _ in hops:
        d = d * (1 - np.tanh(chain) ** 2)
        chain = np.tanh(chain)
    np.testing.assert_allclose(x.grad.asnumpy(), v * d + chain, rtol=1e-5)


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "ftrl", "rmsprop"])
@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
def test_row_sparse_gradient_updates_on_a_gpu_equal_the_cpus(two_gpus, optimizer,
                                                             weight_stype):
    """An Embedding-style update: a row_sparse gradient touching some rows. The GPU
    gives the CPU's numbers under MXNet's rule for the storage types at hand — the lazy
    one (only those rows and their states change) or the standard one (the dense
    gradient's update) — and the weight and states stay on the GPU."""
    rng = np.random.RandomState(3)
    w0 = rng.rand(5, 3).astype(np.float32)
    g_rows = np.array([1, 3], dtype=np.int64)
    g_vals = rng.rand(2, 3).astype(np.float32)

    def run(ctx, grad_stype="row_sparse"):
        w = nd.array(w0, ctx=ctx).tostype(weight_stype)
        g = nd.sparse.row_sparse_array((g_vals, g_rows), shape=(5, 3), ctx=ctx)
        g = g.tostype(grad_stype)
        opt = mx.optimizer.create(optimizer, learning_rate=0.1, momentum=0.9) \
            if optimizer == "sgd" else mx.optimizer.create(optimizer, learning_rate=0.1,
                                                           wd=0.1)
        states = opt.create_state_multi_precision(0, w)
        for _ in range(2):
            opt.update_multi_precision(0, w, g, states)
        flat = states if isinstance(states, (list, tuple)) else [states]
        return w, [s for s in flat if s is not None]
    w, states = run(mx.gpu(1))
    w_ref, states_ref = run(mx.cpu())
    assert w.context == mx.gpu(1) and w.stype == weight_stype
    np.testing.assert_allclose(w.tostype("default").asnumpy(),
                               w_ref.tostype("default").asnumpy(), rtol=1e-5, atol=1e-7)
    lazy = optimizer in ("sgd", "adam") or (optimizer, weight_stype) == ("ftrl",
                                                                         "row_sparse")
    if lazy:
        untouched = [0, 2, 4]
        np.testing.assert_array_equal(w.tostype("default").asnumpy()[untouched],
                                      w0[untouched])
    else:
        w_dense = run(mx.cpu(), "default")[0]
        np.testing.assert_allclose(w.tostype("default").asnumpy(),
                                   w_dense.tostype("default").asnumpy(), rtol=1e-5,
                                   atol=1e-7)
    for s, r in zip(states, states_ref):
        assert s.context == mx.gpu(1)
        np.testing.assert_allclose(s.tostype("default").asnumpy(),
                                   r.tostype("default").asnumpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "ftrl", "rmsprop", "nag"])
def test_row_sparse_update_of_a_dense_weight_stays_on_the_gpu(two_gpus, optimizer):
    """Embedding(sparse_grad=True)'s case: the weight and the optimizer's states are
    dense on a GPU, the gradient row_sparse. The update runs on the device: nothing the
    size of the weight crosses between host and device, and the numbers equal the
    CPU's — only the gradient's rows change under sgd's and adam's lazy rule, every row
    under the standard rule of the others (MXNet's storage fallback, the gradient made
    dense on the device)."""
    rng = np.random.RandomState(5)
    w0 = rng.rand(50, 4).astype(np.float32)
    g_rows = np.array([2, 7, 31], dtype=np.int64)
    g_vals = rng.rand(3, 4).astype(np.float32)
    def run(ctx):
        w = nd.array(w0, ctx=ctx)
        g = nd.sparse.row_sparse_array((g_vals, g_rows), shape=w0.shape, ctx=ctx)
        opt = mx.optimizer.create(optimizer, learning_rate=0.1, wd=0.1)
        states = opt.create_state_multi_precision(0, w)
        nd.waitall()
        with host_copies() as copied:
            for _ in range(3):
                opt.update_multi_precision(0, w, g, states)
            nd.waitall()
        assert w0.shape not in copied, copied
        flat = states if isinstance(states, (list, tuple)) else [states]
        return w, [s for s in flat if s is not None]
    w, states = run(mx.gpu(1))
    w_ref, states_ref = run(mx.cpu())
    assert device_of(w) == 1 and all(device_of(s) == 1 for s in states)
    np.testing.assert_allclose(w.asnumpy(), w_ref.asnumpy(), rtol=1e-5, atol=1e-7)
    for s, r in zip(states, states_ref):
        np.testing.assert_allclose(s.asnumpy(), r.asnumpy(), rtol=1e-5, atol=1e-7)
    untouched = np.setdiff1d(np.arange(50), g_rows)
    if optimizer in ("sgd", "adam", "nag"):     # (nag without momentum: sgd_update)
        np.testing.assert_array_equal(w.asnumpy()[untouched], w0[untouched])
    else:
        assert not np.array_equal(w.asnumpy()[untouched], w0[untouched])


class _Tagger(gluon.HybridBlock):
    """Embedding, two-layer LSTM with dropout, GRU, LayerNorm, Dense per step."""

    def __init__(self):
        super().__init__()
        self.emb = gluon.nn.Embedding(20, 8)
        self.lstm = gluon.rnn.LSTM(8, num_layers=2, layout="NTC", dropout=0.2)
        self.gru = gluon.rnn.GRU(8, layout="NTC")
        self.norm = gluon.nn.LayerNorm()
        self.out = gluon.nn.Dense(5, flatten=False)

    def hybrid_forward(self, F, x):
        return self.out(self.norm(self.gru(self.lstm(self.emb(x)))))


def _engine_pushes(monkeypatch):
    """A list that collects the name of every operation pushed to the engine's workers
    from now on (work run in the calling thread is not pushed)."""
    eng = mx.engine.get()
    pushed = []
    real_push = eng.push_sync
    monkeypatch.setattr(eng, "push_sync", lambda fn, ctx, *a, **k: pushed.append(
        k.get("name", a[3] if len(a) > 3 else None)) or real_push(fn, ctx, *a, **k))
    return pushed


def _cnn():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(8, 3, activation="relu"), gluon.nn.BatchNorm(),
            gluon.nn.MaxPool2D(), gluon.nn.Dropout(0.5), gluon.nn.Dense(10))
    return net


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("model, optimizer, opt_args", [
    ("cnn", "sgd", {"momentum": 0.9, "wd": 1e-4, "clip_gradient": 1.0}),
    ("cnn", "adam", {}),
    ("tagger", "rmsprop", {"centered": True}),
    ("tagger", "nag", {"momentum": 0.9})])
def test_a_training_step_reads_nothing_back_from_the_gpu(two_gpus, hybridize, model,
                                                          optimizer, opt_args,
                                                          monkeypatch):
    """Forward, backward and the optimizer step queue device work only: no value goes
    back to the host, which would wait for the GPU each step (only the loss's reader,
    a metric or a print, should). Nor is any of it handed to an engine worker: GPU work
    is queued from the calling thread, and a hand-off there is a thread switch and a
    GIL round trip on the step's path (what held the seed CNN's step on the H100)."""
    ctx = mx.gpu(1)
    rng = np.random.RandomState(0)
    if model == "cnn":
        net = _cnn()
        x = nd.array(rng.rand(4, 1, 10, 10), ctx=ctx)
        y = nd.array(rng.randint(0, 10, 4), ctx=ctx)
    else:
        net = _Tagger()
        x = nd.array(rng.randint(0, 20, (3, 6)), ctx=ctx)
        y = nd.array(rng.randint(0, 5, (3, 6)), ctx=ctx)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if hybridize:
        net.hybridize(static_alloc=True)
    trainer = gluon.Trainer(net.collect_params(), optimizer,
                            dict(learning_rate=0.01, **opt_args))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        return loss
    step()                                   # first calls: shapes, parameters, states
    nd.waitall()
    pushed = _engine_pushes(monkeypatch)
    with host_copies() as copied:
        for _ in range(2):
            loss = step()
        nd.waitall()
    assert copied == []
    assert pushed == []
    assert np.isfinite(loss.asnumpy()).all()


@pytest.mark.parametrize("hybridize", [False, True])
def test_an_amp_step_reads_nothing_back_from_the_gpu(two_gpus, hybridize, monkeypatch):
    """With AMP's loss scaling and its deferred finite check (the default on a GPU), a
    step queues device work only: the finite flag is computed on the device and read
    one step late through a copy queued behind it (amp.loss_scaler.Gate). The body of
    multi_all_finite (run where the GPU kernel table has no kernel for the arrays, and
    always on the emulation) read every gradient's check back to the host."""
    from mxnet.contrib import amp
    from mxnet.contrib.amp import amp as amp_impl
    monkeypatch.delenv("MXNET_AMP_ASYNC_OVERFLOW_CHECK", raising=False)
    amp_impl._reset()
    amp.init(target_dtype="bfloat16")        # as gpu_train.py's AMP rows
    try:
        _check_amp_step(hybridize, monkeypatch, amp)
    finally:
        amp_impl._reset()


def _check_amp_step(hybridize, monkeypatch, amp):
    ctx = mx.gpu(1)
    rng = np.random.RandomState(0)
    net = _cnn()
    x = nd.array(rng.rand(4, 1, 10, 10), ctx=ctx)
    y = nd.array(rng.randint(0, 10, 4), ctx=ctx)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if hybridize:
        net.hybridize(static_alloc=True)
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.01, "momentum": 0.9})
    amp.init_trainer(trainer)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
            with amp.scale_loss(loss, trainer) as scaled:
                scaled.backward()
        trainer.step(x.shape[0])
        return loss
    step()
    nd.waitall()
    scaler, gates = trainer._amp_loss_scaler, []
    real_check = scaler.check_deferred
    monkeypatch.setattr(scaler, "check_deferred",
                        lambda *a, **k: gates.append(real_check(*a, **k)) or gates[-1])
    pushed = _engine_pushes(monkeypatch)
    with host_copies() as copied:
        for _ in range(2):
            loss = step()
        nd.waitall()
    assert len(gates) == 2 and None not in gates          # the checks were deferred
    assert copied == []
    assert pushed == []
    assert np.isfinite(loss.asnumpy()).all()


@pytest.mark.parametrize("kvstore", ["device", None])
def test_a_data_parallel_step_reads_nothing_back_from_the_gpus(two_gpus, kvstore,
                                                               monkeypatch):
    """d2l's data-parallel step (split_and_load over two GPUs, a backward per GPU,
    Trainer.step reducing across them) queues device work only, from the calling
    thread."""
    ctxs = [mx.gpu(0), mx.gpu(1)]
    net = _cnn()
    net.initialize(mx.init.Xavier(), ctx=ctxs)
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.1, "momentum": 0.9}, kvstore=kvstore)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x = nd.array(np.random.RandomState(2).rand(8, 1, 10, 10))
    y = nd.array(np.arange(8) % 10)

    _parallel_steps(net, trainer, loss_fn, x, y, ctxs, 1)
    nd.waitall()
    pushed = _engine_pushes(monkeypatch)
    with host_copies() as copied:
        _parallel_steps(net, trainer, loss_fn, x, y, ctxs, 2)
        nd.waitall()
    assert copied == []
    assert pushed == []


def test_a_module_step_reads_nothing_back_from_the_gpu(two_gpus, monkeypatch):
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=16), act_type="relu")
    out = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=4), name="softmax")
    it = mx.io.NDArrayIter(np.random.RandomState(1).rand(8, 5).astype(np.float32),
                           np.arange(8) % 4, batch_size=4)
    mod = mx.mod.Module(out, context=mx.gpu(1))
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"momentum": 0.9})
    batch = next(iter(it))
    mod.forward_backward(batch)
    mod.update()
    nd.waitall()
    pushed = _engine_pushes(monkeypatch)
    with host_copies() as copied:
        for _ in range(2):
            mod.forward_backward(batch)
            mod.update()
        nd.waitall()
    assert copied == []
    assert pushed == []


def test_kvstore_row_sparse_push_and_pull_across_gpus(two_gpus):
    """Row_sparse gradients from two GPUs are summed; row_sparse_pull gives each
    device the requested rows (MXNet's test_rsp_push_pull, on two devices)."""
    shape = (6, 2)
    kv = mx.kv.create("device")
    kv.init("e", nd.zeros(shape, ctx=mx.gpu(0)).tostype("row_sparse"))
    grads = [nd.sparse.row_sparse_array((np.full((2, 2), k + 1, np.float32),
                                         np.array([k, 4], np.int64)), shape=shape,
                                        ctx=mx.gpu(k)) for k in range(2)]
    kv.push("e", grads)
    outs = [nd.sparse.zeros("row_sparse", shape, ctx=mx.gpu(k)) for k in range(2)]
    rows = [nd.array([0, 1, 4], ctx=mx.gpu(k), dtype=np.int64) for k in range(2)]
    kv.row_sparse_pull("e", out=outs, row_ids=rows)
    want = np.zeros(shape, np.float32)
    want[0], want[1], want[4] = 1, 2, 3
    for k, o in enumerate(outs):
        assert o.context == mx.gpu(k) and o.stype == "row_sparse"
        np.testing.assert_array_equal(o.tostype("default").asnumpy(), want)


def test_integer_scalars_assigned_into_a_gpu_array_wrap_as_a_c_cast(two_gpus):
    # the wrapped value reaches CuPy as a Python number (it takes no NumPy values in
    # assignments); MXNet's test_ndarray_indexing assigns such scalars on a GPU
    a = nd.array(np.arange(12).reshape(3, 4), dtype="int32", ctx=mx.gpu(1))
    a[(1, None, -2)] = -4239
    a[0, 0] = 2 ** 31
    b = nd.zeros((3,), dtype="uint8", ctx=mx.gpu(1))
    b[1] = -1
    b[2:] = 300
    assert a.asnumpy()[1, 2] == -4239 and a.asnumpy()[0, 0] == -2 ** 31
    assert b.asnumpy().tolist() == [0, 255, 44]
    assert nd.full((2,), -1, dtype="uint8", ctx=mx.gpu(1)).asnumpy().tolist() == [255, 255]

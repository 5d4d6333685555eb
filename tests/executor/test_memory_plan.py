"""The executor's memory plan: buffer reuse, in-place, what backward keeps (seed
002: FullyConnected's output is freed early because its backward does not read it),
pool usage, and correctness of the results under heavy reuse."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import storage
from mxnet.name import NameManager
from mxnet.test_utils import assert_almost_equal


@pytest.fixture(autouse=True)
def _fresh_names():
    with NameManager():
        yield


def _mlp(layers=3, hidden=32):
    h = mx.sym.Variable("data")
    for i in range(layers):
        h = mx.sym.FullyConnected(h, num_hidden=hidden, name=f"fc{i}")
        h = mx.sym.Activation(h, act_type="relu", name=f"relu{i}")
    h = mx.sym.FullyConnected(h, num_hidden=10, name="out")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def test_mlp_plan_reuses_memory():
    ex = _mlp().simple_bind(mx.cpu(), data=(16, 20))
    plan = ex.memory_plan
    assert plan.planned_bytes < plan.naive_bytes
    assert plan.num_slots < len(plan.entry_bytes)
    assert len(plan.inplace) >= 1
    assert "without reuse" in plan.summary()


def test_fully_connected_output_not_kept_for_backward():
    ex = _mlp(layers=2).simple_bind(mx.cpu(), data=(16, 20))
    plan = ex.memory_plan
    kept = plan.kept_for_backward()
    # FullyConnected's backward reads its input, not its output; Activation reads its
    # output: so fc0_output dies in forward and relu0_output lives until backward.
    assert "fc0_output" not in kept and "fc1_output" not in kept
    assert "relu0_output" in kept and "relu1_output" in kept
    first, last, first_kind, last_kind = plan.lifetime("fc0_output")
    assert (first_kind, last_kind) == ("forward", "forward")
    assert plan.lifetime("relu0_output")[3] == "backward"
    # relu runs in place over the FullyConnected output that dies there
    names = {(plan.names[a], plan.names[b]) for a, b in plan.inplace}
    assert ("fc0_output", "relu0_output") in names


def test_forward_only_plan_keeps_nothing_and_ping_pongs():
    h = mx.sym.Variable("data")
    for i in range(6):
        h = mx.sym.FullyConnected(h, num_hidden=8, name=f"fc{i}")
    ex = h.simple_bind(mx.cpu(), grad_req="null", data=(4, 8))
    plan = ex.memory_plan
    assert plan.kept_for_backward() == []
    assert plan.num_slots == 2                 # five intermediates in two buffers
    assert plan.planned_bytes == 2 * 4 * 8 * 4
    assert plan.naive_bytes == 5 * 4 * 8 * 4


def test_inplace_chain_uses_one_buffer():
    h = mx.sym.Variable("data")
    for _ in range(5):
        h = mx.sym.sigmoid(mx.sym.relu(h))
    ex = h.simple_bind(mx.cpu(), grad_req="null", data=(3, 7))
    plan = ex.memory_plan
    assert plan.num_slots == 1 and len(plan.inplace) == len(plan.entry_bytes) - 1
    x = np.random.randn(3, 7).astype(np.float32)
    ref = x
    for _ in range(5):
        ref = 1 / (1 + np.exp(-np.maximum(ref, 0)))
    assert_almost_equal(ex.forward(data=x)[0].asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_pooling_keeps_input_and_output():
    x = mx.sym.Variable("data")
    c = mx.sym.Convolution(x, kernel=(3, 3), num_filter=2, name="conv")
    p = mx.sym.Pooling(c, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    out = mx.sym.FullyConnected(mx.sym.flatten(p, name="flat"), num_hidden=3, name="fc")
    ex = out.simple_bind(mx.cpu(), data=(2, 1, 6, 6))
    kept = ex.memory_plan.kept_for_backward()
    assert "conv_output" in kept and "pool_output" in kept
    assert "fc_output" not in kept


def test_planned_buffers_come_from_the_pool():
    pool = storage.get_pool(mx.cpu())
    before = pool.stats()["num_allocs"]
    ex = _mlp().simple_bind(mx.cpu(), data=(16, 20))
    after = pool.stats()["num_allocs"]
    assert after - before >= len(ex.memory_plan.slot_bytes)
    in_use = pool.stats()["bytes_in_use"]
    del ex
    import gc
    gc.collect()
    assert pool.stats()["bytes_in_use"] < in_use


def test_results_correct_under_reuse_with_branches():
    """A graph whose intermediates share buffers, checked against autograd."""
    x = mx.sym.Variable("x")
    a = mx.sym.relu(x, name="a")
    b = mx.sym.tanh(a, name="b")
    c = mx.sym.sigmoid(a, name="c")
    d = b * c + mx.sym.exp(b) - a
    e = mx.sym.FullyConnected(d, num_hidden=4, name="fc")
    out = mx.sym.sum(mx.sym.sqrt(mx.sym.square(e) + 1.0))
    xv = np.random.randn(5, 6).astype(np.float32)
    wv = np.random.randn(4, 6).astype(np.float32)
    bv = np.random.randn(4).astype(np.float32)
    ex = out.simple_bind(mx.cpu(), x=(5, 6))
    ex.copy_params_from({"x": xv, "fc_weight": wv, "fc_bias": bv})
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((1,))])
    assert ex.memory_plan.planned_bytes <= ex.memory_plan.naive_bytes
    nx, nw, nb = mx.nd.array(xv), mx.nd.array(wv), mx.nd.array(bv)
    for t in (nx, nw, nb):
        t.attach_grad()
    with mx.autograd.record():
        av = mx.nd.relu(nx)
        bb = mx.nd.tanh(av)
        dd = bb * mx.nd.sigmoid(av) + mx.nd.exp(bb) - av
        ee = mx.nd.FullyConnected(dd, nw, nb, num_hidden=4)
        oo = mx.nd.sum(mx.nd.sqrt(mx.nd.square(ee) + 1.0))
    oo.backward()
    assert_almost_equal(ex.outputs[0].asnumpy(), oo.asnumpy(), rtol=1e-5)
    for name, t in (("x", nx), ("fc_weight", nw), ("fc_bias", nb)):
        assert_almost_equal(ex.grad_dict[name].asnumpy(), t.grad.asnumpy(), rtol=1e-4,
                            atol=1e-5, names=(f"executor {name}", "autograd"))


def test_add_gradient_planned_over_its_output_gradient():
    """add's backward passes its output gradient through to both operands: the plan
    gives one of them the output gradient's buffer (an 'inplace' request that costs no
    copy), the other its own, and the gradients equal NumPy's."""
    x = mx.sym.Variable("data")
    a = mx.sym.FullyConnected(x, num_hidden=6, no_bias=True, name="fa")
    b = mx.sym.FullyConnected(x, num_hidden=6, no_bias=True, name="fb")
    s = mx.sym.elemwise_add(a, b, name="sum")
    y = mx.sym.tanh(s, name="t")
    ex = y.simple_bind(mx.cpu(), data=(4, 5), grad_req="write")
    plan = ex.memory_plan
    names = {(plan.names.get(src), plan.names.get(dst)) for src, dst in plan.inplace}
    assert any(dst in ("fa_output_grad", "fb_output_grad") and src == "sum_output_grad"
               for src, dst in names), names
    rng = np.random.RandomState(0)
    xv, wa, wb = rng.randn(4, 5), rng.randn(6, 5), rng.randn(6, 5)
    ex.arg_dict["data"][:] = xv
    ex.arg_dict["fa_weight"][:] = wa
    ex.arg_dict["fb_weight"][:] = wb
    head = rng.randn(4, 6)
    ex.forward(is_train=True)
    ex.backward(mx.nd.array(head))
    ds = head * (1 - np.tanh(xv @ wa.T + xv @ wb.T) ** 2)
    assert_almost_equal(ex.grad_dict["fa_weight"].asnumpy(), ds.T @ xv, rtol=1e-5,
                        atol=1e-5)
    assert_almost_equal(ex.grad_dict["fb_weight"].asnumpy(), ds.T @ xv, rtol=1e-5,
                        atol=1e-5)
    assert_almost_equal(ex.grad_dict["data"].asnumpy(), ds @ wa + ds @ wb, rtol=1e-5,
                        atol=1e-5)


def _resnet_block_net(F, x, w, blocks=3, channels=16):
    """A small residual network written once for mx.sym and mx.nd (``w``: a dict that
    gives, or for symbols names, each weight)."""
    x = F.Convolution(x, w["stem_weight"], w["stem_bias"], kernel=(3, 3), pad=(1, 1),
                      num_filter=channels, name="stem")
    for i in range(blocks):
        h = F.Convolution(x, w[f"b{i}c1_weight"], w[f"b{i}c1_bias"], kernel=(3, 3),
                          pad=(1, 1), num_filter=channels, name=f"b{i}c1")
        h = F.Activation(h * w[f"b{i}s1"], act_type="relu")
        h = F.Convolution(h, w[f"b{i}c2_weight"], w[f"b{i}c2_bias"], kernel=(3, 3),
                          pad=(1, 1), num_filter=channels, name=f"b{i}c2")
        x = F.Activation(h + x, act_type="relu")
        if i == 1:
            x = F.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
    return F.FullyConnected(F.flatten(x), w["fc_weight"], w["fc_bias"], num_hidden=10,
                            name="fc")


class _SymWeights(dict):
    def __missing__(self, name):        # one variable per name (shared weights)
        self[name] = mx.sym.Variable(name)
        return self[name]


def _mlp_net(F, x, w, layers=3, hidden=32):
    for i in range(layers):
        x = F.Activation(F.FullyConnected(x, w[f"fc{i}_weight"], w[f"fc{i}_bias"],
                                          num_hidden=hidden, name=f"fc{i}"), act_type="relu")
    return F.FullyConnected(x, w["out_weight"], w["out_bias"], num_hidden=10, name="out")


def _unrolled_rnn_net(F, x, w, steps=12, hidden=8):
    """A tanh RNN unrolled over the time axis: many entries, staggered lifetimes."""
    h = None
    for t in range(steps):
        xt = F.slice_axis(x, axis=1, begin=t, end=t + 1)
        i2h = F.FullyConnected(xt, w["i2h_weight"], w["i2h_bias"], num_hidden=hidden,
                               name=f"i2h{t}")
        h = F.tanh(i2h if h is None else i2h + F.FullyConnected(
            h, w["h2h_weight"], w["h2h_bias"], num_hidden=hidden, name=f"h2h{t}"))
    return F.FullyConnected(h, w["out_weight"], w["out_bias"], num_hidden=10, name="out")


@pytest.mark.parametrize("net,shape", [(_mlp_net, (16, 20)),
                                       (_resnet_block_net, (8, 3, 16, 16)),
                                       (_unrolled_rnn_net, (4, 12, 5))])
def test_arena_places_live_entries_apart(net, shape):
    """No two entries alive at one step overlap in the arena (an in-place pair shares
    its place by design), every entry lies inside it, the arena is the peak of bytes
    alive at one step or within a few percent of it (the lower bound), and the values
    computed there match autograd's."""
    sym = net(mx.sym, mx.sym.Variable("data"), _SymWeights())
    ex = sym.simple_bind(mx.cpu(), data=shape)
    plan = ex.memory_plan
    arena = plan.slot_bytes[0]
    group = {}
    for src, dst in plan.inplace:
        group[dst] = group.get(src, src)
    entries = list(plan.entry_bytes)
    for e in entries:
        o = plan.offset_of[e]
        assert o % 64 == 0 and o + plan.entry_bytes[e] <= arena
    for i, a in enumerate(entries):
        for b in entries[i + 1:]:
            if group.get(a, a) == group.get(b, b):
                continue
            alive = not (plan.last[a] < plan.first[b] or plan.last[b] < plan.first[a])
            apart = (plan.offset_of[a] + plan.entry_bytes[a] <= plan.offset_of[b] or
                     plan.offset_of[b] + plan.entry_bytes[b] <= plan.offset_of[a])
            assert apart or not alive, (plan.names[a], plan.names[b])
    peak = 0
    for s in range(len(plan.steps)):
        live = {group.get(e, e) for e in entries if plan.first[e] <= s <= plan.last[e]}
        peak = max(peak, sum(plan.entry_bytes[g] for g in live))
    assert peak <= arena <= 1.05 * peak + 64 * len(entries)
    # and what is computed there is right: against autograd on the same arrays
    rng = np.random.RandomState(0)
    for a in ex.arg_arrays:
        a[:] = rng.uniform(-0.5, 0.5, a.shape)
    heads = [mx.nd.array(rng.uniform(-1, 1, o.shape)) for o in ex.outputs]
    ex.forward(is_train=True)
    ex.backward(heads)
    names = sym.list_arguments()
    args = {n: a.copy() for n, a in zip(names, ex.arg_arrays)}
    for a in args.values():
        a.attach_grad()
    with mx.autograd.record():
        ref = net(mx.nd, args["data"], args)
    ref.backward(heads[0])
    assert_almost_equal(ex.outputs[0].asnumpy(), ref.asnumpy(), rtol=1e-4, atol=1e-5)
    for n, g in zip(names, ex.grad_arrays):
        if g is not None:
            assert_almost_equal(g.asnumpy(), args[n].grad.asnumpy(), rtol=1e-3, atol=1e-4)

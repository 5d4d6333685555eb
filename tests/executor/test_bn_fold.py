"""An inference BatchNorm folded into the Convolution before it (executor/bn_fold.py).

An inference executor (no gradients) of a residual block runs its Convolution ->
BatchNorm [-> add] [-> relu] chains as one call each. Its outputs must be those of the
same executor with the fold switched off (MXNET_CPU_BN_FOLD=0), with random moving
statistics, gammas and betas, on the NumPy path (small shapes), on oneDNN's post-ops
(plain and channel-blocked entries) and in a training-mode forward, which runs the
plain calls (batch statistics, moving statistics updated). One chain is also checked
against a direct NumPy computation."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.backend import onednn
from mxnet.executor import bn_fold
from mxnet.operator import kernels_onednn


def _block(channels=8, fix_gamma=False, global_stats=False):
    """data -> c1 (3x3, bias) -> b1 -> relu -> c2 (1x1) -> b2 -> + (c3 (1x1) -> b3)
    -> relu -> c4 -> b4 -> + (the block's output) -> relu -> flatten: a downsampling
    block's shortcut of two BatchNorms meeting at one sum, then an identity one."""
    sym = mx.sym
    bn = dict(fix_gamma=fix_gamma, use_global_stats=global_stats)
    x = sym.var("data")
    c1 = sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=channels, name="c1")
    r1 = sym.Activation(sym.BatchNorm(c1, name="b1", **bn), act_type="relu", name="r1")
    c2 = sym.Convolution(r1, kernel=(1, 1), num_filter=2 * channels, no_bias=True, name="c2")
    c3 = sym.Convolution(x, kernel=(1, 1), num_filter=2 * channels, no_bias=True, name="c3")
    s1 = sym.elemwise_add(sym.BatchNorm(c2, name="b2", **bn),
                          sym.BatchNorm(c3, name="b3", **bn), name="s1")
    r2 = sym.relu(s1, name="r2")
    c4 = sym.Convolution(r2, kernel=(3, 3), pad=(1, 1), num_filter=2 * channels,
                         no_bias=True, name="c4")
    s2 = sym.elemwise_add(r2, sym.BatchNorm(c4, name="b4", **bn), name="s2")
    return sym.flatten(sym.relu(s2, name="r3"))


def _bind(sym, shape, fold, monkeypatch, seed=0, dtype=None):
    monkeypatch.setenv("MXNET_CPU_BN_FOLD", "1" if fold else "0")
    ex = sym.simple_bind(mx.cpu(), data=shape, grad_req="null",
                         type_dict={"data": dtype} if dtype else None)
    rng = np.random.RandomState(seed)
    for name, arr in ex.arg_dict.items():
        arr[:] = rng.standard_normal(arr.shape).astype(np.float32) * 0.5
    for name, arr in ex.aux_dict.items():
        if name.endswith("var"):
            arr[:] = rng.uniform(0.5, 2.0, arr.shape)
        else:
            arr[:] = rng.standard_normal(arr.shape) * 0.3
    return ex


def _folded(ex):
    return sorted(c.name for c in ex._fcalls if isinstance(c.fused, bn_fold._FoldedBatchNorm))


def _pair(monkeypatch, shape=(2, 3, 6, 6), **kw):
    want = _bind(_block(**kw), shape, False, monkeypatch)
    got = _bind(_block(**kw), shape, True, monkeypatch)
    return want, got


def _run(ex, is_train=False):
    ex.forward(is_train=is_train)
    return ex.outputs[0].asnumpy()


@pytest.mark.parametrize("fix_gamma", [False, True])
def test_inference_equals_the_unfolded_executor(monkeypatch, fix_gamma):
    want, got = _pair(monkeypatch, fix_gamma=fix_gamma)
    a, b = _run(want), _run(got)
    # every chain folded: the sum of the two shortcut BatchNorms goes to one of them
    assert _folded(got) == ["c1", "c2", "c3", "c4"]
    assert _folded(want) == []
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    assert (a > 0).any() and (a == 0).any()     # the ReLUs cut something


@pytest.mark.skipif(not onednn.available(), reason="oneDNN (libdnnl) absent")
@pytest.mark.parametrize("channels", [8, 5])
def test_onednn_post_ops_equal_the_unfolded_executor(monkeypatch, channels):
    # forced: every call on oneDNN whatever its size; 8 channels (16 after c2) fill
    # the blocks, so the executor keeps entries channel-blocked; 5 leave them plain
    ran = []
    plain = kernels_onednn.conv_affine_forward

    def counted(*args, **kwargs):
        res = plain(*args, **kwargs)
        ran.append(res is not NotImplemented)
        return res
    monkeypatch.setattr(kernels_onednn, "conv_affine_forward", counted)
    with kernels_onednn.forced():
        want, got = _pair(monkeypatch, shape=(2, 3, 8, 8), channels=channels)
        a, b = _run(want), _run(got)
    assert _folded(got) == ["c1", "c2", "c3", "c4"]
    assert ran == [True] * 4
    blocked = [c.name for c in got._fcalls if c.lay is not None]
    assert bool(blocked) == (channels == 8)
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)


def test_training_forward_runs_the_plain_chain(monkeypatch):
    want, got = _pair(monkeypatch)
    np.testing.assert_allclose(_run(got, True), _run(want, True), rtol=1e-5, atol=1e-5)
    for k in want.aux_dict:         # the moving statistics moved alike
        np.testing.assert_allclose(got.aux_dict[k].asnumpy(), want.aux_dict[k].asnumpy(),
                                   rtol=1e-6, atol=1e-6, err_msg=k)
    # and inference afterwards reads the moved statistics
    np.testing.assert_allclose(_run(got), _run(want), rtol=1e-5, atol=1e-5)


def test_global_stats_fold_in_a_training_forward(monkeypatch):
    want, got = _pair(monkeypatch, global_stats=True)
    np.testing.assert_allclose(_run(got, True), _run(want, True), rtol=1e-5, atol=1e-5)


def test_parameters_changed_between_calls_are_seen(monkeypatch):
    want, got = _pair(monkeypatch)
    _run(got)
    for ex in (want, got):
        ex.arg_dict["b1_gamma"][:] = -1.5
        ex.aux_dict["b4_moving_mean"][:] = 2.0
        ex.arg_dict["c1_bias"][:] = 0.7
    np.testing.assert_allclose(_run(got), _run(want), rtol=1e-5, atol=1e-5)


def test_one_chain_against_numpy(monkeypatch):
    sym = mx.sym.Activation(mx.sym.BatchNorm(
        mx.sym.Convolution(mx.sym.var("data"), kernel=(3, 3), pad=(1, 1), num_filter=4,
                           name="c"), fix_gamma=False, eps=1e-3, name="b"), act_type="relu")
    ex = _bind(sym, (2, 3, 5, 5), True, monkeypatch)
    got = _run(ex)
    assert _folded(ex) == ["c"]
    a = {k: v.asnumpy() for k, v in ex.arg_dict.items()}
    m, v = ex.aux_dict["b_moving_mean"].asnumpy(), ex.aux_dict["b_moving_var"].asnumpy()
    xp = np.pad(a["data"], ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    conv = np.einsum("ncijkl,fckl->nfij", win, a["c_weight"]) + \
        a["c_bias"][None, :, None, None]
    ch = (None, slice(None), None, None)
    bn = (conv - m[ch]) / np.sqrt(v[ch] + 1e-3) * a["b_gamma"][ch] + a["b_beta"][ch]
    np.testing.assert_allclose(got, np.maximum(bn, 0), rtol=1e-5, atol=1e-5)


def test_training_executor_does_not_fold(monkeypatch):
    monkeypatch.setenv("MXNET_CPU_BN_FOLD", "1")
    ex = _block().simple_bind(mx.cpu(), data=(2, 3, 6, 6))
    ex.forward(is_train=False)
    assert ex._graph.bn_chains == [] and _folded(ex) == []


def test_switched_off_plans_no_chains(monkeypatch):
    want, _ = _pair(monkeypatch)
    assert want._graph.bn_chains is None


def test_the_plan_keeps_the_convolution_input_alive(monkeypatch):
    # c4's input r2 is also the identity residual; c2's input r1 dies at c2 unfolded,
    # folded it is read where r2 (c2's chain's result) is written: they may not overlap
    _, got = _pair(monkeypatch)
    g = got._graph
    by_name = {n.name: i for i, n in enumerate(g.nodes)}
    r1, r2 = g.row_ptr[by_name["r1"]], g.row_ptr[by_name["r2"]]
    plan = g.memory
    lo1, lo2 = plan.offset_of[r1], plan.offset_of[r2]
    assert lo1 + plan.entry_bytes[r1] <= lo2 or lo2 + plan.entry_bytes[r2] <= lo1


def _chain_sym(ndim=2, groups=1):
    sym = mx.sym
    k = (3,) * ndim
    x = sym.var("data")
    c = sym.Convolution(x, kernel=k, pad=(1,) * ndim, num_filter=4, num_group=groups,
                        name="c")
    return sym.relu(sym.elemwise_add(sym.BatchNorm(c, fix_gamma=False, name="b"),
                                     sym.Convolution(x, kernel=(1,) * ndim, num_filter=4,
                                                     name="s")))


@pytest.mark.parametrize("ndim,groups", [(1, 1), (2, 2), (2, 4), (3, 1)])
def test_grouped_and_other_dimensions(monkeypatch, ndim, groups):
    shape = (2, 4) + (5,) * ndim
    want = _bind(_chain_sym(ndim, groups), shape, False, monkeypatch)
    got = _bind(_chain_sym(ndim, groups), shape, True, monkeypatch)
    a = _run(want)
    b = _run(got)
    assert _folded(got) == ["c"]
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    if onednn.available():
        with kernels_onednn.forced():
            want = _bind(_chain_sym(ndim, groups), shape, False, monkeypatch)
            got = _bind(_chain_sym(ndim, groups), shape, True, monkeypatch)
            np.testing.assert_allclose(_run(got), _run(want), rtol=1e-5, atol=1e-5)


def test_float64_runs_the_numpy_path(monkeypatch):
    shape = (2, 4, 5, 5)
    want, got = (_bind(_chain_sym(), shape, fold, monkeypatch, dtype="float64")
                 for fold in (False, True))
    assert got.outputs[0].dtype == np.float64
    np.testing.assert_allclose(_run(got), _run(want), rtol=1e-12, atol=1e-12)
    assert _folded(got) == ["c"]


def test_computed_weight_and_gamma(monkeypatch):
    # a weight and a gamma that nodes compute (weight normalisation, conditional
    # BatchNorm): planned entries, which the folded call reads at the chain's end
    sym = mx.sym
    x = sym.var("data")
    w = sym.var("w", shape=(4, 4, 3, 3))
    w = sym.broadcast_div(w, sym.sqrt(sym.sum(sym.square(w), axis=(1, 2, 3), keepdims=True)))
    c = sym.Convolution(x, weight=w, kernel=(3, 3), pad=(1, 1), num_filter=4,
                        no_bias=True, name="c")
    side = sym.Convolution(x, kernel=(1, 1), num_filter=4, name="s")
    gamma = sym.var("g", shape=(4,)) * 2 + 0.5
    b = sym.BatchNorm(c, gamma=gamma, fix_gamma=False, name="b")
    net = sym.relu(b + side)
    shape = (2, 4, 5, 5)
    want, got = (_bind(net, shape, fold, monkeypatch) for fold in (False, True))
    a, b = _run(want), _run(got)
    assert _folded(got) == ["c"]
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    g = got._graph
    held = set(g.held_reads[g.bn_chains[0][-1]])
    computed = [e for e in held if not g.is_variable_entry(e)]
    assert len(computed) >= 3      # data, weight, gamma (the residual too)

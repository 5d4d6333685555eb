"""Every optimizer of mx.optimizer against a NumPy reference of MXNet 1.9.1's update rule,
for several steps, with weight decay, gradient clipping, rescale_grad and per-parameter
lr/wd multipliers (set_lr_mult/set_wd_mult, idx2name), and multi_precision for float16.
"""
import math
import os
import pickle
import sys

import numpy as np
import pytest

import mxnet as mx
from mxnet.test_utils import assert_almost_equal

sys.path.insert(0, os.path.dirname(__file__))
import numpy_rules as R  # noqa: E402

NAMES = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma"}
SHAPES = [(3, 4), (4,), (2, 3)]
COMMON = dict(learning_rate=0.05, wd=0.01, rescale_grad=0.5, clip_gradient=0.8)


def lr_wd(lr, wd):
    """Per-index (lr, wd) after set_lr_mult({'fc_weight': 0.5}) and set_wd_mult({2: 2.0})
    with NAMES: names not ending in _weight/_gamma get wd_mult 0; an index key wins over
    the name."""
    return [(lr * 0.5, wd), (lr, 0.0), (lr, 2.0 * wd)]


def zeros_state(*names):
    return lambda shape: {n: np.zeros(shape) for n in names}


def clip_of(kw):
    return kw.get("clip_gradient")


# --- references: kw -> (make_state(shape), step(w, g, state, lr, wd, t)) --------------------

def ref_sgd(kw):
    mom = kw.get("momentum", 0.0)

    def step(w, g, s, lr, wd, t):
        if mom:
            return R.sgd_mom(w, g, s["mom"], lr, mom, wd, kw["rescale_grad"], clip_of(kw))
        return R.sgd(w, g, lr, wd, kw["rescale_grad"], clip_of(kw))
    return zeros_state("mom"), step


def ref_nag(kw):
    mom = kw.get("momentum", 0.0)

    def step(w, g, s, lr, wd, t):
        if mom:
            return R.nag_mom(w, g, s["mom"], lr, mom, wd, kw["rescale_grad"], clip_of(kw))
        return R.sgd(w, g, lr, wd, kw["rescale_grad"], clip_of(kw))
    return zeros_state("mom"), step


def ref_signum(kw):
    mom = kw.get("momentum", 0.9)

    def step(w, g, s, lr, wd, t):
        if mom:
            return R.signum(w, g, s["mom"], lr, mom, wd, kw["rescale_grad"], clip_of(kw),
                            kw.get("wd_lh", 0.0))
        return R.signsgd(w, g, lr, wd, kw["rescale_grad"], clip_of(kw))
    return zeros_state("mom"), step


def ref_ftml(kw):
    def step(w, g, s, lr, wd, t):
        return R.ftml(w, g, s["d"], s["v"], s["z"], lr, t, 0.6, 0.999, 1e-8, wd,
                      kw["rescale_grad"], clip_of(kw))
    return zeros_state("d", "v", "z"), step


def ref_adam(kw):
    b1, b2, eps = kw.get("beta1", 0.9), kw.get("beta2", 0.999), kw.get("epsilon", 1e-8)

    def step(w, g, s, lr, wd, t):
        lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        return R.adam(w, g, s["m"], s["v"], lr_t, b1, b2, eps, wd, kw["rescale_grad"],
                      clip_of(kw))
    return zeros_state("m", "v"), step


def ref_adagrad(kw):
    def step(w, g, s, lr, wd, t):
        return R.adagrad(w, g, s["h"], lr, kw.get("eps", 1e-7), wd, kw["rescale_grad"],
                         clip_of(kw))
    return zeros_state("h"), step


def ref_rmsprop(kw):
    g1, g2, eps = kw.get("gamma1", 0.9), kw.get("gamma2", 0.9), kw.get("epsilon", 1e-8)

    def step(w, g, s, lr, wd, t):
        if kw.get("centered"):
            return R.rmspropalex(w, g, s["n"], s["g"], s["delta"], lr, g1, g2, eps, wd,
                                 kw["rescale_grad"], clip_of(kw), kw.get("clip_weights"))
        return R.rmsprop(w, g, s["n"], lr, g1, eps, wd, kw["rescale_grad"], clip_of(kw),
                         kw.get("clip_weights"))
    return zeros_state("n", "g", "delta"), step


def ref_adadelta(kw):
    rho, eps = kw.get("rho", 0.9), kw.get("epsilon", 1e-5)

    def step(w, g, s, lr, wd, t):
        g = R.clip(g * kw["rescale_grad"], clip_of(kw))
        s["acc_g"][...] = rho * s["acc_g"] + (1 - rho) * g * g
        delta = np.sqrt(s["acc_d"] + eps) / np.sqrt(s["acc_g"] + eps) * g
        s["acc_d"][...] = rho * s["acc_d"] + (1 - rho) * delta * delta
        return w - (delta + wd * w)
    return zeros_state("acc_g", "acc_d"), step


def ref_ftrl(kw):
    def step(w, g, s, lr, wd, t):
        return R.ftrl(w, g, s["z"], s["n"], lr, kw.get("lamda1", 0.01), kw.get("beta", 1),
                      wd, kw["rescale_grad"], clip_of(kw))
    return zeros_state("z", "n"), step


def ref_adamax(kw):
    b1, b2 = kw.get("beta1", 0.9), kw.get("beta2", 0.999)

    def step(w, g, s, lr, wd, t):
        g = R.clip(g * kw["rescale_grad"] + wd * w, clip_of(kw))
        s["m"][...] = b1 * s["m"] + (1 - b1) * g
        s["u"][...] = np.maximum(b2 * s["u"], np.abs(g))
        return w - lr / (1 - b1 ** t) * s["m"] / s["u"]
    return zeros_state("m", "u"), step


def ref_nadam(kw):
    b1, b2, eps, decay = 0.9, 0.999, 1e-8, 0.004
    sched = [1.0]          # one schedule product for the whole optimizer, as MXNet

    def step(w, g, s, lr, wd, t):
        g = R.clip(g * kw["rescale_grad"] + wd * w, clip_of(kw))
        mom_t = b1 * (1 - 0.5 * 0.96 ** (t * decay))
        mom_t1 = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * decay))
        sched[0] *= mom_t
        s["m"][...] = b1 * s["m"] + (1 - b1) * g
        s["v"][...] = b2 * s["v"] + (1 - b2) * g * g
        m_bar = (1 - mom_t) * g / (1 - sched[0]) + mom_t1 * s["m"] / (1 - sched[0] * mom_t1)
        return w - lr * m_bar / (np.sqrt(s["v"] / (1 - b2 ** t)) + eps)
    return zeros_state("m", "v"), step


def ref_lamb(kw):
    def step(w, g, s, lr, wd, t):
        d = R.lamb_phase1(w, g, s["m"], s["v"], t, wd, kw.get("beta1", 0.9),
                          kw.get("beta2", 0.999), kw.get("epsilon", 1e-6),
                          kw.get("bias_correction", True), kw["rescale_grad"], clip_of(kw))
        r1, r2 = np.linalg.norm(w), np.linalg.norm(d)
        return R.lamb_phase2(w, d, r1, r2, lr, kw.get("lower_bound"), kw.get("upper_bound"))
    return zeros_state("m", "v"), step


def ref_lars(kw):
    eta, eps, mom = kw.get("eta", 0.001), kw.get("eps", 0), kw.get("momentum", 0.0)

    def step(w, g, s, lr, wd, t):
        name = s["name"]
        if not (name.endswith("gamma") or name.endswith("beta") or name.endswith("bias")):
            wn, gn = np.linalg.norm(w), np.linalg.norm(g * kw["rescale_grad"])
            if wn > 0 and gn > 0:
                lr = lr * eta * wn / (gn + wd * wn + eps)
        if mom:
            return R.sgd_mom(w, g, s["mom"], lr, mom, wd, kw["rescale_grad"], clip_of(kw))
        return R.sgd(w, g, lr, wd, kw["rescale_grad"], clip_of(kw))
    return zeros_state("mom"), step


def ref_dcasgd(kw):
    mom, lamda = kw.get("momentum", 0.0), kw.get("lamda", 0.04)

    def make(shape):
        return {"mom": np.zeros(shape), "prev": None}

    def step(w, g, s, lr, wd, t):
        if s["prev"] is None:
            s["prev"] = w.copy()
        g = R.clip(g * kw["rescale_grad"], clip_of(kw))
        upd = -lr * (g + wd * w + lamda * g * g * (w - s["prev"]))
        if mom:
            s["mom"][...] = mom * s["mom"] + upd
            upd = s["mom"]
        s["prev"] = w.copy()
        return w + upd
    return make, step


def ref_test(kw):
    def step(w, g, s, lr, wd, t):
        return w + g * kw["rescale_grad"]
    return zeros_state(), step


CASES = [
    ("sgd", dict(COMMON), ref_sgd),
    ("sgd", dict(COMMON, momentum=0.9), ref_sgd),
    ("ccsgd", dict(COMMON, momentum=0.9), ref_sgd),
    ("nag", dict(COMMON), ref_nag),
    ("nag", dict(COMMON, momentum=0.9), ref_nag),
    ("signum", dict(COMMON), ref_signum),
    ("signum", dict(COMMON, wd_lh=0.1), ref_signum),
    ("signum", dict(COMMON, momentum=0.0), ref_signum),
    ("ftml", dict(COMMON), ref_ftml),
    ("adam", dict(COMMON), ref_adam),
    ("adam", dict(learning_rate=0.01, beta1=0.8, beta2=0.9, epsilon=1e-4, rescale_grad=1.0),
     ref_adam),
    ("adagrad", dict(COMMON), ref_adagrad),
    ("adagrad", dict(learning_rate=0.1, eps=1e-3, rescale_grad=1.0), ref_adagrad),
    ("rmsprop", dict(COMMON), ref_rmsprop),
    ("rmsprop", dict(COMMON, clip_weights=0.5), ref_rmsprop),
    ("rmsprop", dict(COMMON, centered=True), ref_rmsprop),
    ("rmsprop", dict(COMMON, centered=True, gamma1=0.8, gamma2=0.7, clip_weights=0.5),
     ref_rmsprop),
    ("adadelta", dict(COMMON), ref_adadelta),
    ("adadelta", dict(rho=0.8, epsilon=1e-3, wd=0.01, rescale_grad=1.0), ref_adadelta),
    ("ftrl", dict(COMMON), ref_ftrl),
    ("ftrl", dict(lamda1=0.001, beta=0.5, learning_rate=0.3, rescale_grad=1.0), ref_ftrl),
    ("adamax", dict(COMMON), ref_adamax),
    ("nadam", dict(COMMON), ref_nadam),
    ("lamb", dict(COMMON), ref_lamb),
    ("lamb", dict(COMMON, lower_bound=0.1, upper_bound=1.0, bias_correction=False), ref_lamb),
    ("lars", dict(COMMON, eta=0.01), ref_lars),
    ("lars", dict(COMMON, eta=0.01, momentum=0.9), ref_lars),
    ("dcasgd", dict(COMMON), ref_dcasgd),
    ("dcasgd", dict(COMMON, momentum=0.9), ref_dcasgd),
    ("test", dict(rescale_grad=0.5), ref_test),
]


def _make(name, kw):
    opt = mx.optimizer.create(name, param_idx2name=dict(NAMES), **kw)
    opt.set_lr_mult({"fc_weight": 0.5})
    opt.set_wd_mult({2: 2.0})
    return opt


def _default_lr(name):
    return {"adam": 0.001, "rmsprop": 0.001, "adamax": 0.002, "nadam": 0.001,
            "lamb": 0.001, "ftrl": 0.1}.get(name, 0.01)


def run_against_reference(name, kw, ref, dtype="float32", steps=3, as_list=False):
    rng = np.random.default_rng(11)
    opt = _make(name, kw)
    updater = mx.optimizer.get_updater(opt)
    w0 = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    weights = [mx.nd.array(w, dtype=dtype) for w in w0]
    make_state, step = ref(kw)
    ref_w = [w.astype(np.float64) for w in w0]
    states = []
    for i, s in enumerate(SHAPES):
        st = make_state(s)
        st["name"] = NAMES[i]
        states.append(st)
    lr = kw.get("learning_rate", _default_lr(name))
    mults = lr_wd(lr, kw.get("wd", 0.0))
    for t in range(1, steps + 1):
        grads = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
        nd_grads = [mx.nd.array(g, dtype=dtype) for g in grads]
        if as_list:
            updater(list(range(len(SHAPES))), nd_grads, weights)
        else:
            for i in range(len(SHAPES)):
                updater(i, nd_grads[i], weights[i])
        for i in range(len(SHAPES)):
            ref_w[i] = step(ref_w[i], grads[i].astype(np.float64), states[i], *mults[i], t)
        tol = 2e-3 if dtype == "float16" else 1e-4
        for i in range(len(SHAPES)):
            want = ref_w[i].astype(dtype) if dtype == "float16" else ref_w[i]
            assert_almost_equal(weights[i].asnumpy(), want, rtol=tol, atol=tol,
                                names=(f"{name} w{i} step {t}", "reference"))
    return updater


@pytest.mark.parametrize("name,kw,ref", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_optimizer_matches_reference(name, kw, ref):
    run_against_reference(name, kw, ref)


@pytest.mark.parametrize("name,kw,ref", [
    ("sgd", dict(COMMON, momentum=0.9), ref_sgd),
    ("sgd", dict(COMMON), ref_sgd),
    ("lars", dict(COMMON, eta=0.01, momentum=0.9), ref_lars),
    ("lamb", dict(COMMON), ref_lamb),
])
def test_aggregated_updates_match_reference(name, kw, ref):
    # The Updater hands aggregating optimizers lists of weights (Gluon's Trainer path).
    run_against_reference(name, kw, ref, as_list=True)


@pytest.mark.parametrize("name,kw,ref", [
    ("sgd", dict(COMMON, momentum=0.9), ref_sgd),
    ("sgd", dict(COMMON), ref_sgd),
    ("nag", dict(COMMON, momentum=0.9), ref_nag),
    ("adam", dict(COMMON), ref_adam),
    ("rmsprop", dict(COMMON), ref_rmsprop),
    ("lamb", dict(COMMON), ref_lamb),
])
@pytest.mark.parametrize("as_list", [False, True])
def test_multi_precision_float16(name, kw, ref, as_list):
    updater = run_against_reference(name, dict(kw, multi_precision=True), ref,
                                    dtype="float16", as_list=as_list)
    # The state keeps a float32 master copy of every float16 weight.
    for state in updater.states.values():
        arrays = [s for s in state if isinstance(s, mx.nd.NDArray)]
        assert any(a.dtype == np.float32 for a in arrays)


def test_lbsgd_accumulates_and_warms_up():
    kw = dict(COMMON, momentum=0.9, batch_scale=2, warmup_epochs=1, updates_per_epoch=4)
    opt = mx.optimizer.create("lbsgd", **kw)
    updater = mx.optimizer.get_updater(opt)
    rng = np.random.default_rng(2)
    w0 = rng.standard_normal((3, 2)).astype(np.float32)
    w = mx.nd.array(w0)
    ref_w, mom, cum = w0.astype(np.float64), np.zeros((3, 2)), None
    for n in range(1, 7):
        g = rng.standard_normal((3, 2)).astype(np.float32)
        updater(0, mx.nd.array(g), w)
        cum = g.astype(np.float64) if cum is None else cum + g
        if n % 2 == 0:
            mult = 1.0 + (2 - 1) * n / 4 if n < 4 else 2.0
            ref_w = R.sgd_mom(ref_w, cum / 2, mom, 0.05 * mult, 0.9, 0.01, 0.5, 0.8)
            cum = None
        assert_almost_equal(w.asnumpy(), ref_w, rtol=1e-4, atol=1e-5)


def test_sgld_noise_has_the_right_scale_and_is_seeded():
    lr, shape = 0.01, (200, 100)
    w0 = np.ones(shape, dtype=np.float32)
    g = np.full(shape, 0.5, dtype=np.float32)

    def run(seed):
        mx.random.seed(seed)
        opt = mx.optimizer.create("sgld", learning_rate=lr, wd=0.1, rescale_grad=2.0)
        w = mx.nd.array(w0)
        opt.update(0, w, mx.nd.array(g), opt.create_state(0, w))
        return w.asnumpy()

    out = run(1)
    noise = out - (w0 - lr / 2 * (2.0 * g + 0.1 * w0))
    assert abs(noise.mean()) < 0.01 * math.sqrt(lr) * 10
    assert abs(noise.std() - math.sqrt(lr)) < 0.05 * math.sqrt(lr)
    np.testing.assert_array_equal(out, run(1))
    assert not np.array_equal(out, run(2))


def test_group_adagrad_matches_reference():
    opt = mx.optimizer.create("groupadagrad", learning_rate=0.1, rescale_grad=0.5,
                              clip_gradient=0.8)
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    w, state = mx.nd.array(w0), None
    state = opt.create_state(0, w)
    assert state.shape == (4, 1)
    ref_w, hist = w0.astype(np.float64), np.zeros((4, 1))
    for _ in range(3):
        g = rng.standard_normal((4, 3)).astype(np.float32)
        opt.update(0, w, mx.nd.array(g), state)
        gr = np.clip(g * 0.5, -0.8, 0.8)
        hist += (gr * gr).mean(axis=1, keepdims=True)
        ref_w = ref_w - 0.1 * gr / np.sqrt(hist + 1e-5)
        assert_almost_equal(w.asnumpy(), ref_w, rtol=1e-4, atol=1e-5)
    assert isinstance(mx.optimizer.contrib.GroupAdaGrad(), mx.optimizer.Optimizer)


# --- the Optimizer base: registry, lr/wd bookkeeping, schedulers, states ----------------------

def test_create_and_register():
    assert type(mx.optimizer.create("SGD")) is mx.optimizer.SGD
    assert type(mx.optimizer.Optimizer.create_optimizer("adam")) is mx.optimizer.Adam
    assert mx.optimizer.create("adam", learning_rate=0.1).learning_rate == 0.1
    with pytest.raises(ValueError, match="Cannot find optimizer"):
        mx.optimizer.create("no_such_optimizer")

    @mx.optimizer.register
    class MyTestOptimizer(mx.optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] = 7.0

    opt = mx.optimizer.create("mytestoptimizer")
    w = mx.nd.zeros(2)
    mx.optimizer.get_updater(opt)(0, mx.nd.ones(2), w)
    assert_almost_equal(w.asnumpy(), [7.0, 7.0])
    expected = {"sgd", "nag", "signum", "ftml", "lars", "lbsgd", "dcasgd", "sgld", "ccsgd",
                "adam", "adagrad", "rmsprop", "adadelta", "ftrl", "adamax", "nadam", "lamb",
                "test", "groupadagrad"}
    assert expected <= set(mx.optimizer.Optimizer.opt_registry)


def test_defaults():
    opt = mx.optimizer.Optimizer()
    assert opt.lr == 0.01 and opt.wd == 0.0 and opt.rescale_grad == 1.0
    assert opt.clip_gradient is None and opt.num_update == 0
    assert mx.optimizer.Adam().lr == 0.001
    assert mx.optimizer.Ftrl().lr == 0.1
    assert mx.optimizer.Adamax().lr == 0.002
    sgd = mx.optimizer.SGD()
    assert sgd.momentum == 0.0 and sgd.lazy_update is True and sgd.aggregate_num == 4
    assert mx.optimizer.LAMB().aggregate_num == 45
    assert mx.optimizer.Adam().aggregate_num == 0
    assert mx.optimizer.SGD().create_state(0, mx.nd.ones(2)) is None
    mom = mx.optimizer.SGD(momentum=0.9).create_state(0, mx.nd.ones(2, dtype="float64"))
    assert mom.dtype == np.float64 and mom.shape == (2,)


def test_lr_and_wd_multipliers():
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.5,
                           param_idx2name={0: "a_weight", 1: "a_bias", 2: "b_gamma",
                                           3: "c_beta"})
    assert [opt._get_wd(i) for i in range(4)] == [0.5, 0.0, 0.5, 0.0]
    opt.set_lr_mult({"a_weight": 2.0, 3: 0.5})
    assert [opt._get_lr(i) for i in range(4)] == [0.2, 0.1, 0.1, 0.05]
    opt.set_wd_mult({"b_gamma": 3.0})
    assert opt._get_wd(2) == 1.5
    assert opt._get_lrs([0, 1]) == [0.2, 0.1]

    class FakeParam:
        lr_mult, wd_mult = 10.0, 0.0
    opt.param_dict = {0: FakeParam()}
    assert opt._get_lr(0) == pytest.approx(1.0) and opt._get_wd(0) == 0.0


def test_symbol_attributes_set_multipliers():
    class FakeSym:
        def attr_dict(self):
            return {"w": {"__lr_mult__": "0.5", "__wd_mult__": "2"}}

        def list_arguments(self):
            return ["data", "w"]
    opt = mx.optimizer.SGD(sym=FakeSym(), learning_rate=1.0, wd=1.0)
    assert opt.lr_mult == {"w": 0.5} and opt.wd_mult == {"w": 2.0}


def test_update_count_and_scheduler():
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    opt = mx.optimizer.SGD(lr_scheduler=sched)
    assert opt.lr is None and opt.learning_rate == 1.0
    w = mx.nd.ones(1)
    lrs = []
    for _ in range(5):
        before = w.asnumpy()[0]
        opt.update(0, w, mx.nd.ones(1), None)
        lrs.append(before - w.asnumpy()[0])
    # num_update counts before the lr is read: 1, 2 -> 1.0; 3, 4 -> 0.5; 5 -> 0.25
    np.testing.assert_allclose(lrs, [1.0, 1.0, 0.5, 0.5, 0.25], rtol=1e-6)
    assert opt.num_update == 5
    with pytest.raises(UserWarning):
        opt.set_learning_rate(0.1)
    plain = mx.optimizer.SGD(learning_rate=0.3)
    plain.set_learning_rate(0.2)
    assert plain.learning_rate == 0.2
    with pytest.raises(DeprecationWarning):
        plain.set_lr_scale({})


def test_learning_rate_overrides_scheduler_base_lr(capsys):
    sched = mx.lr_scheduler.FactorScheduler(step=10, base_lr=1.0)
    mx.optimizer.SGD(learning_rate=0.5, lr_scheduler=sched)
    assert sched.base_lr == 0.5
    assert "overwritten" in capsys.readouterr().out


def test_begin_num_update_and_counts_per_device():
    opt = mx.optimizer.Adam(begin_num_update=10)
    opt._update_count(0)
    assert opt._index_update_count[0] == 11 and opt.num_update == 11
    opt._set_current_context(1)
    opt._update_count(0)
    assert opt._index_update_count[0] == 11
    opt._update_count([0, 1])
    assert opt._index_update_count == {0: 12, 1: 11} and opt.num_update == 12


def test_updater_states_roundtrip():
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(3).astype(np.float32) for _ in range(4)]

    def train(updater, w, gs):
        for g in gs:
            updater(0, mx.nd.array(g), w)

    opt = mx.optimizer.Adam(learning_rate=0.1)
    u1 = mx.optimizer.get_updater(opt)
    w1 = mx.nd.ones(3)
    train(u1, w1, grads[:2])
    blob = u1.get_states(dump_optimizer=True)
    u2 = mx.optimizer.get_updater(mx.optimizer.Adam(learning_rate=0.1))
    u2.set_states(blob)
    assert isinstance(u2.optimizer, mx.optimizer.Adam)
    assert u2.optimizer._index_update_count == {0: 2}
    w2 = w1.copy()
    train(u1, w1, grads[2:])
    train(u2, w2, grads[2:])
    assert_almost_equal(w1.asnumpy(), w2.asnumpy())
    # states only, and str/bytes keys
    u3 = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    u3(b"w", mx.nd.ones(2), mx.nd.ones(2))
    assert "w" in u3.states
    u3.set_states(u3.get_states())
    assert u3.states_synced == {"w": False}
    u3("w", mx.nd.ones(2), mx.nd.ones(2))
    assert u3.states_synced == {"w": True}


def test_optimizer_pickle_drops_param_dict():
    opt = mx.optimizer.SGD(momentum=0.9, param_dict={0: object()})
    clone = pickle.loads(pickle.dumps(opt))
    assert clone.param_dict == {} and clone.momentum == 0.9


def test_float16_without_multi_precision_warns():
    with pytest.warns(UserWarning, match="multi_precision"):
        mx.optimizer.Adam().create_state_multi_precision(0, mx.nd.ones(2, dtype="float16"))


def test_optimizer_namespace():
    assert mx.optimizer.optimizer.SGD is mx.optimizer.SGD
    assert mx.optimizer.Updater is mx.optimizer.optimizer.Updater
    assert callable(mx.optimizer.get_updater)


def test_updater_groups_by_dtype_and_device():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    upd = mx.optimizer.get_updater(opt)   # aggregates per dtype and device
    rng = np.random.RandomState(0)
    ws = [rng.randn(3, 2).astype(t) for t in (np.float32, np.float64, np.float32)]
    gs = [rng.randn(3, 2).astype(w.dtype) for w in ws]
    weights = [mx.nd.array(w, dtype=w.dtype) for w in ws]
    grads = [mx.nd.array(g, dtype=g.dtype) for g in gs]
    for _ in range(2):
        upd([0, 1, 2], grads, weights)
    for w0, g, w in zip(ws, gs, weights):
        mom = np.zeros_like(w0)
        ref = w0.copy()
        for _ in range(2):
            mom = 0.9 * mom - 0.1 * g
            ref = ref + mom
        assert w.dtype == w0.dtype
        np.testing.assert_allclose(w.asnumpy(), ref, rtol=1e-5)
    assert opt.num_update == 2


# The storage type MXNet 1.9.1 gives each optimizer's states for a row_sparse weight
# (asked of the real MXNet): the weight's where the optimizer has a row_sparse rule.
@pytest.mark.parametrize("name,kwargs,stypes", [
    ("sgd", {"momentum": 0.9}, ["row_sparse"]),
    ("sgd", {"momentum": 0.9, "lazy_update": False}, ["default"]),
    ("nag", {"momentum": 0.9}, ["default"]),
    ("signum", {}, ["row_sparse"]),
    ("adam", {}, ["row_sparse", "row_sparse"]),
    ("adam", {"lazy_update": False}, ["default", "default"]),
    ("adagrad", {}, ["row_sparse"]),
    ("rmsprop", {"centered": True}, ["row_sparse"] * 3),
    ("ftrl", {}, ["row_sparse", "row_sparse"]),
    ("lamb", {}, ["row_sparse", "row_sparse"]),
    ("lars", {"momentum": 0.9}, ["row_sparse"]),
    ("adadelta", {}, ["default", "default"]),
    ("groupadagrad", {}, ["row_sparse"]),
])
def test_state_storage_follows_a_row_sparse_weight_as_in_mxnet(name, kwargs, stypes):
    w = mx.nd.ones((4, 2)).tostype("row_sparse")
    states = mx.optimizer.create(name, **kwargs).create_state(0, w)
    flat = states if isinstance(states, (tuple, list)) else [states]
    assert [s.stype for s in flat] == stypes
    dense = mx.optimizer.create(name, **kwargs).create_state(0, mx.nd.ones((4, 2)))
    flat = dense if isinstance(dense, (tuple, list)) else [dense]
    assert all(s.stype == "default" for s in flat)


def _three_sparse_steps(name, kwargs, weight_stype, grad_stype="row_sparse"):
    rng = np.random.RandomState(7)
    w = mx.nd.array(rng.rand(6, 2)).tostype(weight_stype)
    opt = mx.optimizer.create(name, learning_rate=0.1, wd=0.05, **kwargs)
    states = opt.create_state(0, w)
    for rows in ([1, 4], [0, 1], [4]):
        g = mx.nd.sparse.row_sparse_array((rng.randn(len(rows), 2).astype(np.float32),
                                           np.array(rows)), shape=(6, 2))
        opt.update(0, w, g.tostype(grad_stype), states)
    flat = states if isinstance(states, (tuple, list)) else [states]
    return w.tostype("default").asnumpy(), [s.tostype("default").asnumpy() for s in flat
                                            if s is not None]


@pytest.mark.parametrize("name,kwargs,weight_stype", [
    ("sgd", {"momentum": 0.9}, "default"), ("sgd", {"momentum": 0.9}, "row_sparse"),
    ("sgd", {}, "default"), ("adam", {}, "default"), ("adam", {}, "row_sparse"),
    ("ftrl", {}, "row_sparse"),
])
def test_lazy_rule_updates_only_the_gradients_rows(name, kwargs, weight_stype):
    """MXNet's lazy_update: rows no gradient ever touched (2, 3, 5) keep their weight,
    even under weight decay."""
    w0 = np.random.RandomState(7).rand(6, 2).astype(np.float32)
    w, _ = _three_sparse_steps(name, kwargs, weight_stype)
    np.testing.assert_array_equal(w[[2, 3, 5]], w0[[2, 3, 5]])
    assert not np.allclose(w[[0, 1, 4]], w0[[0, 1, 4]])


@pytest.mark.parametrize("name,kwargs,weight_stype", [
    ("ftrl", {}, "default"), ("rmsprop", {}, "default"), ("rmsprop", {}, "row_sparse"),
    ("rmsprop", {"centered": True}, "row_sparse"), ("nag", {"momentum": 0.9}, "default"),
    ("signum", {"momentum": 0.9}, "row_sparse"), ("lamb", {}, "row_sparse"),
    ("sgd", {"momentum": 0.9, "lazy_update": False}, "row_sparse"),
    ("adam", {"lazy_update": False}, "default"),
])
def test_standard_rule_equals_the_dense_gradients_update(name, kwargs, weight_stype):
    """Where MXNet has no row_sparse rule for the storage types at hand it updates every
    row from the dense form of the gradient (its storage fallback) — and row_sparse
    states hold the values the update gave them."""
    w, states = _three_sparse_steps(name, kwargs, weight_stype)
    w_ref, states_ref = _three_sparse_steps(name, kwargs, "default", "default")
    np.testing.assert_allclose(w, w_ref, rtol=1e-6, atol=1e-7)
    for s, r in zip(states, states_ref):
        np.testing.assert_allclose(s, r, rtol=1e-6, atol=1e-7)
    assert any(np.abs(s).sum() > 0 for s in states)

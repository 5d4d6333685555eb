"""Update operators (sgd_update, adam_update, ...) against NumPy references of MXNet's
rules: several steps, states updated in place, out=weight semantics, errors."""
import os
import sys

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "optimizer"))
import numpy_rules as R  # noqa: E402

SHAPE = (3, 4)
FULL = dict(wd=0.1, rescale_grad=0.5, clip_gradient=0.3)

# (op, number of states, reference, params, states that must be positive)
CASES = [
    ("sgd_update", 0, R.sgd, dict(lr=0.1), ()),
    ("sgd_update", 0, R.sgd, dict(lr=0.05, **FULL), ()),
    ("sgd_mom_update", 1, R.sgd_mom, dict(lr=0.1, momentum=0.9), ()),
    ("sgd_mom_update", 1, R.sgd_mom, dict(lr=0.05, momentum=0.9, **FULL), ()),
    ("nag_mom_update", 1, R.nag_mom, dict(lr=0.1, momentum=0.9), ()),
    ("nag_mom_update", 1, R.nag_mom, dict(lr=0.05, momentum=0.9, **FULL), ()),
    ("signsgd_update", 0, R.signsgd, dict(lr=0.05, **FULL), ()),
    ("signum_update", 1, R.signum, dict(lr=0.05, momentum=0.9, **FULL), ()),
    ("signum_update", 1, R.signum, dict(lr=0.05, momentum=0.9, wd_lh=0.2, **FULL), ()),
    ("adam_update", 2, R.adam, dict(lr=0.1, beta1=0.8, beta2=0.95, epsilon=1e-6), (1,)),
    ("adam_update", 2, R.adam, dict(lr=0.05, **FULL), (1,)),
    ("rmsprop_update", 1, R.rmsprop, dict(lr=0.05, gamma1=0.9, epsilon=1e-6, **FULL), (0,)),
    ("rmsprop_update", 1, R.rmsprop, dict(lr=0.05, gamma1=0.9, clip_weights=0.5), (0,)),
    ("rmspropalex_update", 3, R.rmspropalex,
     dict(lr=0.05, gamma1=0.9, gamma2=0.8, epsilon=1e-6, clip_weights=0.7, **FULL), (0,)),
    ("ftrl_update", 2, R.ftrl, dict(lr=0.1, lamda1=0.01, beta=1.0, **FULL), (1,)),
    ("ftrl_update", 2, R.ftrl, dict(lr=0.3, lamda1=0.001, beta=0.5), (1,)),
    ("_sparse_adagrad_update", 1, R.adagrad, dict(lr=0.1, epsilon=1e-3, rescale_grad=0.5,
                                                  clip_gradient=0.3), (0,)),
]


def _state(rng, i, positive):
    a = rng.standard_normal(SHAPE).astype(np.float32)
    return np.abs(a) + 5.0 if i in positive else a * 0.1


@pytest.mark.parametrize("op,nstates,ref,params,positive", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_update_op_matches_reference(op, nstates, ref, params, positive):
    rng = np.random.default_rng(7)
    w = rng.standard_normal(SHAPE).astype(np.float32)
    states = [_state(rng, i, positive) for i in range(nstates)]
    weight = mx.nd.array(w)
    nd_states = [mx.nd.array(s) for s in states]
    ref_w, ref_states = w.astype(np.float64), [s.astype(np.float64) for s in states]
    fn = getattr(mx.nd, op) if not op.startswith("_") else getattr(mx.nd._internal, op)
    for _ in range(3):
        g = rng.standard_normal(SHAPE).astype(np.float32)
        ret = fn(weight, mx.nd.array(g), *nd_states, out=weight, **params)
        assert ret is weight
        ref_params = dict(params)
        ref_params.setdefault("clip_gradient", None)
        if op == "_sparse_adagrad_update":
            ref_params["wd"] = 0.0
        ref_w = ref(ref_w, g.astype(np.float64), *ref_states, **ref_params)
        assert_almost_equal(weight.asnumpy(), ref_w, rtol=1e-4, atol=1e-5)
        for got, want in zip(nd_states, ref_states):
            assert_almost_equal(got.asnumpy(), want, rtol=1e-4, atol=1e-5)


def test_ftml_update_matches_reference():
    rng = np.random.default_rng(3)
    w = rng.standard_normal(SHAPE).astype(np.float32)
    weight = mx.nd.array(w)
    states = [mx.nd.zeros(SHAPE) for _ in range(3)]
    ref_w, ref_states = w.astype(np.float64), [np.zeros(SHAPE) for _ in range(3)]
    for t in range(1, 4):
        g = rng.standard_normal(SHAPE).astype(np.float32)
        mx.nd.ftml_update(weight, mx.nd.array(g), *states, out=weight, lr=0.05, t=t,
                          wd=0.1, rescale_grad=0.5, clip_grad=0.3)
        ref_w = R.ftml(ref_w, g.astype(np.float64), *ref_states, lr=0.05, t=t, wd=0.1,
                       rescale_grad=0.5, clip_grad=0.3)
        assert_almost_equal(weight.asnumpy(), ref_w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bias_correction", [True, False])
def test_lamb_phases_match_reference(bias_correction):
    rng = np.random.default_rng(4)
    w = rng.standard_normal(SHAPE).astype(np.float32)
    weight, mean, var = mx.nd.array(w), mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)
    ref_w, ref_m, ref_v = w.astype(np.float64), np.zeros(SHAPE), np.zeros(SHAPE)
    for t in range(1, 4):
        g = rng.standard_normal(SHAPE).astype(np.float32)
        d = mx.nd.lamb_update_phase1(weight, mx.nd.array(g), mean, var, t=t, wd=0.01,
                                     rescale_grad=0.5, clip_gradient=0.3,
                                     bias_correction=bias_correction)
        ref_d = R.lamb_phase1(ref_w, g.astype(np.float64), ref_m, ref_v, t=t, wd=0.01,
                              rescale_grad=0.5, clip_gradient=0.3,
                              bias_correction=bias_correction)
        assert_almost_equal(d.asnumpy(), ref_d, rtol=1e-4, atol=1e-5)
        r1 = float(np.linalg.norm(weight.asnumpy()))
        r2 = float(np.linalg.norm(d.asnumpy()))
        mx.nd.lamb_update_phase2(weight, d, mx.nd.array([r1]), mx.nd.array([r2]),
                                 out=weight, lr=0.1, lower_bound=0.5, upper_bound=3.0)
        ref_w = R.lamb_phase2(ref_w, ref_d, r1, r2, lr=0.1, lower_bound=0.5, upper_bound=3.0)
        assert_almost_equal(weight.asnumpy(), ref_w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("r1,r2", [(0.0, 1.0), (1.0, 0.0), (2.0, 0.5)])
def test_lamb_phase2_zero_norms_use_ratio_one(r1, r2):
    w = np.arange(4, dtype=np.float32)
    g = np.ones(4, dtype=np.float32)
    out = mx.nd.lamb_update_phase2(mx.nd.array(w), mx.nd.array(g), mx.nd.array([r1]),
                                   mx.nd.array([r2]), lr=0.1)
    assert_almost_equal(out.asnumpy(), R.lamb_phase2(w, g, r1, r2, lr=0.1))


def test_without_out_weight_is_untouched_but_states_update():
    w = mx.nd.array([1.0, 2.0])
    mom = mx.nd.zeros(2)
    new = mx.nd.sgd_mom_update(w, mx.nd.array([1.0, 1.0]), mom, lr=0.1, momentum=0.9)
    assert_almost_equal(w.asnumpy(), [1.0, 2.0])
    assert_almost_equal(new.asnumpy(), [0.9, 1.9])
    assert_almost_equal(mom.asnumpy(), [-0.1, -0.1])


def test_clip_gradient_zero_clips_to_zero():
    # MXNet clips whenever clip_gradient >= 0 (the optimizers pass it only when set).
    w = mx.nd.array([1.0, 2.0])
    out = mx.nd.sgd_update(w, mx.nd.array([0.5, -1.0]), lr=0.1, clip_gradient=0.0)
    assert_almost_equal(out.asnumpy(), [1.0, 2.0])


@pytest.mark.parametrize("op,nmom", [("mp_sgd_update", 0), ("mp_sgd_mom_update", 1),
                                     ("mp_nag_mom_update", 1)])
def test_multi_precision_ops(op, nmom):
    rng = np.random.default_rng(5)
    w16 = rng.standard_normal(SHAPE).astype(np.float16)
    weight = mx.nd.array(w16, dtype="float16")
    w32 = mx.nd.array(w16.astype(np.float32))
    moms = [mx.nd.zeros(SHAPE) for _ in range(nmom)]
    ref_w, ref_m = w16.astype(np.float64), np.zeros(SHAPE)
    params = dict(lr=0.05, wd=0.1, rescale_grad=0.5, clip_gradient=0.3)
    if nmom:
        params["momentum"] = 0.9
    ref = {"mp_sgd_update": R.sgd, "mp_sgd_mom_update": R.sgd_mom,
           "mp_nag_mom_update": R.nag_mom}[op]
    for _ in range(3):
        g = rng.standard_normal(SHAPE).astype(np.float16)
        getattr(mx.nd, op)(weight, mx.nd.array(g, dtype="float16"), *moms, w32, out=weight,
                           **params)
        ref_w = ref(ref_w, g.astype(np.float64), *([ref_m] if nmom else []), **params)
        assert weight.dtype == np.float16 and w32.dtype == np.float32
        assert_almost_equal(w32.asnumpy(), ref_w, rtol=1e-4, atol=1e-4)
        assert_almost_equal(weight.asnumpy(), ref_w.astype(np.float16), rtol=1e-3,
                            atol=1e-3)


def test_mp_lamb_phases():
    rng = np.random.default_rng(6)
    w16 = rng.standard_normal(SHAPE).astype(np.float16)
    weight, w32 = mx.nd.array(w16, dtype="float16"), mx.nd.array(w16.astype(np.float32))
    mean, var = mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)
    g = rng.standard_normal(SHAPE).astype(np.float16)
    d = mx.nd.mp_lamb_update_phase1(weight, mx.nd.array(g, dtype="float16"), mean, var, w32,
                                    t=1, wd=0.01)
    assert d.dtype == np.float32
    ref_m, ref_v = np.zeros(SHAPE), np.zeros(SHAPE)
    ref_d = R.lamb_phase1(w16.astype(np.float64), g.astype(np.float64), ref_m, ref_v, t=1,
                          wd=0.01)
    assert_almost_equal(d.asnumpy(), ref_d, rtol=1e-3, atol=1e-3)
    mx.nd.mp_lamb_update_phase2(weight, d, mx.nd.array([2.0]), mx.nd.array([1.0]), w32,
                                out=weight, lr=0.1)
    ref_w = R.lamb_phase2(w16.astype(np.float64), ref_d, 2.0, 1.0, lr=0.1)
    assert_almost_equal(w32.asnumpy(), ref_w, rtol=1e-3, atol=1e-3)
    assert_almost_equal(weight.asnumpy(), ref_w.astype(np.float16), rtol=1e-3, atol=1e-3)


def test_float16_weights_keep_their_dtype():
    w = mx.nd.array([1.0, 2.0], dtype="float16")
    out = mx.nd.sgd_update(w, mx.nd.array([1.0, 1.0], dtype="float16"), lr=0.5)
    assert out.dtype == np.float16
    assert_almost_equal(out.asnumpy(), [0.5, 1.5])


def test_bad_inputs_raise_mxnet_error():
    w = mx.nd.ones(2)
    with pytest.raises(MXNetError, match="grad"):
        mx.nd.sgd_update(w, mx.nd.ones(3), lr=0.1)
    with pytest.raises(MXNetError, match="dtype"):
        mx.nd.sgd_update(w, mx.nd.ones(2, dtype="float16"), lr=0.1)
    with pytest.raises(MXNetError, match="lr"):
        mx.nd.sgd_update(w, mx.nd.ones(2))
    # states are checked when the update runs (asynchronously: at the next read)
    with pytest.raises(MXNetError, match="mom"):
        mx.nd.sgd_mom_update(w, mx.nd.ones(2), mx.nd.ones(3), lr=0.1).asnumpy()
    with pytest.raises(MXNetError, match="wd"):
        mx.nd._internal._sparse_adagrad_update(w, mx.nd.ones(2), mx.nd.zeros(2), lr=0.1,
                                               wd=0.1).asnumpy()


def test_lazy_update_is_accepted_on_dense_arrays():
    w = mx.nd.array([1.0])
    mx.nd.adam_update(w, mx.nd.array([1.0]), mx.nd.zeros(1), mx.nd.zeros(1), out=w, lr=0.1,
                      lazy_update=False)
    assert_almost_equal(w.asnumpy(), [1.0 - 0.1 * 0.1 / (np.sqrt(0.001) + 1e-8)], rtol=1e-5)

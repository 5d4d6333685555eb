"""The oneDNN runtime: loading, switches, enum values, thread count, cache, threads."""
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

from mxnet.backend import onednn
from mxnet.backend.onednn import _lib as L
from mxnet.backend.onednn import _runtime

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "src")
needs_lib = pytest.mark.skipif(not onednn.available(), reason="oneDNN (libdnnl) absent")


def _run(code, **env):
    e = dict(os.environ, PYTHONPATH=os.path.abspath(SRC), **env)
    return subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code],
                          env=e, capture_output=True, text=True, timeout=120)


def test_disabled_by_mxnet_mkldnn_enabled():
    r = _run("from mxnet.backend import onednn; print(onednn.available(), onednn.version(),"
             " onednn.load_error())", MXNET_MKLDNN_ENABLED="0")
    assert r.returncode == 0, r.stderr          # no warning when switched off on purpose
    assert r.stdout.split()[:2] == ["False", "None"]
    assert "MXNET_MKLDNN_ENABLED" in r.stdout


def test_missing_library_warns_once_and_falls_back(monkeypatch):
    monkeypatch.setattr(_runtime, "_state", {"rt": None, "error": None, "tried": False})
    monkeypatch.setattr(L, "_candidates", lambda: iter(["/nonexistent/libdnnl.so.3"]))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert not onednn.available()
        assert not onednn.available()
        assert onednn.version() is None
    assert len([x for x in w if issubclass(x.category, RuntimeWarning)]) == 1
    assert "/nonexistent/libdnnl.so.3" in onednn.load_error()
    from mxnet.operator.kernels_onednn import OPS
    from mxnet.operator.registry import OpContext, get_op
    import mxnet as mx
    p = get_op("Activation").parse({"act_type": "relu"})
    x = np.random.randn(3, 4).astype(np.float32)
    assert OPS["Activation"][0](OpContext(np, mx.cpu()), p, [x], []) is NotImplemented


def test_thread_count_follows_omp_and_mxnet_cap(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("MXNET_OMP_MAX_THREADS", raising=False)
    assert _runtime.num_threads() == 3
    monkeypatch.setenv("MXNET_OMP_MAX_THREADS", "2")
    assert _runtime.num_threads() == 2
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.delenv("MXNET_OMP_MAX_THREADS")
    assert _runtime.num_threads() == len(os.sched_getaffinity(0))


@needs_lib
def test_version_and_library_path():
    assert onednn.version().startswith("3.")
    assert os.path.exists(onednn.library_path())


@needs_lib
def test_enum_values_are_the_librarys():
    lib = _runtime.runtime().lib
    names = {L.ELTWISE_RELU: b"eltwise_relu", L.ELTWISE_TANH: b"eltwise_tanh",
             L.ELTWISE_SOFT_RELU: b"eltwise_soft_relu", L.ELTWISE_LOGISTIC: b"eltwise_logistic",
             L.ELTWISE_RELU_DST: b"eltwise_relu_use_dst_for_bwd",
             L.ELTWISE_TANH_DST: b"eltwise_tanh_use_dst_for_bwd",
             L.ELTWISE_LOGISTIC_DST: b"eltwise_logistic_use_dst_for_bwd",
             L.POOLING_MAX: b"pooling_max", L.POOLING_AVG_INCLUDE:
             b"pooling_avg_include_padding", L.POOLING_AVG_EXCLUDE:
             b"pooling_avg_exclude_padding", L.LRN_ACROSS_CHANNELS: b"lrn_across_channels",
             L.SOFTMAX_ACCURATE: b"softmax_accurate", L.SOFTMAX_LOG: b"softmax_log",
             L.CONVOLUTION_DIRECT: b"convolution_direct",
             L.DECONVOLUTION_DIRECT: b"deconvolution_direct"}
    for v, name in names.items():
        assert lib.dnnl_alg_kind2str(v) == name
    props = {L.FORWARD_TRAINING: b"forward_training", L.FORWARD_INFERENCE:
             b"forward_inference", L.BACKWARD: b"backward", L.BACKWARD_DATA: b"backward_data",
             L.BACKWARD_WEIGHTS: b"backward_weights"}
    for v, name in props.items():
        assert lib.dnnl_prop_kind2str(v) == name


@needs_lib
def test_primitive_cache_reuses_plans():
    from mxnet.backend.onednn import kernels as K
    from mxnet.backend.onednn.primitive import cache_info
    x = np.random.randn(3, 5, 7).astype(np.float32)
    y = np.empty_like(x)
    K.softmax_forward(x, y, 2)
    before = cache_info()
    K.softmax_forward(x, y, 2)
    after = cache_info()
    assert after["misses"] == before["misses"] and after["hits"] == before["hits"] + 1
    e = np.exp(x - x.max(axis=2, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=2, keepdims=True), rtol=1e-5, atol=1e-6)


@needs_lib
def test_concurrent_calls_from_threads_are_correct():
    from mxnet.backend.onednn import kernels as K
    w = np.random.randn(8, 4, 3, 3).astype(np.float32)
    xs = [np.random.randn(2, 4, 6, 6).astype(np.float32) for _ in range(6)]
    ys = [np.empty((2, 8, 4, 4), np.float32) for _ in xs]

    def work(i):
        for _ in range(5):
            K.conv_forward(xs[i], w, None, ys[i], (1, 1), (1, 1), (0, 0), (0, 0))
    ts = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for x, y in zip(xs, ys):
        ref = np.zeros_like(y)
        for i in range(4):
            for j in range(4):
                ref[:, :, i, j] = np.einsum("ncij,fcij->nf", x[:, :, i:i + 3, j:j + 3], w)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


@needs_lib
def test_register_all_registers_forward_and_backward_per_operator():
    from mxnet.operator.kernels_onednn import OPS, register_all
    calls = []
    names = register_all(lambda name, dev, fn, backward=False:
                         calls.append((name, dev, backward, fn)))
    assert sorted(names) == sorted(OPS)
    assert {(n, b) for n, _, b, _ in calls} == {(n, b) for n in OPS for b in (False, True)}
    assert all(dev == "cpu" and callable(fn) for _, dev, _, fn in calls)


@needs_lib
def test_wait_policy_is_set_for_libgomp_only_and_user_choice_wins():
    code = ("import os; from mxnet.backend import onednn; assert onednn.available(); "
            "print(os.environ.get('OMP_WAIT_POLICY'))")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY",
                                                            "GOMP_SPINCOUNT")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(env, PYTHONPATH=os.path.abspath(SRC)), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "None"       # not left behind for child processes
    r = _run(code, OMP_WAIT_POLICY="ACTIVE")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ACTIVE"
    r = _run(code.replace("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"), GOMP_SPINCOUNT="7")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "7"


def test_wait_policy_spins_briefly_only_with_an_idle_core():
    from mxnet.backend.onednn._runtime import SHORT_SPIN, wait_policy
    assert wait_policy(0.5, 2) == {"OMP_WAIT_POLICY": "ACTIVE",
                                   "GOMP_SPINCOUNT": str(SHORT_SPIN)}
    assert wait_policy(2.0, 2) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert wait_policy(9.0, 4) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert wait_policy(None, 2) == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_register_all_chains_to_kernels_registered_before(monkeypatch):
    from mxnet.operator.kernels_onednn import OPS, register_all
    table = {("Pooling", "cpu", False): lambda *a, **k: ["numpy kernel"]}

    def register(name, dev, fn, backward=False):
        table[(name, dev, backward)] = fn
    register_all(register, lambda name, dev, backward: table.get((name, dev, backward)))
    fwd = table[("Pooling", "cpu", False)]
    assert fwd.fallback is not None and table[("Convolution", "cpu", False)] is OPS[
        "Convolution"][0]
    # sum pooling is not oneDNN's: the earlier kernel answers
    from mxnet.operator.registry import OpContext, get_op
    import mxnet as mx
    p = get_op("Pooling").parse({"kernel": (2, 2), "pool_type": "sum"})
    x = np.random.randn(1, 1, 4, 4).astype(np.float32)
    assert fwd(OpContext(np, mx.cpu()), p, [x], []) == ["numpy kernel"]


def _child_conv(q):
    from mxnet.backend.onednn import kernels as K
    x, w = np.ones((2, 3, 5, 5), np.float32), np.ones((4, 3, 3, 3), np.float32)
    y = np.empty((2, 4, 3, 3), np.float32)
    K.conv_forward(x, w, None, y, (1, 1), (1, 1), (0, 0), (0, 0))
    q.put(float(y.sum()))


@needs_lib
def test_forked_child_runs_primitives():
    """DataLoader workers fork: libgomp's thread pool does not survive fork, so the
    child runs on one thread with a fresh lock instead of hanging."""
    import multiprocessing as mp
    _child_conv(mp.get_context("fork").SimpleQueue())      # parent's OpenMP pool exists
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    proc = ctx.Process(target=_child_conv, args=(q,))
    proc.start()
    proc.join(60)
    alive = proc.is_alive()
    if alive:
        proc.kill()
    assert not alive and proc.exitcode == 0
    assert q.get(timeout=5) == 2 * 4 * 3 * 3 * 27.0


@needs_lib
def test_reference_implementations_are_refused_outside_forced(monkeypatch):
    """Where only oneDNN's reference implementation covers a case (max pooling over
    plain NCHW data on AVX2 took ~90 ms a call), the adapter declines and the NumPy
    body runs; kernels_onednn.forced() (these tests) still reaches oneDNN."""
    from mxnet.backend.onednn import primitive
    from mxnet.operator.kernels_onednn import OPS
    from onednn_helpers import ctx_for, params
    x = np.random.RandomState(0).rand(2, 3, 9, 9).astype(np.float32)
    p = params("Pooling", kernel=(3, 3), stride=(2, 2), pool_type="max")
    monkeypatch.setattr(primitive, "implementation", lambda pd: "ref:any")
    primitive.forget_cache()
    assert OPS["Pooling"][0](ctx_for(), p, [x], []) is not NotImplemented   # forced
    saved = primitive.ALLOW_REFERENCE[0]
    primitive.ALLOW_REFERENCE[0] = 0                    # as outside forced()
    try:
        assert OPS["Pooling"][0](ctx_for(), p, [x], []) is NotImplemented
    finally:
        primitive.ALLOW_REFERENCE[0] = saved
        primitive.forget_cache()


def test_implementation_names_what_onednn_chose():
    if not onednn.available():
        pytest.skip("oneDNN (libdnnl) absent")
    from mxnet.backend.onednn import primitive
    from mxnet.operator.kernels_onednn import OPS
    from onednn_helpers import ctx_for, params
    x = np.random.RandomState(0).rand(2, 3, 9, 9).astype(np.float32)
    p = params("Pooling", kernel=(3, 3), stride=(2, 2), pool_type="avg")
    OPS["Pooling"][0](ctx_for(), p, [x], [])
    names = {primitive.implementation(plan.pd) for plan in primitive._CACHE.values()
             if plan is not None}
    assert names and all(":" in n for n in names)       # e.g. 'jit:avx2', 'ref:any'

"""cuDNN adapters on a GPU against the operators' own CuPy bodies (same device) and the
NumPy bodies on the CPU, forward and backward; and the registered path through
mx.nd/autograd with grad_req 'write' and 'add'. Skips without a GPU, CuPy or cuDNN."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.operator.registry import OpContext, get_op

if mx.context.num_gpus() == 0:
    pytest.skip("no GPU", allow_module_level=True)
cp = pytest.importorskip("cupy")
from mxnet.backend import cudnn  # noqa: E402

if not cudnn.available():
    pytest.skip(f"cuDNN unavailable: {cudnn.load_error()}", allow_module_level=True)
from mxnet.operator.kernels_cudnn import OPS  # noqa: E402



@pytest.fixture(autouse=True)
def _strict_fp32(monkeypatch):
    """These tests compare with float32 tolerances: convolutions in strict fp32 (the
    default allows TF32, tested on its own below)."""
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")


TOL = {np.float16: (2e-2, 2e-2), np.float32: (1e-4, 1e-4), np.float64: (1e-9, 1e-9)}
GPU = mx.gpu(0)


def _ctx(xp, is_train=False, need=None, shapes=None):
    dev = GPU if xp is cp else mx.cpu()
    return OpContext(xp, dev, is_train=is_train, need_grad=need, in_shapes=shapes,
                     req=None if need is None else ["write"] * len(need))


def _close(ref, got, dtype, scale=1.0):
    rtol, atol = TOL[dtype]
    ref = cp.asnumpy(ref) if isinstance(ref, cp.ndarray) else ref
    got = cp.asnumpy(got) if isinstance(got, cp.ndarray) else got
    assert ref.shape == got.shape and ref.dtype == got.dtype, (ref.shape, got.shape,
                                                               ref.dtype, got.dtype)
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64),
                               rtol=rtol * scale, atol=atol * scale)


def _run(name, kw, inputs, aux=(), is_train=True, dtype=np.float32, scale=1.0,
         out_idx=None):
    """Forward and backward of the cuDNN adapter vs the CuPy body vs the NumPy body;
    the adapter writes into given out/in_grad arrays. Returns the adapter's outputs."""
    op = get_op(name)
    p = op.parse(kw)
    np_in = list(inputs)
    g_in = [cp.asarray(a) for a in np_in]
    np_aux, cp_aux, k_aux = [a.copy() for a in aux], [cp.asarray(a) for a in aux], \
        [cp.asarray(a) for a in aux]
    ref_np = op.forward(_ctx(np, is_train), p, [a.copy() for a in np_in], np_aux)
    ref_cp = op.forward(_ctx(cp, is_train), p, list(g_in), cp_aux)
    out = [cp.empty(r.shape, r.dtype) for r in ref_cp]
    got = OPS[name][0](_ctx(cp, is_train), p, list(g_in), k_aux, out=out)
    assert got is not NotImplemented, f"{name} {kw}: cuDNN declined"
    assert got[0] is out[0]
    idx = range(len(ref_np)) if out_idx is None else out_idx
    for i in idx:
        _close(ref_cp[i], got[i], dtype, scale)
        _close(ref_np[i], got[i], dtype, scale)
    for a, b, c in zip(np_aux, cp_aux, k_aux):
        _close(b, c, a.dtype.type, scale)
        _close(a, c, a.dtype.type, scale)
    # backward, writing into given gradient arrays
    rng = np.random.RandomState(1)
    dy = [rng.randn(*r.shape).astype(r.dtype) for r in ref_np]
    need = [True] * len(inputs)
    shapes = [a.shape for a in inputs]
    outs_np = [cp.asnumpy(r) for r in ref_cp]
    gref_np = op.backward(_ctx(np, True, need, shapes), p, [d.copy() for d in dy],
                          [a.copy() for a in np_in], outs_np, [a.copy() for a in aux])
    gref_cp = op.backward(_ctx(cp, True, need, shapes), p, [cp.asarray(d) for d in dy],
                          list(g_in), list(ref_cp), [cp.asarray(a) for a in aux])
    in_grad = [None if r is None else cp.full(r.shape, 7, r.dtype) for r in gref_cp]
    ggot = OPS[name][1](_ctx(cp, True, need, shapes), p, [cp.asarray(d) for d in dy],
                        list(g_in), list(ref_cp), [cp.asarray(a) for a in aux],
                        in_grad=in_grad)
    assert ggot is not NotImplemented, f"{name} {kw}: cuDNN backward declined"
    for r_np, r_cp, g, dst in zip(gref_np, gref_cp, ggot, in_grad):
        if r_cp is None:
            continue
        assert g is dst
        _close(r_cp, g, dtype, scale * 10)
        _close(r_np.reshape(r_cp.shape), g, dtype, scale * 10)
    return got


def _r(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


CONV = [
    ((2, 4, 9, 9), dict(kernel=(3, 3), num_filter=6, pad=(1, 1))),
    ((2, 4, 9, 8), dict(kernel=(3, 2), num_filter=6, stride=(2, 1), dilate=(1, 2),
                        num_group=2, no_bias=True)),
    ((2, 3, 11), dict(kernel=(3,), num_filter=4, pad=(1,), stride=(2,))),
    ((1, 2, 5, 6, 5), dict(kernel=(3, 3, 3), num_filter=3, pad=(1, 1, 1))),
    ((2, 4, 7, 7), dict(kernel=(1, 1), num_filter=4, num_group=4, cudnn_tune="off")),
    ((2, 4, 7, 7), dict(kernel=(3, 3), num_filter=8, cudnn_tune="fastest", workspace=1)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("shape,kw", CONV)
def test_convolution(shape, kw, dtype):
    nd = len(kw["kernel"])
    x = _r(*shape).astype(dtype)
    w = (_r(kw["num_filter"], shape[1] // kw.get("num_group", 1), *kw["kernel"], seed=1)
         * 0.3).astype(dtype)
    ins = [x, w] if kw.get("no_bias") else [x, w, _r(kw["num_filter"], seed=2).astype(dtype)]
    _run("Convolution", kw, ins, dtype=dtype, scale=3 if nd == 3 else 1)


DECONV = [
    ((2, 4, 5, 5), dict(kernel=(3, 3), num_filter=6, stride=(2, 2), pad=(1, 1),
                        adj=(1, 1), no_bias=False)),
    ((2, 4, 6), dict(kernel=(4,), num_filter=2, stride=(2,), num_group=2)),
    ((1, 2, 3, 4, 3), dict(kernel=(2, 2, 2), num_filter=3, stride=(2, 2, 2))),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,kw", DECONV)
def test_deconvolution(shape, kw, dtype):
    x = _r(*shape).astype(dtype)
    w = (_r(shape[1], kw["num_filter"] // kw.get("num_group", 1), *kw["kernel"], seed=1)
         * 0.3).astype(dtype)
    ins = [x, w] if kw.get("no_bias", True) else \
        [x, w, _r(kw["num_filter"], seed=2).astype(dtype)]
    _run("Deconvolution", kw, ins, dtype=dtype)


POOL = [
    ((2, 3, 8, 8), dict(kernel=(2, 2), stride=(2, 2))),
    ((2, 3, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1))),
    ((2, 3, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg")),
    ((2, 3, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                        count_include_pad=False)),
    ((2, 3, 6, 5), dict(global_pool=True, pool_type="avg")),
    ((2, 3, 6, 5), dict(global_pool=True, kernel=(1, 1))),
    ((2, 3, 11), dict(kernel=(3,), stride=(2,), pad=(1,))),
    ((1, 2, 6, 6, 6), dict(kernel=(2, 2, 2), stride=(2, 2, 2), pool_type="avg")),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape,kw", POOL)
def test_pooling(shape, kw, dtype):
    _run("Pooling", kw, [_r(*shape).astype(dtype)], dtype=dtype)


def test_pooling_declines_what_cudnn_cannot_express():
    p = get_op("Pooling").parse(dict(kernel=(3, 3), stride=(2, 2), pool_type="avg",
                                     pooling_convention="full"))
    x = cp.asarray(_r(2, 3, 10, 10))
    assert OPS["Pooling"][0](_ctx(cp), p, [x], []) is NotImplemented
    p = get_op("Pooling").parse(dict(kernel=(2, 2), pool_type="sum"))
    assert OPS["Pooling"][0](_ctx(cp), p, [x], []) is NotImplemented


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("kw,is_train", [
    (dict(fix_gamma=False), True), (dict(), True), (dict(fix_gamma=False), False),
    (dict(fix_gamma=False, eps=1e-5, momentum=0.8), True)])
@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (6, 5), (3, 4, 7)])
def test_batchnorm(shape, kw, is_train, dtype):
    c = shape[1]
    pt = np.float64 if dtype == np.float64 else np.float32
    x = (_r(*shape) * 2 + 1).astype(dtype)
    ins = [x, (_r(c, seed=1) + 1).astype(pt), _r(c, seed=2).astype(pt)]
    aux = [_r(c, seed=3).astype(pt), (np.abs(_r(c, seed=4)) + 0.5).astype(pt)]
    _run("BatchNorm", kw, ins, aux, is_train=is_train, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,axis", [((4, 10), -1), ((2, 5, 3, 4), 1), ((3, 4, 6), 0)])
def test_softmax(name, shape, axis, dtype):
    _run(name, dict(axis=axis), [_r(*shape).astype(dtype)], dtype=dtype)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_long_strided_axis_declines_to_the_cupy_body(name):
    """cuDNN's CHANNEL mode is slow over long non-innermost axes: the adapter declines
    (NotImplemented), the CuPy body computes it."""
    op = get_op(name)
    p = op.parse(dict(axis=1))
    x = cp.asarray(_r(2, 300, 3))
    assert OPS[name][0](_ctx(cp), p, [x], []) is NotImplemented


def test_softmax_innermost_axis_uses_instance_mode_and_matches_numpy():
    """The classifier case (a long innermost axis) runs on cuDNN (INSTANCE mode)."""
    _run("softmax", dict(axis=-1), [_r(64, 1000)], dtype=np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh"])
def test_activation(act, dtype):
    _run("Activation", dict(act_type=act), [_r(3, 4, 5).astype(dtype)], dtype=dtype)


def test_registered_path_matches_cpu_with_grad_req_add():
    """mx.nd on the GPU (kernel table -> cuDNN) equals the CPU result, including
    accumulated gradients (grad_req='add' is applied by the runner)."""
    x_np, w_np, b_np = _r(2, 4, 8, 8), _r(5, 4, 3, 3, seed=1) * 0.3, _r(5, seed=2)
    res = {}
    for ctx in (mx.cpu(), GPU):
        x, w, b = (mx.nd.array(a, ctx=ctx) for a in (x_np, w_np, b_np))
        gamma, beta = mx.nd.ones(5, ctx=ctx), mx.nd.zeros(5, ctx=ctx)
        mm, mv = mx.nd.zeros(5, ctx=ctx), mx.nd.ones(5, ctx=ctx)
        for a in (x, w, b):
            a.attach_grad(grad_req="add")
        for _ in range(2):
            with mx.autograd.record():
                y = mx.nd.Convolution(x, w, b, kernel=(3, 3), num_filter=5, pad=(1, 1))
                y = mx.nd.BatchNorm(y, gamma, beta, mm, mv, fix_gamma=True)
                y = mx.nd.Activation(y, act_type="relu")
                y = mx.nd.Pooling(y, kernel=(2, 2), stride=(2, 2))
                y = mx.nd.log_softmax(y.reshape((2, -1)), axis=-1)
                loss = (y * y).sum()
            loss.backward()
        res[ctx.device_type] = [a.asnumpy() for a in (y, x.grad, w.grad, b.grad, mm, mv)]
    for c, g in zip(res["cpu"], res["gpu"]):
        np.testing.assert_allclose(g, c, rtol=1e-3, atol=1e-3)


def test_convolution_default_math_allows_tf32_within_half_precision_tolerance(monkeypatch):
    """Without NVIDIA_TF32_OVERRIDE=0, float32 convolutions run in cuDNN's DEFAULT_MATH
    (TF32 on sm_80+, as MXNet 1.9.1 and PyTorch): equal to the CPU's result to
    float16-like tolerance, forward and backward, through the registered path."""
    from mxnet.backend.cudnn import _lib as L
    from mxnet.backend.cudnn import kernels as K
    monkeypatch.delenv("NVIDIA_TF32_OVERRIDE", raising=False)
    monkeypatch.delenv("MXNET_CUDA_ALLOW_TENSOR_CORE", raising=False)
    x_np, w_np = _r(4, 16, 12, 12), _r(8, 16, 3, 3, seed=1) * 0.2
    res = {}
    for ctx in (mx.cpu(), GPU):
        x, w = mx.nd.array(x_np, ctx=ctx), mx.nd.array(w_np, ctx=ctx)
        for a in (x, w):
            a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=8, pad=(1, 1),
                                  no_bias=True)
        y.backward(mx.nd.ones_like(y))
        res[ctx.device_type] = [a.asnumpy() for a in (y, x.grad, w.grad)]
    for c, g in zip(res["cpu"], res["gpu"]):
        scale = float(np.abs(c).max())
        np.testing.assert_allclose(g, c, rtol=1e-2, atol=1e-2 * scale)
    g = K.geometry((4, 16, 12, 12), (8, 16, 3, 3), (4, 8, 12, 12), (1, 1), (1, 1),
                   (1, 1), 1, np.float32)
    assert g.math == L.DEFAULT_MATH and not g.strict


def test_residual_gradient_sum_through_cudnn_accumulation_matches_cpu():
    """A hybridized residual block: the stem's output feeds a convolution and the
    residual add, so its gradient is a sum the convolution's backward adds into
    (cuDNN beta = 1); parameters with grad_req='add' over two steps. GPU == CPU."""
    class Residual(mx.gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.stem = mx.gluon.nn.Conv2D(4, 3, padding=1, in_channels=3)
                self.body = mx.gluon.nn.Conv2D(4, 3, padding=1, in_channels=4)
                self.side = mx.gluon.nn.Conv2D(4, 1, in_channels=4)

        def hybrid_forward(self, F, x):
            h = self.stem(x)
            return F.Activation(self.body(h) + h, act_type="relu") + self.side(h)

    x_np = _r(2, 3, 8, 8)
    res = {}
    for ctx in (mx.cpu(), GPU):
        mx.random.seed(3)
        net = Residual()
        net.initialize(mx.init.Xavier(), ctx=mx.cpu())     # the same numbers on both
        net.collect_params().reset_ctx(ctx)
        net.hybridize(static_alloc=True, static_shape=True)
        for prm in net.collect_params().values():
            prm.grad_req = "add"
        x = mx.nd.array(x_np, ctx=ctx)
        for _ in range(2):
            with mx.autograd.record():
                loss = (net(x) ** 2).sum()
            loss.backward()
        res[ctx.device_type] = [(k.split("_", 1)[1], v.grad(ctx).asnumpy())
                                for k, v in net.collect_params().items()]
    for (k, g), (kc, c) in zip(res["gpu"], res["cpu"]):
        assert k == kc
        np.testing.assert_allclose(g, c, rtol=1e-3, atol=1e-3, err_msg=k)

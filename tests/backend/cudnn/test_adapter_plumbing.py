"""The cuDNN adapters' plumbing without a GPU: a stand-in CuPy over NumPy, the real
libcudnn for every descriptor (so cuDNN itself checks the geometry the adapters derive:
1-D convolutions as 2-D, deconvolution as backward-data, pooling padding), and the
compute calls replaced by recorders that check the arrays they get. Skips where no
libcudnn loads. The numbers themselves are checked on a GPU (test_kernels_gpu.py)."""
import numpy as np
import pytest

from mxnet.backend.cudnn import _lib as L
from mxnet.backend.cudnn import kernels as K
from mxnet.operator import kernels_cudnn as KC
from mxnet.operator.registry import OpContext, get_op

from cudnn_stand_in import LIB, WHY, FakeArray, install_runtime, wrap as _wrap

pytestmark = pytest.mark.skipif(LIB is None, reason=f"libcudnn not loadable: {WHY[:200]}")


CALLS = []


@pytest.fixture(autouse=True)
def fake_runtime(monkeypatch):
    rt = install_runtime(monkeypatch)
    CALLS.clear()

    def recorder(name, nout):
        def fn(*args, **kw):
            arrays = [a for a in args if isinstance(a, FakeArray)]
            for a in arrays:
                assert a.flags.c_contiguous
            CALLS.append((name, [a.shape for a in arrays]))
            for a in arrays[-nout:]:
                a[...] = 0          # stands in for the result
            return arrays[-1]
        return fn
    for name, nout in [("conv_forward", 1), ("conv_backward_data", 1),
                       ("conv_backward_filter", 1), ("conv_backward_bias", 1),
                       ("add_bias", 1), ("pool_forward", 1), ("pool_backward", 1),
                       ("act_forward", 1), ("act_backward", 1), ("softmax_forward", 1),
                       ("softmax_backward", 1), ("bn_forward_inference", 1)]:
        monkeypatch.setattr(K, name, recorder(name, nout))

    def bn_train(x4, y4, scale, bias, eps, save_mean, save_invstd):
        CALLS.append(("bn_forward_training", [x4.shape]))
        x = np.asarray(x4, np.float64)
        save_mean[...] = x.mean(axis=(0, 2, 3))
        save_invstd[...] = 1 / np.sqrt(x.var(axis=(0, 2, 3)) + eps)
        y4[...] = 0
    monkeypatch.setattr(K, "bn_forward_training", bn_train)

    def bn_bwd(x4, dy4, dx4, scale, ds, db, eps, mean, invstd):
        CALLS.append(("bn_backward", [x4.shape]))
        dx4[...], ds[...], db[...] = 0, 1, 2
    monkeypatch.setattr(K, "bn_backward", bn_bwd)
    yield rt


def _ctx(is_train=False, need=None, shapes=None):
    return OpContext(np, None, is_train=is_train, need_grad=need, in_shapes=shapes)


def _f(*shape, dtype=np.float32):
    return _wrap(np.random.RandomState(0).randn(*shape).astype(dtype))


@pytest.mark.parametrize("xs,kw", [
    ((2, 4, 9, 9), dict(kernel=(3, 3), num_filter=6, pad=(1, 1))),
    ((2, 4, 9, 8), dict(kernel=(3, 2), num_filter=6, stride=(2, 1), dilate=(1, 2),
                        num_group=2, no_bias=True)),
    ((2, 3, 11), dict(kernel=(3,), num_filter=4, pad=(1,), stride=(2,))),
    ((1, 2, 5, 6, 5), dict(kernel=(3, 3, 3), num_filter=3, pad=(1, 1, 1))),
])
def test_convolution_plumbing(xs, kw):
    op = get_op("Convolution")
    p = op.parse(kw)
    ws = (kw["num_filter"], xs[1] // kw.get("num_group", 1)) + kw["kernel"]
    ins = [_f(*xs), _f(*ws)] + ([] if kw.get("no_bias") else [_f(kw["num_filter"])])
    _, (ys,), _ = op.infer_shape(p, [a.shape for a in ins])
    out = [_wrap(np.full(ys, 5, np.float32))]
    res = KC.conv_forward(_ctx(), p, ins, [], out)
    assert res[0] is out[0] and (np.asarray(out[0]) == 0).all()
    assert [c[0] for c in CALLS] == ["conv_forward"] + ([] if kw.get("no_bias")
                                                        else ["add_bias"])
    CALLS.clear()
    n = len(ins)
    grads = KC.conv_backward(_ctx(True, [True] * n, [a.shape for a in ins]), p,
                             [_f(*ys)], ins, res, [], None)
    assert [g.shape for g in grads] == [a.shape for a in ins]
    assert [c[0] for c in CALLS][:2] == ["conv_backward_data", "conv_backward_filter"]


def test_convolution_declines_other_layouts_and_cudnn_off():
    op = get_op("Convolution")
    ins = [_f(2, 4, 6, 6), _f(3, 4, 3, 3), _f(3)]
    for kw in (dict(layout="NHWC"), dict(cudnn_off=True)):
        p = op.parse(dict(kernel=(3, 3), num_filter=3, **kw))
        assert KC.conv_forward(_ctx(), p, ins, [], None) is NotImplemented
    p = op.parse(dict(kernel=(3, 3), num_filter=3))
    assert KC.conv_forward(_ctx(), p, [a.astype(np.int32).view(FakeArray) for a in ins],
                           [], None) is NotImplemented


@pytest.mark.parametrize("xs,kw", [
    ((2, 4, 5, 5), dict(kernel=(3, 3), num_filter=6, stride=(2, 2), pad=(1, 1),
                        adj=(1, 1), no_bias=False)),
    ((2, 4, 6), dict(kernel=(4,), num_filter=2, stride=(2,), num_group=2)),
    ((1, 2, 3, 4, 3), dict(kernel=(2, 2, 2), num_filter=3, stride=(2, 2, 2))),
    ((1, 2, 4, 4), dict(kernel=(3, 3), num_filter=2, stride=(2, 2), target_shape=(8, 8))),
])
def test_deconvolution_plumbing(xs, kw):
    op = get_op("Deconvolution")
    p = op.parse(kw)
    ws = (xs[1], kw["num_filter"] // kw.get("num_group", 1)) + kw["kernel"]
    ins = [_f(*xs), _f(*ws)] + ([] if kw.get("no_bias", True) else [_f(kw["num_filter"])])
    _, (ys,), _ = op.infer_shape(p, [a.shape for a in ins])
    res = KC.deconv_forward(_ctx(), p, ins, [], None)
    if res is NotImplemented:       # cuDNN's symmetric padding cannot express it
        assert "target_shape" in kw
        return
    assert res[0].shape == ys
    assert CALLS[0][0] == "conv_backward_data"
    grads = KC.deconv_backward(_ctx(True, [True] * len(ins), [a.shape for a in ins]), p,
                               [_f(*ys)], ins, res, [], None)
    assert [g.shape for g in grads] == [a.shape for a in ins]


@pytest.mark.parametrize("xs,kw,ok", [
    ((2, 3, 8, 8), dict(kernel=(2, 2), stride=(2, 2)), True),
    ((2, 3, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg"), True),
    ((2, 3, 7, 7), dict(kernel=(2, 2), stride=(2, 2)), True),
    ((2, 3, 6, 5), dict(global_pool=True, pool_type="avg"), True),
    ((2, 3, 11), dict(kernel=(3,), stride=(2,), pad=(1,)), True),
    ((1, 2, 6, 6, 6), dict(kernel=(2, 2, 2), stride=(2, 2, 2)), True),
    ((2, 3, 10, 10), dict(kernel=(3, 3), stride=(2, 2), pooling_convention="full"), False),
    ((2, 3, 9, 9), dict(kernel=(3, 3), stride=(2, 2), pooling_convention="full"), True),
    ((2, 3, 8, 8), dict(kernel=(2, 2), stride=(2, 2), pool_type="sum"), False),
    ((2, 3, 8, 8), dict(kernel=(2, 2), stride=(2, 2), cudnn_off=True), False),
])
def test_pooling_plumbing(xs, kw, ok):
    op = get_op("Pooling")
    p = op.parse(kw)
    x = _f(*xs)
    res = KC.pool_forward(_ctx(), p, [x], [], None)
    if not ok:
        assert res is NotImplemented
        return
    _, (ys,), _ = op.infer_shape(p, [xs])
    assert res[0].shape == ys
    g = KC.pool_backward(_ctx(True, [True], [xs]), p, [_f(*ys)], [x], res, [], None)
    assert g[0].shape == xs


@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (6, 5), (3, 4, 7)])
def test_batchnorm_moving_statistics_follow_mxnet(shape):
    """Training: the moving statistics get MXNet's rule with the biased variance
    (recovered from the saved inverse standard deviation)."""
    op = get_op("BatchNorm")
    p = op.parse(dict(fix_gamma=False, momentum=0.8))
    c = shape[1]
    x = _f(*shape)
    ins = [x, _f(c) + 1, _f(c)]
    aux = [_f(c), _wrap(np.abs(np.asarray(_f(c))) + 0.5)]
    ref_aux = [np.array(a) for a in aux]
    op.forward(_ctx(True), p, [np.array(a) for a in ins], ref_aux)
    res = KC.bn_forward(_ctx(True), p, ins, aux, None)
    np.testing.assert_allclose(np.asarray(aux[0]), ref_aux[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(aux[1]), ref_aux[1], rtol=1e-5, atol=1e-6)
    assert [r.shape for r in res] == [shape, (c,), (c,)]
    grads = KC.bn_backward(_ctx(True, [True, True, True], [shape, (c,), (c,)]), p,
                           [_f(*shape)], ins, res, aux, None)
    assert [g.shape for g in grads] == [shape, (c,), (c,)]


def test_batchnorm_declines_other_axes_small_eps_and_global_stats_backward():
    op = get_op("BatchNorm")
    ins = [_f(4, 3, 5), _f(3), _f(3)]
    aux = [_f(3), _wrap(np.ones(3, np.float32))]
    assert KC.bn_forward(_ctx(True), op.parse(dict(axis=2)), [_f(4, 3, 5), _f(5), _f(5)],
                         [_f(5), _f(5)], None) is NotImplemented
    assert KC.bn_forward(_ctx(True), op.parse(dict(eps=1e-6)), ins, aux,
                         None) is NotImplemented
    p = op.parse(dict(use_global_stats=True))
    res = KC.bn_forward(_ctx(True), p, ins, aux, None)
    assert res is not NotImplemented
    assert KC.bn_backward(_ctx(True, [True] * 3, [(4, 3, 5), (3,), (3,)]), p,
                          [_f(4, 3, 5)], ins, res, aux, None) is NotImplemented


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_plumbing(name):
    op = get_op(name)
    x = _f(2, 5, 3)
    assert KC.OPS[name][0](_ctx(), op.parse(dict(axis=1)), [x], [], None)[0].shape == x.shape
    assert KC.OPS[name][0](_ctx(), op.parse(dict(temperature=2.0)), [x], [],
                           None) is NotImplemented
    y = KC.OPS[name][0](_ctx(), op.parse(dict(axis=-1)), [x], [], None)
    g = KC.OPS[name][1](_ctx(True, [True], [x.shape]), op.parse(dict(axis=-1)), [_f(2, 5, 3)],
                        [x], y, [], None)
    assert g[0].shape == x.shape


def test_activation_in_place_and_declines_softrelu():
    op = get_op("Activation")
    x = _f(3, 4)
    assert KC.act_forward(_ctx(), op.parse(dict(act_type="relu")), [x], [], [x])[0] is x
    assert KC.act_forward(_ctx(), op.parse(dict(act_type="softrelu")), [x], [],
                          None) is NotImplemented


def test_a_call_cudnn_rejects_falls_back_with_one_warning(monkeypatch):
    def reject(*a, **k):
        raise L.CudnnError("cudnnActivationForward", 2000, "CUDNN_STATUS_BAD_PARAM")
    monkeypatch.setattr(K, "act_forward", reject)
    monkeypatch.setattr(KC, "_WARNED", set())
    p = get_op("Activation").parse(dict(act_type="tanh"))
    with pytest.warns(RuntimeWarning, match="BAD_PARAM"):
        assert KC.act_forward(_ctx(), p, [_f(2, 3)], [], None) is NotImplemented
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert KC.act_forward(_ctx(), p, [_f(2, 3)], [], None) is NotImplemented


def test_convolution_backward_adds_into_add_destinations(monkeypatch):
    """conv_backward is marked ``accumulates``: a destination whose req is 'add' is
    added into by the cuDNN call itself (accumulate=True, cuDNN's beta = 1) and handed
    back; 'write' destinations are overwritten; an 'add' destination the kernel cannot
    write directly (not C-contiguous) gets a fresh result for the runner to add."""
    assert getattr(KC.conv_backward, "accumulates", False)
    seen = {}

    def recorder(name):
        def fn(*args, accumulate=False, **kw):
            dst = [a for a in args if isinstance(a, FakeArray)][-1]
            seen[name] = accumulate
            if accumulate:
                dst[...] += 1
            else:
                dst[...] = 0
            return dst
        return fn
    for name in ("conv_backward_data", "conv_backward_filter", "conv_backward_bias"):
        monkeypatch.setattr(K, name, recorder(name))
    op = get_op("Convolution")
    p = op.parse(dict(kernel=(3, 3), num_filter=6, pad=(1, 1)))
    ins = [_f(2, 4, 9, 9), _f(6, 4, 3, 3), _f(6)]
    dy = _f(2, 6, 9, 9)
    dst = [_wrap(np.full(a.shape, 5, np.float32)) for a in ins]
    ctx = OpContext(np, None, is_train=True, need_grad=[True] * 3,
                    in_shapes=[a.shape for a in ins], req=["add", "write", "add"])
    res = KC.conv_backward(ctx, p, [dy], ins, [dy], [], dst)
    assert all(r is d for r, d in zip(res, dst))
    assert seen == {"conv_backward_data": True, "conv_backward_filter": False,
                    "conv_backward_bias": True}
    assert (np.asarray(dst[0]) == 6).all() and (np.asarray(dst[1]) == 0).all()
    assert (np.asarray(dst[2]) == 6).all()

    strided = _wrap(np.full((2, 4, 9, 18), 5, np.float32))[..., ::2]
    ctx = OpContext(np, None, is_train=True, need_grad=[True, False, False],
                    in_shapes=[a.shape for a in ins], req=["add", "null", "null"])
    res = KC.conv_backward(ctx, p, [dy], ins, [dy], [], [strided, None, None])
    assert res[0] is not strided and not seen["conv_backward_data"]
    assert (np.asarray(strided) == 5).all()


def test_activation_backward_writes_in_place_over_the_output_gradient(monkeypatch):
    """An in-place plan's dx over dy's memory (another array object) is written by
    cuDNN directly (it allows dx == dy), without a fresh buffer and a copy."""
    got = {}

    def act_bwd(y, dy, dx, act):
        got["dx"] = dx
        dx[...] = 0
        return dx
    monkeypatch.setattr(K, "act_backward", act_bwd)
    op = get_op("Activation")
    y, dy = _f(3, 4), _f(3, 4)
    dx = dy.reshape(3, 4)           # same memory, another object
    res = KC.act_backward(_ctx(True, [True], [(3, 4)]), op.parse(dict(act_type="relu")),
                          [dy], [y], [y], [], [dx])
    assert res[0] is dx and got["dx"] is dx

"""gluon.nn layers against NumPy forward references, with numeric gradients of the
inputs and parameters (float64) for the layers that have parameters."""
import math

import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd
from mxnet.gluon import nn
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

RNG = np.random.RandomState(7)


def _arr(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def _run(block, x, train=False):
    """Initialise (deferred shapes from x), give every parameter random values, run."""
    block.initialize()
    block(mx.nd.array(x))
    for name, p in sorted(block._collect_params_with_prefix().items()):
        if "running" not in name:
            p.set_data(mx.nd.array(_arr(*p.shape)))
    with autograd.train_mode() if train else autograd.predict_mode():
        out = block(mx.nd.array(x))
    params = {k: p.data().asnumpy() for k, p in block._collect_params_with_prefix().items()}
    return out.asnumpy(), params


def _grad_check(block, x, rtol=1e-2, atol=1e-4):
    """Numeric gradient of hybrid_forward w.r.t. the input and every trainable
    parameter, in float64."""
    block.cast("float64")
    names = [k for k, p in block._reg_params.items() if p.grad_req != "null"]
    fixed = {k: p.data() for k, p in block._reg_params.items() if p.grad_req == "null"}
    values = [x.astype(np.float64)] + [block._reg_params[k].data().asnumpy() for k in names]

    def fn(x, *ps):
        return block.hybrid_forward(mx.nd, x, **dict(zip(names, ps)), **fixed)
    check_numeric_gradient(fn, values, numeric_eps=1e-5, rtol=rtol, atol=atol)


# --- NumPy references --------------------------------------------------------------------

def np_conv(x, w, b, stride, pad, dilate, groups=1):
    n = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out_sp = [(xp.shape[2 + i] - dilate[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1
              for i in range(n)]
    cout, cin_g = w.shape[0], w.shape[1]
    cout_g = cout // groups
    out = np.zeros((x.shape[0], cout) + tuple(out_sp))
    for k in np.ndindex(*w.shape[2:]):
        sl = tuple(slice(k[i] * dilate[i], k[i] * dilate[i] + stride[i] * (out_sp[i] - 1) + 1,
                         stride[i]) for i in range(n))
        patch = xp[(slice(None), slice(None)) + sl]
        for g in range(groups):
            wk = w[(slice(g * cout_g, (g + 1) * cout_g), slice(None)) + k]
            out[:, g * cout_g:(g + 1) * cout_g] += np.einsum(
                "nc...,oc->no...", patch[:, g * cin_g:(g + 1) * cin_g], wk)
    if b is not None:
        out += b.reshape((1, -1) + (1,) * n)
    return out


def np_deconv(x, w, b, stride, pad, adj, dilate=None):
    n = x.ndim - 2
    dilate = dilate or (1,) * n
    k = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * stride[i] + dilate[i] * (k[i] - 1) + 1 + adj[i]
            for i in range(n)]
    out = np.zeros((x.shape[0], w.shape[1]) + tuple(full))
    for kk in np.ndindex(*k):
        sl = tuple(slice(kk[i] * dilate[i], kk[i] * dilate[i] + stride[i] * (x.shape[2 + i] - 1)
                         + 1, stride[i]) for i in range(n))
        out[(slice(None), slice(None)) + sl] += np.einsum("nc...,co->no...", x,
                                                          w[(slice(None), slice(None)) + kk])
    size = [full[i] - adj[i] - 2 * pad[i] + adj[i] for i in range(n)]
    out = out[(slice(None), slice(None)) + tuple(slice(pad[i], pad[i] + size[i])
                                                 for i in range(n))]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * n)
    return out


def np_pool(x, kernel, stride, pad, kind, ceil=False, include_pad=True):
    n = x.ndim - 2
    out_sp = []
    for i in range(n):
        span = x.shape[2 + i] + 2 * pad[i] - kernel[i]
        out_sp.append((math.ceil(span / stride[i]) if ceil else span // stride[i]) + 1)
    extra = [max(0, (out_sp[i] - 1) * stride[i] + kernel[i] - x.shape[2 + i] - 2 * pad[i])
             for i in range(n)]
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pad[i], pad[i] + extra[i]) for i in range(n)],
                constant_values=fill)
    ones = np.pad(np.ones(x.shape[2:]), [(pad[i], pad[i] + extra[i]) for i in range(n)])
    out = np.zeros(x.shape[:2] + tuple(out_sp))
    for idx in np.ndindex(*out_sp):
        sl = tuple(slice(idx[i] * stride[i], idx[i] * stride[i] + kernel[i]) for i in range(n))
        win = xp[(slice(None), slice(None)) + sl].reshape(x.shape[:2] + (-1,))
        if kind == "max":
            out[(slice(None), slice(None)) + idx] = win.max(-1)
        else:
            count = np.prod(kernel) if include_pad else ones[sl].sum()
            out[(slice(None), slice(None)) + idx] = win.sum(-1) / count
    return out


# --- tests ------------------------------------------------------------------------------------

def test_dense():
    x = _arr(4, 2, 3)
    out, p = _run(nn.Dense(5, activation="tanh"), x)
    assert_almost_equal(out, np.tanh(x.reshape(4, 6) @ p["weight"].T + p["bias"]), rtol=1e-5)
    out, p = _run(nn.Dense(5, flatten=False, use_bias=False), x)
    assert_almost_equal(out, x @ p["weight"].T, rtol=1e-5)
    blk = nn.Dense(3, in_units=6)
    _run(blk, x)
    _grad_check(blk, x)


@pytest.mark.parametrize("make,x,ref", [
    (lambda: nn.Conv1D(4, 3, strides=2, padding=1), _arr(2, 3, 7),
     lambda x, p: np_conv(x, p["weight"], p["bias"], (2,), (1,), (1,))),
    (lambda: nn.Conv2D(4, 3, padding=2, dilation=2), _arr(2, 3, 6, 6),
     lambda x, p: np_conv(x, p["weight"], p["bias"], (1, 1), (2, 2), (2, 2))),
    (lambda: nn.Conv2D(6, (3, 2), groups=3, activation="relu"), _arr(2, 3, 6, 5),
     lambda x, p: np.maximum(np_conv(x, p["weight"], p["bias"], (1, 1), (0, 0), (1, 1), 3), 0)),
    (lambda: nn.Conv3D(2, 2, use_bias=False), _arr(2, 3, 4, 4, 4),
     lambda x, p: np_conv(x, p["weight"], None, (1, 1, 1), (0, 0, 0), (1, 1, 1))),
    (lambda: nn.Conv1DTranspose(2, 3, strides=2), _arr(2, 3, 5),
     lambda x, p: np_deconv(x, p["weight"], p["bias"], (2,), (0,), (0,))),
    (lambda: nn.Conv2DTranspose(2, 3, strides=2, padding=1, output_padding=1), _arr(2, 3, 4, 4),
     lambda x, p: np_deconv(x, p["weight"], p["bias"], (2, 2), (1, 1), (1, 1))),
    (lambda: nn.Conv3DTranspose(2, 2), _arr(1, 2, 3, 3, 3),
     lambda x, p: np_deconv(x, p["weight"], p["bias"], (1, 1, 1), (0, 0, 0), (0, 0, 0))),
])
def test_convolutions(make, x, ref):
    blk = make()
    out, p = _run(blk, x)
    assert_almost_equal(out, ref(x.astype(np.float64), p), rtol=1e-4, atol=1e-5)


def test_conv_gradients_and_layouts():
    x = _arr(2, 2, 5, 5)
    blk = nn.Conv2D(3, 3, strides=2, padding=1, in_channels=2)
    _run(blk, x)
    _grad_check(blk, x)
    blk = nn.Conv2DTranspose(2, 2, strides=2, in_channels=2)
    _run(blk, x)
    _grad_check(blk, x)
    # NHWC (a GPU-only layout of MXNet's operator): the weight is (out, kh, kw, in)
    assert nn.Conv2D(3, 3, layout="NHWC", in_channels=2).weight.shape == (3, 3, 3, 2)
    assert nn.Conv3DTranspose(3, 2, layout="NDHWC", in_channels=4).weight.shape == \
        (4, 2, 2, 2, 3)


@pytest.mark.parametrize("make,x,kernel,stride,pad,kind,ceil,incl", [
    (lambda: nn.MaxPool1D(3, 2, ceil_mode=True), _arr(2, 3, 8), (3,), (2,), (0,), "max", True,
     True),
    (lambda: nn.MaxPool2D(3, 2, 1), _arr(2, 3, 6, 6), (3, 3), (2, 2), (1, 1), "max", False,
     True),
    (lambda: nn.MaxPool3D(), _arr(1, 2, 4, 4, 4), (2, 2, 2), (2, 2, 2), (0, 0, 0), "max",
     False, True),
    (lambda: nn.AvgPool1D(2), _arr(2, 3, 7), (2,), (2,), (0,), "avg", False, True),
    (lambda: nn.AvgPool2D(3, 2, 1), _arr(2, 3, 6, 6), (3, 3), (2, 2), (1, 1), "avg", False,
     True),
    (lambda: nn.AvgPool2D(3, 2, 1, count_include_pad=False), _arr(2, 3, 6, 6), (3, 3), (2, 2),
     (1, 1), "avg", False, False),
    (lambda: nn.AvgPool3D(), _arr(1, 2, 4, 4, 4), (2, 2, 2), (2, 2, 2), (0, 0, 0), "avg",
     False, True),
])
def test_pooling(make, x, kernel, stride, pad, kind, ceil, incl):
    out, _ = _run(make(), x)
    assert_almost_equal(out, np_pool(x.astype(np.float64), kernel, stride, pad, kind, ceil,
                                     incl), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layer,x,fn", [
    (nn.GlobalMaxPool1D, _arr(2, 3, 5), np.max), (nn.GlobalMaxPool2D, _arr(2, 3, 4, 5), np.max),
    (nn.GlobalMaxPool3D, _arr(2, 3, 2, 3, 4), np.max),
    (nn.GlobalAvgPool1D, _arr(2, 3, 5), np.mean), (nn.GlobalAvgPool2D, _arr(2, 3, 4, 5), np.mean),
    (nn.GlobalAvgPool3D, _arr(2, 3, 2, 3, 4), np.mean),
])
def test_global_pooling(layer, x, fn):
    out, _ = _run(layer(), x)
    axes = tuple(range(2, x.ndim))
    assert_almost_equal(out, fn(x, axis=axes, keepdims=True), rtol=1e-5)


def test_batchnorm_train_and_inference():
    x = _arr(4, 3, 2, 2)
    bn = nn.BatchNorm(momentum=0.8)
    bn.initialize()
    with autograd.record():
        out = bn(mx.nd.array(x))
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    norm = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    assert_almost_equal(out.asnumpy(), norm, rtol=1e-4, atol=1e-5)
    assert_almost_equal(bn.running_mean.data().asnumpy(), 0.2 * mean, rtol=1e-4, atol=1e-6)
    assert_almost_equal(bn.running_var.data().asnumpy(), 0.8 + 0.2 * var, rtol=1e-4)
    rm, rv = bn.running_mean.data().asnumpy(), bn.running_var.data().asnumpy()
    inf = bn(mx.nd.array(x)).asnumpy()             # inference: running statistics
    ref = (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5)
    assert_almost_equal(inf, ref, rtol=1e-4, atol=1e-5)
    # axis=-1, scale=False: gamma fixed to 1 and not trained
    bn2 = nn.BatchNorm(axis=-1, scale=False, in_channels=2)
    assert bn2.gamma.grad_req == "null"
    out, p = _run(bn2, x, train=True)
    m2, v2 = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    assert_almost_equal(out, (x - m2) / np.sqrt(v2 + 1e-5) + p["beta"], rtol=1e-4, atol=1e-5)


def test_other_norms():
    x = _arr(2, 4, 3, 3)
    out, p = _run(nn.InstanceNorm(scale=True), x)
    m, v = x.mean(axis=(2, 3), keepdims=True), x.var(axis=(2, 3), keepdims=True)
    ref = (x - m) / np.sqrt(v + 1e-5) * p["gamma"][None, :, None, None] + \
        p["beta"][None, :, None, None]
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-5)
    out, p = _run(nn.LayerNorm(), x)
    m, v = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
    assert_almost_equal(out, (x - m) / np.sqrt(v + 1e-5) * p["gamma"] + p["beta"], rtol=1e-4,
                        atol=1e-5)
    out, p = _run(nn.GroupNorm(2), x)
    g = x.reshape(2, 2, -1)
    ng = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    ref = ng * p["gamma"][None, :, None] + p["beta"][None, :, None]
    assert_almost_equal(out, ref.reshape(x.shape), rtol=1e-4, atol=1e-5)
    blk = nn.LayerNorm(in_channels=3)
    _run(blk, x)
    _grad_check(blk, x)


def test_activations():
    x = _arr(3, 4)
    sig = lambda v: 1 / (1 + np.exp(-v))          # noqa: E731
    alpha, lam = 1.6732632423543772, 1.0507009873554805
    erf = np.vectorize(math.erf)
    cases = [
        (nn.Activation("sigmoid"), sig(x)), (nn.Activation("softrelu"), np.log1p(np.exp(x))),
        (nn.LeakyReLU(0.1), np.where(x > 0, x, 0.1 * x)),
        (nn.ELU(0.5), np.where(x > 0, x, 0.5 * (np.exp(x) - 1))),
        (nn.SELU(), lam * np.where(x > 0, x, alpha * (np.exp(x) - 1))),
        (nn.GELU(), 0.5 * x * (1 + erf(x / np.sqrt(2)))),
        (nn.Swish(2.0), x * sig(2.0 * x)),
    ]
    for blk, ref in cases:
        out, _ = _run(blk, x)
        assert_almost_equal(out, ref, rtol=1e-4, atol=1e-5, names=(repr(blk), "numpy"))
    prelu = nn.PReLU(in_channels=4)
    x4 = _arr(3, 4, 2)
    out, p = _run(prelu, x4)
    a = p["alpha"][None, :, None]
    assert_almost_equal(out, np.where(x4 > 0, x4, a * x4), rtol=1e-5)
    _grad_check(prelu, x4 + 0.05 * np.sign(x4))
    assert nn.PReLU().alpha.init.dumps() == '["constant", {"value": 0.25}]'
    with pytest.raises(AssertionError, match="Slope coefficient for LeakyReLU must be no less"):
        nn.LeakyReLU(-1)


def test_embedding_flatten_pad_dropout():
    emb = nn.Embedding(10, 3)
    emb.initialize()
    idx = np.array([[1, 2], [3, 9]], np.float32)
    with autograd.record():
        out = emb(mx.nd.array(idx))
    out.backward()
    w = emb.weight.data().asnumpy()
    assert_almost_equal(out.asnumpy(), w[idx.astype(int)])
    g = np.zeros_like(w)
    np.add.at(g, idx.astype(int).ravel(), 1)
    assert_almost_equal(emb.weight.grad().asnumpy(), g)
    x = _arr(2, 3, 4, 5)
    assert _run(nn.Flatten(), x)[0].shape == (2, 60)
    out, _ = _run(nn.ReflectionPad2D(2), x)
    assert_almost_equal(out, np.pad(x, [(0, 0), (0, 0), (2, 2), (2, 2)], mode="reflect"))
    drop = nn.Dropout(0.5)
    assert_almost_equal(_run(drop, x)[0], x)               # inference: identity
    with autograd.record():
        y = drop(mx.nd.ones((100, 100))).asnumpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    assert_almost_equal(_run(nn.Dropout(0.0), x, train=True)[0], x)


def test_containers_lambdas_concat():
    x = _arr(2, 3)
    seq = nn.Sequential()
    seq.add(nn.Dense(4, in_units=3), nn.Lambda("tanh"), nn.Lambda(lambda v: v * 2))
    seq.initialize()
    w, b = seq[0].weight.data().asnumpy(), seq[0].bias.data().asnumpy()
    assert_almost_equal(seq(mx.nd.array(x)).asnumpy(), 2 * np.tanh(x @ w.T + b), rtol=1e-5)
    assert len(seq) == 3 and isinstance(seq[1:], nn.Sequential)
    hyb = nn.HybridSequential()
    hyb.add(nn.HybridLambda("tanh"), nn.HybridLambda(lambda F, v: F.relu(v) + 1))
    hyb.initialize()
    for _ in range(2):
        assert_almost_equal(hyb(mx.nd.array(x)).asnumpy(), np.maximum(np.tanh(x), 0) + 1,
                            rtol=1e-5)
        hyb.hybridize()
    cat = nn.HybridConcatenate(axis=1)
    cat.add(nn.Dense(2, in_units=3), nn.Identity(), nn.Dense(1, in_units=3))
    cat.initialize()
    out = cat(mx.nd.array(x)).asnumpy()
    assert out.shape == (2, 6)
    assert_almost_equal(out[:, 2:5], x)
    cat.hybridize()
    assert_almost_equal(cat(mx.nd.array(x)).asnumpy(), out, rtol=1e-6)
    cc = nn.Concatenate(axis=0)
    cc.add(nn.Identity(), nn.Lambda(lambda v: -v))
    assert_almost_equal(cc(mx.nd.array(x)).asnumpy(), np.concatenate([x, -x]))
    assert issubclass(nn.HybridConcurrent, nn.HybridConcatenate)


def test_sync_batchnorm_is_local_batchnorm():
    x = _arr(4, 3, 2)
    with pytest.warns(UserWarning, match="Caution using SyncBatchNorm"):
        sbn = nn.SyncBatchNorm()
    assert "ndev=1" in repr(sbn) and sbn.prefix.startswith("syncbatchnorm")
    out, p = _run(sbn, x, train=True)
    m, v = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    ref = (x - m[None, :, None]) / np.sqrt(v[None, :, None] + 1e-5) * \
        p["gamma"][None, :, None] + p["beta"][None, :, None]
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(mx.base.MXNetError, match="num_devices=2"):
        nn.SyncBatchNorm(num_devices=2)


def test_layer_argument_checks():
    with pytest.raises(AssertionError, match="Only supports 'NCHW' and 'NHWC' layout"):
        nn.Conv2D(2, 3, layout="NCW")
    with pytest.raises(AssertionError, match="kernel_size must be a number or a list of 2"):
        nn.Conv2D(2, (3, 3, 3))
    # messages as MXNet 1.9.1 words them
    with pytest.raises(AssertionError, match="Only supports 'NCW' layout for now"):
        nn.Conv1D(2, 3, layout="NWC")
    with pytest.raises(AssertionError, match="Only NCHW and NHWC layouts are valid for 2D "
                                             "Pooling"):
        nn.MaxPool2D(layout="NCW")
    with pytest.raises(AssertionError, match="Only NCDHW and NDHWC layouts are valid for 3D "
                                             "Pooling"):
        nn.GlobalMaxPool3D(layout="X")
    with pytest.raises(AssertionError, match="pool_size must be a number or a list of 2 ints"):
        nn.MaxPool2D((2, 2, 2))
    assert nn.Embedding(3, 2, sparse_grad=True).weight._grad_stype == "row_sparse"
    with pytest.raises(AssertionError, match="Function name foo is not found in ndarray"):
        nn.Lambda("foo")


@pytest.mark.parametrize("cls", [nn.Conv1D, nn.Conv2D, nn.Conv3D, nn.Conv1DTranspose,
                                 nn.Conv2DTranspose, nn.Conv3DTranspose])
def test_conv_groups_must_divide_channels(cls):
    # MXNet 1.9.1 infers the weight shape at construction and rejects (channels,
    # groups, in_channels) = (3, 2, 4), (4, 3, 0), (4, 4, 2) there
    for channels, groups, in_channels in [(3, 2, 4), (4, 3, 0), (4, 4, 2)]:
        with pytest.raises(mx.base.MXNetError):
            cls(channels, 2, groups=groups, in_channels=in_channels)
    conv = cls(6, 2, groups=3, in_channels=3)
    n = conv.weight.shape
    assert n[:2] == ((6, 1) if "Transpose" not in cls.__name__ else (3, 2))


def test_conv_rejects_bad_arguments_at_construction():
    # expected errors taken from MXNet 1.9.1, which fails these when the layer is built
    bad = [lambda: nn.Conv2DTranspose(2, 3, strides=2, output_padding=2),
           lambda: nn.Conv1DTranspose(2, 3, strides=1, output_padding=1, in_channels=3),
           lambda: nn.Conv3DTranspose(2, 3, output_padding=1),
           lambda: nn.Conv2D(2, 0, in_channels=3),
           lambda: nn.Conv2D(2, 3, strides=0),
           lambda: nn.Conv1D(2, 3, dilation=0),
           lambda: nn.Conv2DTranspose(2, 3, strides=(1, 0)),
           lambda: nn.Conv2D(0, 3, in_channels=3),
           lambda: nn.Conv2D(2, 3, groups=0)]
    for make in bad:
        with pytest.raises(mx.base.MXNetError):
            make()
    # output_padding below the stride per axis, and negative padding, are accepted
    assert nn.Conv2DTranspose(2, 3, strides=(1, 3), output_padding=(0, 2),
                              in_channels=3).weight.shape == (3, 2, 3, 3)
    assert nn.Conv2D(2, 3, padding=-1, in_channels=3).weight.shape == (2, 3, 3, 3)

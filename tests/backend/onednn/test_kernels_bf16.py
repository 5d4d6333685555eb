"""The oneDNN adapters on bfloat16 arrays (convolution, inner product, pooling, batch
norm, activations) against each operator's NumPy body on float32 copies of the same
bfloat16 values: the adapter must take the call itself (not decline) and return
bfloat16 results within bfloat16's rounding."""
import numpy as np
import pytest

from mxnet.backend import onednn
from mxnet.base import bfloat16

pytestmark = pytest.mark.skipif(not onednn.available(), reason="oneDNN (libdnnl) absent")

from onednn_helpers import ctx_for, params  # noqa: E402
from mxnet.operator.kernels_onednn import OPS  # noqa: E402
from mxnet.operator.registry import get_op  # noqa: E402

F32 = np.dtype(np.float32)


def _bf16(*shape, scale=1.0):
    return (np.random.randn(*shape) * scale).astype(bfloat16)


def _f32(arrays):
    return [a.astype(np.float32) if a is not None and a.dtype == bfloat16 else a
            for a in arrays]


def _close(got, want, what, rel=2e-2):
    """Within bfloat16 rounding of the result, relative to the largest value."""
    assert got.dtype == bfloat16 or got.dtype == F32, what
    got, want = got.astype(np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, what
    scale = max(np.abs(want).max(), 1e-3)
    np.testing.assert_allclose(got, want, atol=rel * scale, rtol=0, err_msg=what)


def _supported():
    """Whether this processor's oneDNN builds bfloat16 primitives (AVX-512 and newer)."""
    p = params("FullyConnected", num_hidden=16, no_bias=True)
    got = OPS["FullyConnected"][0](ctx_for(), p, [_bf16(32, 64), _bf16(16, 64)], [])
    return got is not NotImplemented


@pytest.fixture(autouse=True)
def _need_bf16_primitives():
    if not _supported():
        pytest.skip("oneDNN has no bfloat16 primitives on this processor")


def _check(name, p, inputs, aux=(), is_train=True, out_dtypes=None, grads=True):
    op = get_op(name)
    fwd, bwd = OPS[name]
    shapes = [a.shape for a in inputs]
    aux_ref, aux_got = [a.copy() for a in aux], [a.copy() for a in aux]
    want = op.forward(ctx_for(is_train), p, _f32(inputs), aux_ref)
    got = fwd(ctx_for(is_train), p, list(inputs), aux_got)
    assert got is not NotImplemented, f"{name}: the oneDNN adapter declined bfloat16"
    out_dtypes = out_dtypes or [bfloat16] * len(want)
    for k, (g, w, t) in enumerate(zip(got, want, out_dtypes)):
        assert g.dtype == t, f"{name} output {k}: {g.dtype}"
        _close(g, w, f"{name} output {k}")
    for k, (g, w) in enumerate(zip(aux_got, aux_ref)):
        _close(g, w, f"{name} aux {k}")
    if not grads:
        return
    dy = [np.random.randn(*g.shape).astype(g.dtype) for g in got]
    need = [True] * len(inputs)
    w_grads = op.backward(ctx_for(True, need, shapes), p, _f32(dy), _f32(inputs),
                          _f32(got), aux_ref)
    g_grads = bwd(ctx_for(True, need, shapes), p, dy, list(inputs), list(got), aux_got)
    assert g_grads is not NotImplemented, f"{name} backward declined bfloat16"
    for k, (g, w, x) in enumerate(zip(g_grads, w_grads, inputs)):
        if g is None:
            continue
        assert g.dtype == x.dtype, f"{name} gradient {k}: {g.dtype}"
        _close(g, w, f"{name} gradient {k}", rel=4e-2)


@pytest.mark.parametrize("no_bias", [False, True])
def test_convolution(no_bias):
    p = params("Convolution", kernel=(3, 3), pad=(1, 1), num_filter=32, no_bias=no_bias)
    ins = [_bf16(4, 16, 10, 10), _bf16(32, 16, 3, 3, scale=0.3)] + \
        ([] if no_bias else [_bf16(32)])
    _check("Convolution", p, ins)


def test_fully_connected():
    p = params("FullyConnected", num_hidden=24)
    _check("FullyConnected", p, [_bf16(8, 40), _bf16(24, 40, scale=0.3), _bf16(24)])


@pytest.mark.parametrize("kw", [dict(kernel=(2, 2), stride=(2, 2), pool_type="max"),
                                dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                     pool_type="avg")])
@pytest.mark.parametrize("channels", [16, 6])      # blocked and plain layouts
def test_pooling(kw, channels):
    _check("Pooling", params("Pooling", **kw), [_bf16(2, channels, 8, 8)])


@pytest.mark.parametrize("is_train", [True, False])
def test_batchnorm_bfloat16_data_float32_parameters(is_train):
    c = 16
    p = params("BatchNorm", fix_gamma=False, momentum=0.9)
    ins = [_bf16(4, c, 6, 6, scale=2.0), np.random.rand(c).astype(np.float32) + 0.5,
           np.random.randn(c).astype(np.float32)]
    aux = [np.random.randn(c).astype(np.float32), np.random.rand(c).astype(np.float32) + 0.5]
    _check("BatchNorm", p, ins, aux, is_train=is_train,
           out_dtypes=[bfloat16, F32, F32], grads=is_train)


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh"])
def test_activation(act):
    _check("Activation", params("Activation", act_type=act), [_bf16(4, 16, 7, 7)])


def test_relu_operator():
    _check("relu", params("relu"), [_bf16(4, 16, 7, 7)])

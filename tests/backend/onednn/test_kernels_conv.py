"""oneDNN Convolution / Deconvolution adapters against the NumPy operator bodies."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from mxnet.backend import onednn  # noqa: E402

pytestmark = pytest.mark.skipif(not onednn.available(), reason="oneDNN (libdnnl) absent")

from onednn_helpers import both_backward, both_forward, close, params, rand  # noqa: E402

CONV_CASES = [
    # data shape, kernel, stride, pad, dilate, num_filter, num_group, no_bias
    ((2, 3, 9, 9), (3, 3), (), (), (), 4, 1, False),
    ((2, 4, 10, 11), (3, 3), (2, 2), (1, 1), (), 6, 2, False),
    ((1, 4, 9, 9), (3, 2), (2, 1), (1, 0), (2, 2), 4, 4, True),
    ((2, 3, 9, 9), (2, 2), (2, 2), (), (), 5, 1, False),      # stride leaves a row out
    ((2, 3, 12), (3,), (2,), (1,), (), 4, 1, False),          # 1-D
    ((1, 2, 5, 6, 6), (3, 3, 3), (1, 2, 2), (1, 1, 1), (), 3, 1, False),   # 3-D
    ((64, 32, 14, 14), (3, 3), (), (1, 1), (), 64, 1, False),
    ((2, 8, 6, 7), (1, 1), (), (), (), 6, 2, False),          # pointwise: NumPy's GEMM
    ((2, 8, 7, 7), (1, 1), (2, 2), (), (), 4, 1, True),       # strided pointwise
]


def _conv_params(kernel, stride, pad, dilate, nf, ng, no_bias):
    kw = dict(kernel=kernel, num_filter=nf, num_group=ng, no_bias=no_bias)
    if stride:
        kw["stride"] = stride
    if pad:
        kw["pad"] = pad
    if dilate:
        kw["dilate"] = dilate
    return params("Convolution", **kw)


@pytest.mark.parametrize("case", CONV_CASES)
def test_convolution_forward_backward(case):
    shape, kernel, stride, pad, dilate, nf, ng, no_bias = case
    p = _conv_params(kernel, stride, pad, dilate, nf, ng, no_bias)
    x = rand(*shape)
    w = rand(nf, shape[1] // ng, *kernel)
    inputs = [x, w] if no_bias else [x, w, rand(nf)]
    ref, got, _, _ = both_forward("Convolution", p, inputs)
    assert got is not NotImplemented
    close(ref[0], got[0], rtol=1e-4, atol=1e-3)
    dy = rand(*ref[0].shape)
    gref, ggot = both_backward("Convolution", p, [dy], inputs, ref)
    assert ggot is not NotImplemented
    for a, b in zip(gref, ggot):
        close(a, b, rtol=1e-4, atol=2e-3)


def test_convolution_writes_into_out_and_skips_unneeded_grads():
    p = _conv_params((3, 3), (), (1, 1), (), 4, 1, False)
    x, w, b = rand(2, 3, 6, 6), rand(4, 3, 3, 3), rand(4)
    out = [np.full((2, 4, 6, 6), np.nan, np.float32)]
    ref, got, _, _ = both_forward("Convolution", p, [x, w, b], out=out)
    assert got[0] is out[0]
    close(ref[0], out[0], atol=1e-3)
    dy = rand(2, 4, 6, 6)
    in_grad = [None, np.zeros((4, 3, 3, 3), np.float32), None]
    gref, ggot = both_backward("Convolution", p, [dy], [x, w, b], ref,
                               need=[False, True, False], in_grad=in_grad)
    assert ggot[0] is None and ggot[2] is None
    assert ggot[1] is in_grad[1]
    close(gref[1], ggot[1], atol=2e-3)


@pytest.mark.parametrize("need", [[True, True, False], [True, False, True],
                                  [True, True, True]])
def test_convolution_data_and_weight_grads_together(need):
    """Data and weight gradients in one call (dy reordered once for both primitives),
    with and without the bias gradient; channels a multiple of 16 so that both
    primitives pick the blocked layout and share dy's copy."""
    p = _conv_params((3, 3), (), (1, 1), (), 32, 1, False)
    x, w, b = rand(2, 16, 7, 7), rand(32, 16, 3, 3), rand(32)
    ref, got, _, _ = both_forward("Convolution", p, [x, w, b])
    dy = rand(*ref[0].shape)
    gref, ggot = both_backward("Convolution", p, [dy], [x, w, b], ref, need=need)
    for r, g, n in zip(gref, ggot, need):
        if n:
            close(r, g, rtol=1e-4, atol=2e-3)
        else:
            assert g is None


def test_convolution_other_dtype_falls_back():
    p = _conv_params((3, 3), (), (), (), 2, 1, True)
    from onednn_helpers import ctx_for
    from mxnet.operator.kernels_onednn import OPS
    x, w = np.ones((1, 1, 4, 4)), np.ones((2, 1, 3, 3))
    assert OPS["Convolution"][0](ctx_for(), p, [x, w], []) is NotImplemented


def test_convolution_bad_shape_raises_like_the_operator():
    from mxnet.base import MXNetError
    from onednn_helpers import ctx_for
    from mxnet.operator.kernels_onednn import OPS
    p = _conv_params((3, 3), (), (), (), 2, 1, True)
    with pytest.raises(MXNetError):
        OPS["Convolution"][0](ctx_for(), p, [rand(1, 1, 4, 4), rand(2, 3, 3, 3)], [])


DECONV_CASES = [
    # data shape, kernel, stride, pad, adj, num_filter, num_group, no_bias
    ((2, 3, 5, 5), (3, 3), (1, 1), (0, 0), (0, 0), 4, 1, True),
    ((2, 4, 5, 6), (3, 3), (2, 2), (1, 1), (1, 1), 6, 2, False),
    ((1, 2, 4, 4), (4, 4), (2, 2), (1, 1), (0, 0), 3, 1, False),
    ((2, 3, 7), (3,), (2,), (1,), (0,), 2, 1, True),
    ((1, 2, 4, 4), (3, 3), (2, 2), (0, 0), (1, 1), 3, 1, False),   # adj > pad
]


@pytest.mark.parametrize("case", DECONV_CASES)
def test_deconvolution_forward_backward(case):
    shape, kernel, stride, pad, adj, nf, ng, no_bias = case
    p = params("Deconvolution", kernel=kernel, stride=stride, pad=pad, adj=adj,
               num_filter=nf, num_group=ng, no_bias=no_bias)
    x = rand(*shape)
    w = rand(shape[1], nf // ng, *kernel)
    inputs = [x, w] if no_bias else [x, w, rand(nf)]
    ref, got, _, _ = both_forward("Deconvolution", p, inputs)
    assert got is not NotImplemented
    close(ref[0], got[0], atol=1e-3)
    dy = rand(*ref[0].shape)
    gref, ggot = both_backward("Deconvolution", p, [dy], inputs, ref)
    assert ggot is not NotImplemented
    for a, b in zip(gref, ggot):
        close(a, b, atol=2e-3)


def test_fused_relu_post_op_in_convolution_and_fully_connected():
    from mxnet.backend.onednn import kernels as K
    x, w, b = rand(2, 3, 6, 6), rand(4, 3, 3, 3), rand(4)
    y = np.empty((2, 4, 4, 4), np.float32)
    yr = np.empty_like(y)
    K.conv_forward(x, w, b, y, (1, 1), (1, 1), (0, 0), (0, 0))
    K.conv_forward(x, w, b, yr, (1, 1), (1, 1), (0, 0), (0, 0), relu=True)
    assert (y < 0).any()
    close(np.maximum(y, 0), yr, atol=1e-5)
    a, fw, fb = rand(5, 7), rand(3, 7), rand(3)
    z = np.empty((5, 3), np.float32)
    K.fc_forward(a, fw, fb, z, relu=True)
    close(np.maximum(a @ fw.T + fb, 0), z, atol=1e-5)


def test_deconvolution_with_target_shape():
    p = params("Deconvolution", kernel=(3, 3), stride=(2, 2), num_filter=3,
               target_shape=(8, 8))
    x, w = rand(1, 2, 4, 4), rand(2, 3, 3, 3)
    ref, got, _, _ = both_forward("Deconvolution", p, [x, w])
    assert got is not NotImplemented
    close(ref[0], got[0], atol=1e-3)


def test_fused_conv_relu_and_fc_relu_adapters_match_the_operator_pair():
    from mxnet.operator.kernels_onednn import conv_relu_forward, fc_relu_forward
    from mxnet.operator.registry import get_op
    from onednn_helpers import ctx_for
    relu = params("Activation", act_type="relu")
    act = get_op("Activation")
    p = _conv_params((3, 3), (), (1, 1), (), 4, 1, False)
    inputs = [rand(2, 3, 6, 6), rand(4, 3, 3, 3), rand(4)]
    want = act.forward(ctx_for(), relu, get_op("Convolution").forward(ctx_for(), p, inputs,
                                                                        []), [])
    close(want[0], conv_relu_forward(ctx_for(), p, inputs, [])[0], atol=1e-3)
    pf = params("FullyConnected", num_hidden=3)
    inputs = [rand(5, 7), rand(3, 7), rand(3)]
    want = act.forward(ctx_for(), relu, get_op("FullyConnected").forward(ctx_for(), pf,
                                                                           inputs, []), [])
    close(want[0], fc_relu_forward(ctx_for(), pf, inputs, [])[0], atol=1e-4)


def test_deconvolution_leaves_large_strides_to_the_block_body():
    """oneDNN's deconvolution slows down with the kernel's size, so FCN's upsampler
    (kernel 2s, stride s) runs on the NumPy body's block path: the forward from stride
    16x16, the gradients from 8x8. Where oneDNN keeps the forward it agrees with the
    block body."""
    x = rand(2, 3, 2, 3)
    for s, fwd_dnn, bwd_dnn in ((32, False, False), (16, False, False), (8, True, False),
                                (4, True, True)):
        p = params("Deconvolution", kernel=(2 * s, 2 * s), stride=(s, s),
                   pad=(s // 2, s // 2), num_filter=4)
        w = rand(3, 4, 2 * s, 2 * s)
        ref, got, _, _ = both_forward("Deconvolution", p, [x, w])
        assert (got is not NotImplemented) == fwd_dnn, s
        if fwd_dnn:
            close(ref[0], got[0], atol=1e-3)
        dy = rand(*ref[0].shape)
        gref, ggot = both_backward("Deconvolution", p, [dy], [x, w], ref)
        assert (ggot is not NotImplemented) == bwd_dnn, s
        if bwd_dnn:
            for a, b in zip(gref, ggot):
                close(a, b, atol=2e-3)


@pytest.mark.parametrize("blocked", [False, True])
@pytest.mark.parametrize("relu,residual", [(False, False), (True, False), (False, True),
                                           (True, True)])
def test_per_channel_scale_shift_residual_and_relu_post_ops(blocked, relu, residual):
    # y = relu(conv(x, w) * scale + shift + r), each part a post-op of one primitive
    # (executor/bn_fold.py's folded BatchNorm); the whole-tensor r on blocked arrays
    from mxnet.backend.onednn import kernels as K
    from mxnet.executor import layout
    from mxnet.backend.onednn.primitive import NotSupported
    c = 2 * K.block_width()
    x, w = rand(2, c, 5, 5), rand(c, c, 3, 3)
    scale, shift, r = rand(c), rand(c), rand(2, c, 5, 5)
    plain = np.empty((2, c, 5, 5), np.float32)
    K.conv_forward(x, w, None, plain, (1, 1), (1, 1), (1, 1), (1, 1))
    want = plain * scale[:, None, None] + shift[:, None, None]
    if residual:
        want += r
    if relu:
        want = np.maximum(want, 0)
    y = np.full_like(r, np.nan)
    if blocked:
        xb, yb, rb = np.empty_like(x), np.empty_like(y), np.empty_like(r)
        layout.into_blocked(x, xb)
        layout.into_blocked(r, rb)
        K.conv_forward(K.blocked_view(xb), w, None, K.blocked_view(yb), (1, 1), (1, 1),
                       (1, 1), (1, 1), relu=relu, scale=scale, shift=shift,
                       residual=K.blocked_view(rb) if residual else None)
        y = layout.to_plain(yb)
    else:
        try:
            K.conv_forward(x, w, None, y, (1, 1), (1, 1), (1, 1), (1, 1), relu=relu,
                           scale=scale, shift=shift, residual=r if residual else None)
        except NotSupported:
            # a plain whole-tensor operand: where only oneDNN's reference convolution
            # takes it (refused), the adapter adds it in NumPy (the test below)
            assert residual
            return
    assert (want < 0).any() or relu
    close(want, y, atol=1e-4)


def test_post_op_argument_ids_name_the_operands():
    # DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1 must address binary post-op i:
    # the primitive reports a (1, C, 1, 1) float32 operand there and nothing elsewhere
    from mxnet.backend.onednn import _lib as L, kernels as K
    from mxnet.backend.onednn._runtime import runtime
    y = np.empty((2, 8, 4, 4), np.float32)
    md = K._channel_md(y)
    pd = K._conv_fwd_pd("convolution", L.FORWARD_TRAINING, (2, 8, 4, 4), (8, 8, 1, 1),
                        None, y.shape, ((1, 1), (1, 1), (0, 0), (0, 0)),
                        post_ops=(("relu",), ("binary_mul", md), ("relu",),
                                  ("binary_add", md)))
    lib = runtime().lib
    try:
        sizes = []
        for i in range(5):
            q = lib.dnnl_primitive_desc_query_md(pd, L.QUERY_EXEC_ARG_MD, L.post_op_arg(i))
            sizes.append(lib.dnnl_memory_desc_get_size(q) if q else 0)
    finally:
        lib.dnnl_primitive_desc_destroy(pd)
    assert sizes == [0, 32, 0, 32, 0]


@pytest.mark.parametrize("relu", [False, True])
def test_affine_adapter_adds_a_residual_the_primitive_refuses(monkeypatch, relu):
    from mxnet.backend.onednn import kernels as K
    from mxnet.backend.onednn.primitive import NotSupported
    from mxnet.operator import kernels_onednn as KO
    p = params("Convolution", kernel=(3, 3), pad=(1, 1), num_filter=6, no_bias=True)
    x, w, r = rand(2, 5, 6, 6), rand(6, 5, 3, 3), rand(2, 6, 6, 6)
    scale, shift = rand(6), rand(6)
    plain = K.conv_forward
    refused = []

    def no_residual(*args, residual=None, **kw):
        if residual is not None:
            refused.append(True)
            raise NotSupported("whole-tensor operand")
        return plain(*args, **kw)
    monkeypatch.setattr(K, "conv_forward", no_residual)
    base = np.empty((2, 6, 6, 6), np.float32)
    plain(x, w, None, base, (1, 1), (1, 1), (1, 1), (1, 1))
    want = base * scale[:, None, None] + shift[:, None, None] + r
    if relu:
        want = np.maximum(want, 0)
    y = np.empty_like(r)
    ctx = type("Ctx", (), {"layout": None})()
    with KO.forced():
        assert KO.conv_affine_forward(ctx, p, x, w, y, scale, shift, relu, r) is y
    assert refused == [True]
    close(want, y, atol=1e-4)

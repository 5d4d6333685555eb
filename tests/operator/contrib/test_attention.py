"""The interleaved attention kernels against an einsum reference and numeric gradients."""
import numpy as np

import mxnet as mx
from mxnet.test_utils import assert_almost_equal, check_numeric_gradient

nd = mx.nd
H, D = 2, 3


def test_self_attention_reference_and_gradients():
    rng = np.random.RandomState(0)
    qkv = rng.randn(4, 2, H * 3 * D)
    parts = qkv.reshape(4, 2, H, 3, D)
    q, k, v = parts[..., 0, :], parts[..., 1, :], parts[..., 2, :]
    scores = np.einsum("ibhd,jbhd->bhij", q, k).reshape(2 * H, 4, 4) / np.sqrt(D)
    out = nd.contrib.interleaved_matmul_selfatt_qk(nd.array(qkv), heads=H)
    assert_almost_equal(out.asnumpy(), scores, atol=1e-5)
    att = rng.uniform(0, 1, (2 * H, 4, 4))
    val = np.einsum("bhij,jbhd->ibhd", att.reshape(2, H, 4, 4), v).reshape(4, 2, H * D)
    out = nd.contrib.interleaved_matmul_selfatt_valatt(nd.array(qkv), nd.array(att), heads=H)
    assert_almost_equal(out.asnumpy(), val, atol=1e-5)
    check_numeric_gradient(lambda x: nd.contrib.interleaved_matmul_selfatt_qk(x, heads=H),
                           [qkv], numeric_eps=1e-4, rtol=1e-3, atol=1e-6)
    check_numeric_gradient(
        lambda x, a: nd.contrib.interleaved_matmul_selfatt_valatt(x, a, heads=H),
        [qkv, att], numeric_eps=1e-4, rtol=1e-3, atol=1e-6)


def test_encdec_attention_reference_and_gradients():
    rng = np.random.RandomState(1)
    q = rng.randn(3, 2, H * D)
    kv = rng.randn(5, 2, H * 2 * D)
    k, v = kv.reshape(5, 2, H, 2, D)[..., 0, :], kv.reshape(5, 2, H, 2, D)[..., 1, :]
    scores = np.einsum("ibhd,jbhd->bhij", q.reshape(3, 2, H, D), k).reshape(2 * H, 3, 5)
    out = nd.contrib.interleaved_matmul_encdec_qk(nd.array(q), nd.array(kv), heads=H)
    assert_almost_equal(out.asnumpy(), scores / np.sqrt(D), atol=1e-5)
    att = rng.uniform(0, 1, (2 * H, 3, 5))
    val = np.einsum("bhij,jbhd->ibhd", att.reshape(2, H, 3, 5), v).reshape(3, 2, H * D)
    out = nd.contrib.interleaved_matmul_encdec_valatt(nd.array(kv), nd.array(att), heads=H)
    assert_almost_equal(out.asnumpy(), val, atol=1e-5)
    check_numeric_gradient(
        lambda a, b: nd.contrib.interleaved_matmul_encdec_qk(a, b, heads=H), [q, kv],
        numeric_eps=1e-4, rtol=1e-3, atol=1e-6)
    check_numeric_gradient(
        lambda a, b: nd.contrib.interleaved_matmul_encdec_valatt(a, b, heads=H), [kv, att],
        numeric_eps=1e-4, rtol=1e-3, atol=1e-6)

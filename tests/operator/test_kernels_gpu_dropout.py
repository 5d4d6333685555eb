"""Dropout's GPU kernel (operator/kernels_gpu_dropout.py) and the Philox stream it draws
from (backend/philox.py): a NumPy Philox4x32-10 written here from the algorithm's
definition reproduces Random123's known-answer vectors; the kernel sources compile with
nvcc; run on the host through the module's own launch code (tests/cuda_on_host.py),
the kernel keeps exactly the elements whose Philox uniform is below 1 - p, writes the
output and the mask the operator body would from those draws, moves the stream on
(a new mask per call, the same after ``mx.random.seed``), and trains through the
runner and autograd; on a GPU (skipped without one) the same, and a CUDA graph replay
draws a new mask."""
import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd
from mxnet.backend import philox
from mxnet.base import bfloat16
from mxnet.operator import kernels as KT
from mxnet.operator import kernels_gpu_dropout as DK
from mxnet.operator.registry import OpContext, get_op

from cuda_on_host import sources_ptx

_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
_MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(counters, key):
    """Philox4x32-10 of counters (n, 4) uint32 under key (k0, k1): (n, 4) uint32."""
    c = [counters[:, i].astype(np.uint64) for i in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for r in range(10):
        if r:
            k0, k1 = (k0 + np.uint64(_W0)) & _MASK32, (k1 + np.uint64(_W1)) & _MASK32
        p0, p1 = np.uint64(_M0) * c[0], np.uint64(_M1) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & _MASK32,
             (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & _MASK32]
    return np.stack(c, axis=1).astype(np.uint32)


def test_reference_philox_reproduces_random123_known_answers():
    cases = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
             ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2,
              (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
             ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
              (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for ctr, key, want in cases:
        got = philox4x32_10(np.array([ctr], np.uint32), key)[0]
        assert [int(v) for v in got] == list(want)


def reference_dropout(x, p, key, offset):
    """What the kernel must write: (output, mask) from the Philox draws of blocks
    (e // 4, offset), keeping elements whose uniform is below 1 - p."""
    n = x.size
    blocks = np.arange((n + 3) // 4, dtype=np.uint64)
    ctr = np.stack([blocks & _MASK32, blocks >> np.uint64(32),
                    np.full_like(blocks, offset & 0xFFFFFFFF),
                    np.full_like(blocks, offset >> 32)], axis=1).astype(np.uint32)
    words = philox4x32_10(ctr, (key & 0xFFFFFFFF, key >> 32)).reshape(-1)[:n]
    uniform = (words >> 8).astype(np.float32) * np.float32(2.0 ** -24)
    keep = 1.0 - p
    on = (uniform.astype(np.float64) < keep).reshape(x.shape)
    if bfloat16 is not None and x.dtype == bfloat16:
        # the operator body computes bfloat16 in float32 (operator/bfloat16.py)
        mask = on.astype(np.float32) * np.float32(1.0 / keep)
        return (x.astype(np.float32) * mask).astype(x.dtype), mask.astype(x.dtype)
    mask = on.astype(x.dtype)
    mask *= x.dtype.type(1.0 / keep)
    return x * mask, mask


def test_sources_compile_with_nvcc(tmp_path):
    sources_ptx(tmp_path, [DK.source(dt) for dt in DK.TYPES] + [philox._ADVANCE])


@pytest.fixture
def kernel_on_host(monkeypatch, host_raw_kernels):
    """The kernel and the stream's advance run on the host, for NumPy arrays."""
    monkeypatch.setattr(DK, "raw_kernel", host_raw_kernels)
    monkeypatch.setattr(philox, "raw_kernel", host_raw_kernels)
    monkeypatch.setattr(DK, "_is_device_array", lambda a: isinstance(a, np.ndarray))
    return host_raw_kernels


def _params(**kw):
    return get_op("Dropout").params.parse("Dropout", kw)


def _call(x, p=0.5, train=True, **kw):
    octx = OpContext(np, mx.cpu(), is_train=train)
    return DK.dropout_forward(octx, _params(p=p, **kw), [x], [])


def _state():
    from mxnet.resource import counter_stream
    key, offset = (int(v) for v in counter_stream(mx.cpu()).state)
    return key, offset


DTYPES = [np.float32, np.float64, np.float16] + ([bfloat16] if bfloat16 is not None else [])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n,p,max_blocks", [(1, 0.5, None), (7, 0.3, None), (1026, 0.5, None),
                                            (100003, 0.1, None), (2 * 256 * 4 * 3 + 9, 0.7, 2)])
def test_host_kernel_equals_the_reference_draws(kernel_on_host, monkeypatch, dtype, n, p,
                                                max_blocks):
    if max_blocks:              # fewer blocks than the array needs: each thread strides
        monkeypatch.setattr(DK, "_MAX_BLOCKS", max_blocks)
    rng = np.random.RandomState(n)
    x = (rng.standard_normal(n) * 3).astype(dtype).reshape(-1, 1) if n > 1 else \
        np.array([1.5], dtype)
    key, offset = _state()
    y, mask = _call(x, p)
    want_y, want_mask = reference_dropout(x, p, key, offset)
    assert y.dtype == mask.dtype == np.dtype(dtype) and y.shape == mask.shape == x.shape
    np.testing.assert_array_equal(mask, want_mask)
    np.testing.assert_array_equal(y, want_y)
    assert _state() == (key, offset + 1)          # the stream moved on
    if n > 1000:                                  # ~Binomial(n, 1 - p) kept
        kept = np.count_nonzero(mask)
        assert abs(kept - n * (1 - p)) < 5 * np.sqrt(n * p * (1 - p))


def test_each_call_draws_anew_and_a_seed_repeats_them(kernel_on_host):
    x = np.ones((64, 33), np.float32)
    mx.random.seed(42)
    first = [_call(x)[1] for _ in range(3)]
    assert not np.array_equal(first[0], first[1])
    assert not np.array_equal(first[1], first[2])
    mx.random.seed(42)
    again = [_call(x)[1] for _ in range(3)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    mx.random.seed(43)
    assert not np.array_equal(_call(x)[1], first[0])


def test_writes_into_given_outputs_and_in_place(kernel_on_host):
    x = np.arange(1, 41, dtype=np.float32).reshape(5, 8)
    keep_x = x.copy()
    y, m = np.empty_like(x), np.empty_like(x)
    key, offset = _state()
    octx = OpContext(np, mx.cpu(), is_train=True)
    res = DK.dropout_forward(octx, _params(p=0.25), [x], [], out=[y, m])
    assert res[0] is y and res[1] is m
    want_y, want_m = reference_dropout(keep_x, 0.25, key, offset)
    np.testing.assert_array_equal(y, want_y)
    key, offset = _state()
    res = DK.dropout_forward(octx, _params(p=0.25), [x], [], out=[x, m])   # in place
    want_y, want_m = reference_dropout(keep_x, 0.25, key, offset)
    assert res[0] is x
    np.testing.assert_array_equal(x, want_y)
    np.testing.assert_array_equal(m, want_m)


def test_a_nan_is_stored_as_a_nan(kernel_on_host, tmp_path):
    """Including a GPU's arithmetic NaN (bits 0x7fffffff), which bfloat16's rounding
    would carry into -0 (bits 0x8000) without mx_store_bf16."""
    for dtype in DTYPES:
        x = np.array([np.nan, -np.nan, np.inf, 1.0] * 64, dtype)
        y, mask = _call(x, p=0.5)
        kept = mask != 0
        assert np.isnan(y[kept & np.isnan(x)]).all()
        assert np.isnan(y[~kept & ~np.isfinite(x)]).all()      # NaN * 0, inf * 0
    from cuda_on_host import build
    import ctypes
    from mxnet.backend.cuda_kernels import BITS_SOURCE
    lib = build(tmp_path, BITS_SOURCE + """
extern "C" unsigned short store_bits(unsigned int b) { return mx_store_bf16(mx_bits_to_float(b)); }
extern "C" unsigned short plain_bits(unsigned int b) { return mx_to_bf16(mx_bits_to_float(b)); }
""")
    lib.store_bits.restype = lib.plain_bits.restype = ctypes.c_ushort
    assert lib.plain_bits(0x7FFFFFFF) == 0x8000               # what the guard is for
    for bits in (0x7FFFFFFF, 0xFFFFFFFF, 0x7FC00000, 0xFFC00000, 0x7F800001):
        got = lib.store_bits(bits)
        assert (got & 0x7F80) == 0x7F80 and (got & 0x7F), hex(got)     # a NaN
    assert lib.store_bits(0x3F800000) == 0x3F80                # 1.0 unchanged


def test_declines_what_the_operator_body_computes(kernel_on_host, monkeypatch):
    x = np.ones((4, 4), np.float32)
    assert _call(np.ones((4, 4), np.float16), p=1 - 2.0 ** -17) is NotImplemented  # inf
    assert _call(x, train=False) is NotImplemented            # inference: identity
    assert _call(x, axes=(1,)) is NotImplemented              # one draw along an axis
    assert _call(x, p=1.0) is NotImplemented                  # NaN mask, no draw
    assert _call(np.ones((4, 4), np.int32)) is NotImplemented
    assert _call(np.ones((4, 4), np.float32).T) is NotImplemented   # not C-contiguous
    assert _call(x, train=False, mode="always") is not NotImplemented
    monkeypatch.setenv("MXNET_GPU_FUSED_DROPOUT", "0")
    assert _call(x) is NotImplemented


def test_trains_through_the_runner_and_autograd(kernel_on_host, monkeypatch):
    """Registered as a CPU kernel here: the forward writes the output and the hidden
    mask, backward multiplies the head gradient by that mask."""
    monkeypatch.setitem(KT._TABLE, ("Dropout", "cpu", False), DK.dropout_forward)
    rng = np.random.RandomState(0)
    xh = rng.standard_normal((6, 10)).astype(np.float32)
    head = rng.standard_normal((6, 10)).astype(np.float32)
    x = mx.nd.array(xh)
    x.attach_grad()
    key, offset = _state()
    with autograd.record():
        y = mx.nd.Dropout(x, p=0.4)
    y.backward(mx.nd.array(head))
    want_y, want_mask = reference_dropout(xh, 0.4, key, offset)
    np.testing.assert_array_equal(y.asnumpy(), want_y)
    np.testing.assert_array_equal(x.grad.asnumpy(), head * want_mask)


def test_rnn_dropout_between_layers_draws_from_the_stream(kernel_on_host):
    """RNN's dropout between stacked layers uses the same kernel: the mask kept in its
    reserve is the stream's, and the next layer reads the first one's output times it."""
    from mxnet.operator.nn import rnn as R
    T, N, I, H = 4, 3, 5, 6
    op = get_op("RNN")
    p = op.params.parse("RNN", dict(mode="gru", state_size=H, num_layers=2,
                                    bidirectional=True, p=0.3))
    rng = np.random.RandomState(2)
    inputs = [rng.uniform(-1, 1, (T, N, I)).astype(np.float32),
              rng.uniform(-0.5, 0.5, (R._Plan(p, T, N, I).n_params,)).astype(np.float32),
              rng.uniform(-1, 1, (4, N, H)).astype(np.float32)]
    plan = R._Plan(p, T, N, I)
    key, offset = _state()
    trained = op.forward(OpContext(np, mx.cpu(), is_train=True), p, inputs, [])
    assert _state() == (key, offset + 1)
    plain = op.forward(OpContext(np, mx.cpu(), is_train=False), p, inputs, [])
    x1, mask = plan.layer_input(trained[-1], 1)
    y0, _ = plan.layer_input(plain[-1], 1)            # the first layer's output
    want_x1, want_mask = reference_dropout(y0, 0.3, key, offset)
    np.testing.assert_array_equal(mask, want_mask)
    np.testing.assert_array_equal(x1, want_x1)


# --- on a GPU ----------------------------------------------------------------------------------
gpu = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gpu_dropout_draws_from_the_philox_stream(dtype):
    from mxnet.resource import counter_stream
    ctx = mx.gpu(0)
    xh = np.random.RandomState(1).standard_normal((33, 65)).astype(dtype)
    x = mx.nd.array(xh, ctx=ctx, dtype=dtype)
    x.attach_grad()
    mx.random.seed(7)
    key, offset = (int(v) for v in counter_stream(ctx).state.get())
    with autograd.record():
        y = mx.nd.Dropout(x, p=0.3)
    y.backward(mx.nd.ones_like(y))
    want_y, want_mask = reference_dropout(xh, 0.3, key, offset)
    np.testing.assert_array_equal(y.asnumpy(), want_y)
    np.testing.assert_array_equal(x.grad.asnumpy(), want_mask)
    with autograd.train_mode():
        again = mx.nd.Dropout(x, p=0.3).asnumpy()
    assert not np.array_equal(again, want_y)


@gpu
def test_gpu_cuda_graph_replays_draw_new_masks(monkeypatch):
    from mxnet.gluon import nn
    monkeypatch.setenv("MXNET_ENABLE_CUDA_GRAPHS", "1")
    ctx = mx.gpu(0)
    net = nn.HybridSequential()
    net.add(nn.Dense(64, in_units=16), nn.Dropout(0.5))
    net.initialize(ctx=ctx)
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.ones((8, 16), ctx=ctx)
    outs = []
    for _ in range(6):
        with autograd.record():
            y = net(x)
        y.backward()
        outs.append(y.asnumpy() == 0)
    (entry,) = [e for pool in net._cached_op._pools.values() for e in pool]
    assert ("fwd", True) in entry.graph.graphs, entry.graph.off
    for a, b in zip(outs[2:], outs[3:]):          # replays: a new mask each time
        assert not np.array_equal(a, b)

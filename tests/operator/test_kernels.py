"""The kernel table (mxnet.operator.kernels): registration, lookup, fallback, and
every registered CPU kernel against the operator's own xp body."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.operator import kernels


def test_register_lookup_and_listing(monkeypatch):
    monkeypatch.setattr(kernels, "_TABLE", dict(kernels._TABLE))
    calls = []

    def fwd(ctx, p, inputs, aux, out=None):
        calls.append(out)
        return NotImplemented                   # falls back to the xp body
    kernels.register_kernel("_plus", "gpu", fwd)         # an alias of elemwise_add
    assert kernels.lookup_kernel(mx.operator.get_op("elemwise_add"), "gpu") is fwd
    assert kernels.lookup_kernel("_plus", "gpu") is fwd
    assert kernels.lookup_kernel("elemwise_add", "cpu") is None
    assert kernels.registered_kernels()[("elemwise_add", "gpu", False)] is fwd
    assert ("Convolution", "cpu", True) in kernels.registered_kernels()
    with pytest.raises(MXNetError, match="device"):
        kernels.register_kernel("elemwise_add", "tpu", fwd)


def test_runner_uses_kernel_and_falls_back(monkeypatch):
    from mxnet.operator import runner
    table = dict(kernels._TABLE)
    monkeypatch.setattr(kernels, "_TABLE", table)
    monkeypatch.setattr(runner, "_KERNELS", table)
    seen = []

    def fwd(ctx, p, inputs, aux, out=None):
        seen.append(p.scalar)
        if p.scalar == 2.0:
            return NotImplemented
        return [inputs[0] * 0 + 42]
    kernels.register_kernel("_plus_scalar", "cpu", fwd)
    x = mx.nd.array([1.0, 2.0])
    assert (mx.nd._internal._plus_scalar(x, scalar=1.0).asnumpy() == 42).all()
    np.testing.assert_array_equal(mx.nd._internal._plus_scalar(x, scalar=2.0).asnumpy(), [3, 4])
    assert seen == [1.0, 2.0]


def _both(monkeypatch, fn):
    """fn() with the CPU kernels, then with the table emptied (the xp bodies)."""
    from mxnet.operator import runner
    fast = fn()
    monkeypatch.setattr(runner, "_KERNELS", {})
    slow = fn()
    monkeypatch.undo()
    return fast, slow


def _fwd_bwd(op, inputs, grad_of=0, **kw):
    arrs = [mx.nd.array(a) for a in inputs]
    arrs[grad_of].attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, op)(*arrs, **kw)
        y0 = y[0] if isinstance(y, list) else y
    y0.backward(mx.nd.ones(y0.shape))
    return [y0.asnumpy(), arrs[grad_of].grad.asnumpy()]


rs = np.random.RandomState(3)


@pytest.mark.parametrize("case", [
    ("Pooling", [rs.randn(4, 3, 9, 9)], dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1))),
    ("Pooling", [rs.randn(4, 3, 9, 9)], dict(kernel=(3, 3), pool_type="avg")),
    ("Convolution", [rs.randn(4, 3, 8, 8), rs.randn(5, 3, 3, 3), rs.randn(5)],
     dict(kernel=(3, 3), num_filter=5)),
    ("Convolution", [rs.randn(4, 4, 8, 8), rs.randn(6, 2, 3, 3)],
     dict(kernel=(3, 3), num_filter=6, num_group=2, no_bias=True, stride=(2, 2))),
    ("Deconvolution", [rs.randn(4, 3, 5, 5), rs.randn(3, 2, 3, 3), rs.randn(2)],
     dict(kernel=(3, 3), num_filter=2, stride=(2, 2), no_bias=False)),
    ("sort", [rs.randn(6, 7).astype(np.float32)], dict(axis=1)),
    ("topk", [rs.randn(6, 7).astype(np.float32)], dict(k=3, ret_typ="value")),
])
def test_cpu_kernel_matches_xp_body(monkeypatch, case):
    from mxnet.operator import kernels_cpu
    monkeypatch.setattr(kernels_cpu, "PARALLEL_MIN_WORK", 0)   # conv: the split path
    op, inputs, kw = case
    fast, slow = _both(monkeypatch, lambda: _fwd_bwd(op, inputs, **kw))
    for f, s in zip(fast, slow):
        np.testing.assert_allclose(f, s, rtol=1e-5, atol=1e-6)


def test_embedding_scatter_add_paths_agree(monkeypatch):
    idx = np.array([[1, 3, 1], [0, 3, 3]], dtype=np.float32)
    w = rs.randn(5, 4)
    fast, slow = _both(monkeypatch, lambda: _fwd_bwd("Embedding", [idx, w], grad_of=1,
                                                     input_dim=5, output_dim=4))
    for f, s in zip(fast, slow):
        np.testing.assert_allclose(f, s, rtol=1e-6)
    np.testing.assert_allclose(fast[1][3], 3.0 * np.ones(4))


def test_gather_nd_checks_its_range_without_the_cpu_kernels(monkeypatch):
    """MXNet 1.9.1's gather_nd raises IndexError for an index out of range on every
    device: the operator body (what a GPU runs) checks too, not only the CPU kernel."""
    data, bad = mx.nd.array(np.arange(6.0).reshape(2, 3)), mx.nd.array([[0, 2], [1, 5]])
    with pytest.raises(IndexError, match="out of range"):
        mx.nd.gather_nd(data, bad).asnumpy()
    from mxnet.operator import runner
    monkeypatch.setattr(runner, "_KERNELS", {})
    with pytest.raises(IndexError, match="out of range"):
        mx.nd.gather_nd(data, bad).asnumpy()
    wrapped = mx.nd.array([[0, -1], [-1, -3]])     # negative indices count from the end
    np.testing.assert_array_equal(mx.nd.gather_nd(data, wrapped).asnumpy(),
                                  np.arange(6.0).reshape(2, 3)[[0, -1], [-1, -3]])


def test_exact_alias_finds_the_operand_over_the_same_memory():
    """An in-place plan's output is a second array object over an operand's buffer:
    exact_alias returns the operand itself, and only for the very same view."""
    from mxnet.operator.kernels import exact_alias
    buf = np.arange(12.0).reshape(3, 4)
    other = np.zeros((3, 4))
    same_view = buf.reshape(3, 4)              # another object, same memory and layout
    assert same_view is not buf
    assert exact_alias(same_view, (other, buf)) is buf
    assert exact_alias(buf[:, :2], (buf,)) is not buf        # overlapping, not equal
    assert exact_alias(buf.T, (buf,)) is not buf              # other strides
    assert exact_alias(other, (buf,)) is other
    assert exact_alias(None, (buf,)) is None


def test_output_buffers_accumulating_destination():
    """get_accumulating: the 'add' destination itself when the kernel can add into it,
    else a fresh array with the destination dropped, so done() hands the fresh result
    back (for the runner to add) instead of overwriting the destination."""
    from mxnet.operator.kernels import OutputBuffers
    x = np.ones((2, 3))
    dst = np.full((2, 3), 5.0)
    ob = OutputBuffers(np, [dst], 1, [x])
    arr, acc = ob.get_accumulating(0, (2, 3), np.float64)
    assert arr is dst and acc
    arr += x
    assert ob.done()[0] is dst and (dst == 6).all()

    strided = np.full((2, 6), 5.0)[:, ::2]                # not C-contiguous
    ob = OutputBuffers(np, [strided], 1, [x])
    arr, acc = ob.get_accumulating(0, (2, 3), np.float64)
    assert arr is not strided and not acc
    arr[...] = 1
    res = ob.done()[0]
    assert res is arr and (strided == 5).all()


def test_output_buffers_allow_alias_only_for_the_same_memory():
    """allow_alias lets a kernel write over that input only when the destination is
    exactly its memory; a partial overlap gets a fresh array."""
    from mxnet.operator.kernels import OutputBuffers
    buf = np.arange(8.0)
    x = buf[:4]
    same = buf[:4].reshape(4)
    shifted = buf[2:6]
    assert OutputBuffers(np, [same], 1, [x]).get(0, (4,), np.float64,
                                                 allow_alias=x) is same
    got = OutputBuffers(np, [shifted], 1, [x]).get(0, (4,), np.float64, allow_alias=x)
    assert got is not shifted


@pytest.mark.parametrize("view", ["strided", "reversed", "column", "disjoint", "same"])
def test_output_buffers_span_rule_agrees_with_numpy(view):
    """The span-based check (every kernel's destination rule: each input's address
    range read once per call) refuses exactly the destinations NumPy says overlap an input, also
    for strided and reversed input views whose extent is larger than their nbytes."""
    from mxnet.operator.kernels import OutputBuffers, address_span
    buf = np.arange(40.0)
    x = {"strided": buf[0:40:4], "reversed": buf[39:19:-2], "column":
         buf.reshape(8, 5)[:, 1], "disjoint": buf[:10], "same": buf[10:20]}[view]
    dst = buf[26:36]                    # inside the strided/reversed/column extents
    if view == "disjoint":
        dst = buf[30:40]
    if view == "same":
        dst = buf[10:20]
    lo, hi = address_span(x)
    d_lo, d_hi = address_span(dst)
    assert (lo < d_hi and d_lo < hi) == np.shares_memory(x, dst)
    got = OutputBuffers(np, [dst], 1, [x]).get(0, (10,), np.float64)
    want_direct = not (lo < d_hi and d_lo < hi)
    assert (got is dst) == want_direct
    assert (got is dst) == (view == "disjoint")


def test_same_memory_and_exact_alias_take_numpy_scalars_and_bfloat16():
    """0-d results of NumPy ufuncs are NumPy scalars (mx.np's scalar ops meet them);
    bfloat16 arrays have no memoryview."""
    import numpy as np
    from mxnet.base import bfloat16
    from mxnet.operator.kernels import exact_alias, same_memory
    s = np.float32(2.0)
    assert same_memory(s, s)
    assert exact_alias(s, (np.float32(1.0),)) is s
    b = np.zeros((2, 3), bfloat16)
    assert same_memory(b, b) and not same_memory(b, b.copy())
    assert exact_alias(b[:], (b,)) is b

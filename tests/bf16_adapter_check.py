"""The bfloat16 check of a device kernel adapter (oneDNN on the CPU, cuDNN on the GPU):
on bfloat16 inputs it must take the call itself (not decline) and give what the
operator's NumPy body gives on float32 copies of the same values, within bfloat16's
rounding, forward (outputs and auxiliary states) and backward."""
import numpy as np

import mxnet as mx
from mxnet.base import bfloat16
from mxnet.operator.registry import OpContext, get_op

F32 = np.dtype(np.float32)


def rand_bf16(*shape, scale=1.0):
    return (np.random.randn(*shape) * scale).astype(bfloat16)


def _host32(a):
    """A host float32 copy of a bfloat16 array (NumPy or CuPy); other arrays as host
    arrays."""
    a = a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else a
    return a.astype(np.float32) if a is not None and a.dtype == bfloat16 else a


def _close(got, want, what, rel=2e-2):
    got, want = _host32(got).astype(np.float64), np.asarray(_host32(want), np.float64)
    assert got.shape == want.shape, what
    scale = max(np.abs(want).max(), 1e-3)
    np.testing.assert_allclose(got, want, atol=rel * scale, rtol=0, err_msg=what)


def _ctx(xp, device, is_train, need=None, shapes=None):
    return OpContext(xp, device, is_train=is_train, need_grad=need, in_shapes=shapes,
                     req=None if need is None else ["write"] * len(need))


def check_adapter(adapters, name, p, inputs, aux=(), is_train=True, out_dtypes=None,
                  grads=True, xp=np, device=None, to_device=lambda a: a):
    """``adapters``: the kernel table module's OPS ({name: (forward, backward)});
    ``xp``/``device``/``to_device``: where the adapter runs (NumPy and the CPU by
    default); the reference is the NumPy body on the CPU."""
    device = device or mx.cpu()
    op = get_op(name)
    fwd, bwd = adapters[name]
    shapes = [a.shape for a in inputs]
    aux_ref = [a.copy() for a in aux]
    aux_dev = [to_device(a.copy()) for a in aux]
    want = op.forward(_ctx(np, mx.cpu(), is_train), p, [_host32(a) for a in inputs], aux_ref)
    got = fwd(_ctx(xp, device, is_train), p, [to_device(a) for a in inputs], aux_dev)
    assert got is not NotImplemented, f"{name}: the adapter declined bfloat16"
    out_dtypes = out_dtypes or [bfloat16] * len(want)
    for k, (g, w, t) in enumerate(zip(got, want, out_dtypes)):
        assert g.dtype == t, f"{name} output {k}: {g.dtype}"
        _close(g, w, f"{name} output {k}")
    for k, (g, w) in enumerate(zip(aux_dev, aux_ref)):
        _close(g, w, f"{name} aux {k}")
    if not grads:
        return
    dy = [np.random.randn(*g.shape).astype(g.dtype) for g in got]
    need = [True] * len(inputs)
    w_grads = op.backward(_ctx(np, mx.cpu(), True, need, shapes), p,
                          [_host32(d) for d in dy], [_host32(a) for a in inputs],
                          [_host32(g) for g in got], aux_ref)
    g_grads = bwd(_ctx(xp, device, True, need, shapes), p, [to_device(d) for d in dy],
                  [to_device(a) for a in inputs], list(got), aux_dev)
    assert g_grads is not NotImplemented, f"{name} backward declined bfloat16"
    for k, (g, w, x) in enumerate(zip(g_grads, w_grads, inputs)):
        if g is not None:
            assert g.dtype == x.dtype, f"{name} gradient {k}: {g.dtype}"
            _close(g, w, f"{name} gradient {k}", rel=4e-2)

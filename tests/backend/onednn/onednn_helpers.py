"""Running an operator's NumPy body and its oneDNN adapter side by side."""
import numpy as np

import mxnet as mx
from mxnet.operator.kernels_onednn import OPS
from mxnet.operator.registry import OpContext, get_op


def ctx_for(is_train=False, need_grad=None, in_shapes=None):
    return OpContext(np, mx.cpu(), is_train=is_train, need_grad=need_grad,
                     in_shapes=in_shapes)


def params(name, **kw):
    return get_op(name).parse({k: v for k, v in kw.items()})


def both_forward(name, p, inputs, aux=(), is_train=False, out=None):
    """(numpy outputs, onednn outputs, numpy aux after, onednn aux after)."""
    op = get_op(name)
    aux_np = [a.copy() for a in aux]
    aux_dn = [a.copy() for a in aux]
    ref = op.forward(ctx_for(is_train), p, [a.copy() for a in inputs], aux_np)
    got = OPS[name][0](ctx_for(is_train), p, [a.copy() for a in inputs], aux_dn, out=out)
    return ref, got, aux_np, aux_dn


def both_backward(name, p, out_grads, inputs, outputs, aux=(), need=None, in_grad=None):
    op = get_op(name)
    need = need or [True] * len(inputs)
    shapes = [None if a is None else a.shape for a in inputs]
    ref = op.backward(ctx_for(True, need, shapes), p, out_grads, inputs, outputs, list(aux))
    got = OPS[name][1](ctx_for(True, need, shapes), p, out_grads, inputs, outputs,
                       list(aux), in_grad=in_grad)
    return ref, got


def close(a, b, rtol=1e-4, atol=1e-4):
    assert a is not None and b is not None
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def rand(*shape):
    return np.random.randn(*shape).astype(np.float32)

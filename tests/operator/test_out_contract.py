"""The new operator families follow the writes_outputs contract: forward(out=...)
writes into and returns the given arrays, backward(in_grad=...) likewise."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.operator.registry import OpContext, all_ops, get_op

FAMILIES = ("linalg_extra", "array_extra", "legacy_ops", "random_pdf", "amp_ops",
            "multi_tensor", "ops.image", "storage_ops", "nn.crop", "nn.svm_output",
            "nn.kl_sparse_reg", "nn.spatial_transformer", "nn.im2col_ops",
            "nn.correlation")

rs = np.random.RandomState(4)


def test_every_new_operator_declares_writes_outputs():
    ops = [op for op in all_ops().values()
           if any(type(op).__module__.endswith(f) for f in FAMILIES)]
    assert len(ops) > 40
    assert all(getattr(op, "writes_outputs", False) for op in ops)


CASES = [
    ("cumsum", [rs.normal(size=(3, 4))], {"axis": 1}),
    ("moments", [rs.normal(size=(3, 4))], {"axes": (0,)}),
    ("_linalg_gelqf", [rs.normal(size=(2, 3))], {}),
    ("Crop", [rs.normal(size=(1, 1, 4, 4)).astype(np.float32)], {"num_args": 1,
                                                                 "h_w": (2, 2)}),
    ("im2col", [rs.normal(size=(1, 2, 4, 4))], {"kernel": (2, 2)}),
    ("_image_normalize", [rs.uniform(size=(3, 2, 2))], {"mean": (0.1,), "std": (2.0,)}),
    ("_random_pdf_normal", [rs.normal(size=(2, 3)), rs.normal(size=2),
                            rs.uniform(1, 2, 2)], {}),
]


@pytest.mark.parametrize("name,inputs,kw", CASES)
def test_forward_and_backward_write_into_given_arrays(name, inputs, kw):
    op = get_op(name)
    p = op.parse(kw)
    ctx = OpContext(np, mx.cpu(), need_grad=[True] * len(inputs),
                    in_shapes=[x.shape for x in inputs])
    fresh = op.forward(ctx, p, inputs, [])
    outs = [np.full_like(r, np.nan) for r in fresh]
    written = op.forward(ctx, p, inputs, [], out=outs)
    for w, o, r in zip(written, outs, fresh):
        assert w is o
        np.testing.assert_allclose(o, r)
    if op.backward is None:
        return
    heads = [np.ones_like(r) for r in fresh]
    grads = op.backward(ctx, p, heads, inputs, fresh, [])
    given = [np.full_like(x, np.nan) for x in inputs]
    got = op.backward(ctx, p, heads, inputs, fresh, [], in_grad=given)
    for g0, g1, t in zip(grads, got, given):
        if g0 is not None:
            assert g1 is t
            np.testing.assert_allclose(t, g0)

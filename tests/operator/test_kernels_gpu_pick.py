"""pick's GPU kernels (operator/kernels_gpu_pick.py): the sources compile with nvcc; run
on the host (tests/cuda_on_host.py, through the module's own launch code) the gather and
the scatter give what the operator body gives, for every axis, mode and index type,
fractional, negative and out-of-range indices included; they write into given
destinations, decline what the body must do, and train through the runner and autograd;
on a GPU (skipped without one) nd.pick equals the CPU."""
import itertools

import numpy as np
import pytest

import mxnet as mx
from mxnet import autograd
from mxnet.base import bfloat16
from mxnet.operator import kernels as KT
from mxnet.operator import kernels_gpu_pick as PK
from mxnet.operator.registry import OpContext, get_op

from cuda_on_host import refusing_raw_kernel, sources_ptx

OP = get_op("pick")


def test_sources_compile_with_nvcc(tmp_path):
    sources_ptx(tmp_path, (PK.source(d, size, it, mode) for d, size, it, mode in
                           itertools.product(("forward", "backward"), PK._ELEMENT,
                                             PK._INDEX, PK._BOUND)))


@pytest.fixture
def kernels_on_host(monkeypatch, host_raw_kernels):
    """The kernels run on the host, for NumPy arrays."""
    monkeypatch.setattr(PK, "raw_kernel", host_raw_kernels)
    monkeypatch.setattr(PK, "_is_device_array", lambda a: isinstance(a, np.ndarray))
    return host_raw_kernels


def _params(**kw):
    return OP.params.parse("pick", kw)


def _index(rng, shape, n, dtype):
    """Indices of ``dtype`` around [0, n): fractional, negative and past-the-end values
    included where the type holds them."""
    raw = rng.uniform(-n - 2.5, 2 * n + 2.5, shape)
    if np.dtype(dtype).kind == "u":
        raw = np.abs(raw)
    return raw.astype(dtype)


CASES = [((5, 7), 1), ((5, 7), 0), ((5, 7), -1), ((3, 4, 6), 1), ((2, 3, 4, 5), 2),
         ((9,), 0), ((4, 1, 3), 1)]
INDEX_TYPES = [np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8, np.int8]


@pytest.mark.parametrize("shape,axis", CASES)
@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("itype", INDEX_TYPES, ids=lambda d: np.dtype(d).name)
def test_forward_and_backward_equal_the_operator_body(kernels_on_host, shape, axis, mode,
                                                      keepdims, itype):
    rng = np.random.RandomState(len(shape) * 10 + axis)
    data = rng.standard_normal(shape).astype(np.float32)
    p = _params(axis=axis, mode=mode, keepdims=keepdims)
    ax = axis % len(shape)
    ishape = shape[:ax] + ((1,) if keepdims else ()) + shape[ax + 1:] or (1,)
    index = _index(rng, ishape, shape[ax], itype)
    octx = OpContext(np, mx.cpu(), is_train=True)
    got = PK.pick_forward(octx, p, [data, index], [])
    want = OP.forward(octx, p, [data, index], [])
    assert got is not NotImplemented
    np.testing.assert_array_equal(got[0], want[0])
    assert got[0].shape == want[0].shape

    g = rng.standard_normal(want[0].shape).astype(np.float32)
    bctx = OpContext(np, mx.cpu(), is_train=True, need_grad=[True, True],
                     in_shapes=[shape, ishape])
    got_b = PK.pick_backward(bctx, p, [g], [data, index], want, [])
    want_b = OP.backward(bctx, p, [g], [data, index], want, [])
    np.testing.assert_array_equal(got_b[0], want_b[0])
    np.testing.assert_array_equal(got_b[1], np.zeros(ishape, itype))
    assert got_b[1].dtype == want_b[1].dtype


DATA_TYPES = [np.float64, np.float16, np.int32, np.uint8, np.int64] + \
    ([bfloat16] if bfloat16 is not None else [])


@pytest.mark.parametrize("dtype", DATA_TYPES, ids=lambda d: np.dtype(d).name)
def test_every_data_type_moves_as_its_bits(kernels_on_host, dtype):
    rng = np.random.RandomState(3)
    data = (rng.standard_normal((6, 5)) * 50).astype(dtype)
    index = rng.randint(0, 5, 6).astype(np.float32)
    p = _params(axis=1)
    octx = OpContext(np, mx.cpu(), is_train=True)
    got = PK.pick_forward(octx, p, [data, index], [])[0]
    want = data[np.arange(6), index.astype(np.int64)]
    assert got.dtype == data.dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_writes_into_given_destinations_unless_they_overlap(kernels_on_host):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    index = np.array([3, 0, 2], np.int32)
    p = _params(axis=1)
    octx = OpContext(np, mx.cpu(), is_train=True)
    out = np.full(3, -1, np.float32)
    assert PK.pick_forward(octx, p, [data, index], [], out=[out])[0] is out
    np.testing.assert_array_equal(out, [3, 4, 10])
    # a destination over the data's own memory is not written into (a fresh result)
    alias = data.reshape(-1)[:3]
    res = PK.pick_forward(octx, p, [data, index], [], out=[alias])[0]
    assert res is not alias
    np.testing.assert_array_equal(res, [3, 4, 10])
    g = np.array([1, 2, 3], np.float32)
    bctx = OpContext(np, mx.cpu(), is_train=True, need_grad=[True, False],
                     in_shapes=[(3, 4), (3,)])
    dx = np.full((3, 4), 9, np.float32)
    got = PK.pick_backward(bctx, p, [g], [data, index], [out], [], in_grad=[dx, None])
    assert got[0] is dx and got[1] is None
    np.testing.assert_array_equal(dx, [[0, 0, 0, 1], [2, 0, 0, 0], [0, 0, 3, 0]])


def test_declines_what_the_body_computes(kernels_on_host):
    data = np.ones((4, 5), np.float32)
    octx = OpContext(np, mx.cpu(), is_train=True)
    idx = np.zeros(4, np.float32)
    assert PK.pick_forward(octx, _params(axis=1), [data.T.copy().T, idx], []) \
        is NotImplemented                                       # not C-contiguous
    assert PK.pick_forward(octx, _params(axis=1), [data, np.zeros(4, np.float16)
                                                   .astype(np.complex64)], []) \
        is NotImplemented                                       # an index type it lacks
    assert PK.pick_forward(octx, _params(axis=1), [data, np.zeros(3, np.float32)], []) \
        is NotImplemented                                       # not one index per lane
    assert PK.pick_forward(octx, _params(axis=None), [data, idx], []) is NotImplemented


def test_a_source_the_compiler_refuses_leaves_the_call_to_the_body(kernels_on_host,
                                                                    monkeypatch):
    monkeypatch.setattr(PK, "raw_kernel", refusing_raw_kernel)
    monkeypatch.setattr(PK, "_REFUSED", set())
    octx = OpContext(np, mx.cpu(), is_train=True)
    args = [np.ones((4, 5), np.float32), np.zeros(4, np.float32)]
    with pytest.warns(RuntimeWarning, match="did not compile"):
        assert PK.pick_forward(octx, _params(axis=1), args, []) is NotImplemented
    assert PK.pick_forward(octx, _params(axis=1), args, []) is NotImplemented  # no retry
    monkeypatch.setenv("MXNET_GPU_PICK_KERNEL", "0")
    monkeypatch.setattr(PK, "_REFUSED", set())
    assert PK.pick_forward(octx, _params(axis=1), args, []) is NotImplemented


def test_trains_through_the_runner_and_autograd(kernels_on_host, monkeypatch):
    """Registered as CPU kernels here: SoftmaxCrossEntropyLoss (log_softmax, then pick)
    gives the loss and gradients the operator body gives."""
    rng = np.random.RandomState(0)
    xh = rng.standard_normal((8, 10)).astype(np.float32)
    label = rng.randint(0, 10, 8).astype(np.float32)

    def run():
        x = mx.nd.array(xh)
        x.attach_grad()
        with autograd.record():
            loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()(x, mx.nd.array(label))
        loss.backward()
        return loss.asnumpy(), x.grad.asnumpy()
    want = run()
    monkeypatch.setitem(KT._TABLE, ("pick", "cpu", False), PK.pick_forward)
    monkeypatch.setitem(KT._TABLE, ("pick", "cpu", True), PK.pick_backward)
    launches = len(sum((k.launches for k in kernels_on_host.kernels.values()), []))
    got = run()
    assert len(sum((k.launches for k in kernels_on_host.kernels.values()), [])) > launches
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-7)


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="needs a CUDA GPU")
@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_gpu_pick_equals_the_cpu(mode):
    rng = np.random.RandomState(1)
    xh = rng.standard_normal((16, 11, 3)).astype(np.float32)
    ih = _index(rng, (16, 3), 11, np.float32)
    res = {}
    for ctx in (mx.cpu(), mx.gpu(0)):
        x = mx.nd.array(xh, ctx=ctx)
        x.attach_grad()
        with autograd.record():
            y = mx.nd.pick(x, mx.nd.array(ih, ctx=ctx), axis=1, mode=mode)
        y.backward(mx.nd.array(np.arange(48, dtype=np.float32).reshape(16, 3), ctx=ctx))
        res[ctx.device_type] = (y.asnumpy(), x.grad.asnumpy())
    for a, b in zip(res["cpu"], res["gpu"]):
        np.testing.assert_array_equal(a, b)

"""GroupNorm's and InstanceNorm's GPU kernels (operator/kernels_gpu_groupnorm.py): the
sources compile with nvcc; run on the host (tests/cuda_on_host.py, through the module's
own launch code) the forward and the gradients equal the operator bodies computed in
float64, for float32, float16 and bfloat16, rows longer and shorter than a block, one
group or one channel per row; they honour need_grad and given destinations, decline
what the bodies must do, and train through the runner and autograd; on a GPU (skipped
without one) nd.GroupNorm and nd.InstanceNorm equal the CPU."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.operator import kernels_gpu_groupnorm as GN
from mxnet.operator.registry import OpContext, get_op

from cuda_on_host import (
    assert_close_in_float64, check_layer_trains_like_the_body, check_need_grad_subsets,
    kernel_tolerances, kernels_of_module_on_host, refusing_raw_kernel,
    results_on_cpu_and_gpu, sources_ptx, widened)

TOL = kernel_tolerances()
TYPES = [np.dtype(t) for t in GN.TYPES]
# (operator, data shape, parameters)
CASES = [("GroupNorm", (2, 4, 3, 5), dict(num_groups=2)),
         ("GroupNorm", (3, 6, 40), dict(num_groups=3)),
         ("GroupNorm", (1, 8, 9, 9), dict(num_groups=1)),
         ("GroupNorm", (4, 3, 2, 2), dict(num_groups=3)),
         ("GroupNorm", (2, 2, 1000), dict(num_groups=2)),
         ("InstanceNorm", (2, 3, 7), dict()),
         ("InstanceNorm", (3, 5, 4, 6), dict(eps=1e-5)),
         ("InstanceNorm", (1, 2, 600), dict()),
         ("InstanceNorm", (4, 2, 1, 1, 3), dict())]


def test_sources_compile_with_nvcc(tmp_path):
    sources_ptx(tmp_path, (GN.source(op, k, dt) for op in GN.OPS for k in GN.KINDS
                           for dt in GN.TYPES))


@pytest.fixture
def kernels_on_host(monkeypatch, host_raw_kernels):
    """The kernels run on the host, for NumPy arrays."""
    return kernels_of_module_on_host(monkeypatch, GN, host_raw_kernels)


def _params(op, **kw):
    return get_op(op).params.parse(op, kw)


def _data(rng, op, shape, p, dtype, offset=0.0):
    P = p.num_groups if op == "GroupNorm" else shape[1]
    x = rng.standard_normal(shape) * 2 + offset
    gamma = rng.uniform(0.5, 1.5, P)
    beta = rng.standard_normal(P)
    return [a.astype(dtype) for a in (x, gamma, beta)]




@pytest.mark.parametrize("op, shape, kw", CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("dtype", TYPES, ids=lambda d: d.name)
def test_forward_and_gradients_equal_the_body_in_float64(kernels_on_host, op, shape, kw,
                                                         dtype):
    rng = np.random.RandomState(shape[-1])
    p = _params(op, **kw)
    OP = get_op(op)
    x, gamma, beta = _data(rng, op, shape, p, dtype)
    octx = OpContext(np, mx.cpu(), is_train=True)
    got = GN.forward(op)(octx, p, [x, gamma, beta], [])
    assert got is not NotImplemented
    want = OP.forward(octx, p, widened([x, gamma, beta]), [])
    for g, w in zip(got, want):
        assert g.dtype == dtype and g.shape == w.shape
        assert_close_in_float64(g, w, dtype, scale=np.abs(w).max() + 1)

    dy = rng.standard_normal(shape).astype(dtype)
    bctx = OpContext(np, mx.cpu(), is_train=True, need_grad=[True, True, True],
                     in_shapes=[shape, gamma.shape, beta.shape])
    got_b = GN.backward(op)(bctx, p, [dy], [x, gamma, beta], got, [])
    # the body from the same stored statistics, in float64
    want_b = OP.backward(bctx, p, widened([dy]), widened([x, gamma, beta]), widened(got),
                         [])
    summed = x.size // gamma.size           # elements each parameter gradient adds up
    for g, w, scale in zip(got_b, want_b, (1, summed, summed)):
        assert g.dtype == dtype and g.shape == w.shape
        assert_close_in_float64(g, w, dtype, scale=(np.abs(w).max() + 1) * np.sqrt(scale))


@pytest.mark.parametrize("op", list(GN.OPS))
def test_a_large_offset_keeps_the_statistics_accurate(kernels_on_host, op):
    """Two passes over each row (mean, then squared deviations): no cancellation."""
    rng = np.random.RandomState(1)
    p = _params(op, num_groups=2) if op == "GroupNorm" else _params(op)
    x, gamma, beta = _data(rng, op, (2, 4, 64), p, np.float32, offset=300.0)
    octx = OpContext(np, mx.cpu(), is_train=True)
    y, mean, stat = GN.forward(op)(octx, p, [x, gamma, beta], [])
    rows = x.astype(np.float64).reshape(mean.size, -1)
    var = rows.var(axis=1).reshape(mean.shape)
    want_stat = np.sqrt(var + p.eps) if op == "GroupNorm" else var
    np.testing.assert_allclose(stat, want_stat, rtol=1e-3, atol=1e-3)
    want = get_op(op).forward(octx, p, widened([x, gamma, beta]), [])[0]
    assert_close_in_float64(y, want, np.float32, scale=5 * (np.abs(want).max() + 1))


def test_need_grad_and_given_destinations(kernels_on_host):
    op = "GroupNorm"
    rng = np.random.RandomState(2)
    p = _params(op, num_groups=3)
    x, gamma, beta = _data(rng, op, (2, 6, 11), p, np.float32)
    octx = OpContext(np, mx.cpu(), is_train=True)
    outs = [np.empty(x.shape, np.float32), np.empty((2, 3), np.float32),
            np.empty((2, 3), np.float32)]
    res = GN.forward(op)(octx, p, [x, gamma, beta], [], out=outs)
    assert all(r is o for r, o in zip(res, outs))
    y = np.empty(x.shape, np.float32)               # out= naming the visible output
    only = GN.forward(op)(octx, p, [x, gamma, beta], [], out=[y])
    assert only[0] is y and len(only) == 3
    for a, b in zip(only, res):
        np.testing.assert_array_equal(a, b)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    check_need_grad_subsets(GN.backward(op), p, dy, [x, gamma, beta], res,
                            ([True, False, False], [False, True, False],
                             [False, False, True], [False, True, True],
                             [False, False, False]))


def test_declines_what_the_body_computes(kernels_on_host):
    rng = np.random.RandomState(3)
    octx = OpContext(np, mx.cpu(), is_train=True)
    p = _params("GroupNorm", num_groups=2)
    x, gamma, beta = _data(rng, "GroupNorm", (2, 4, 6), p, np.float32)
    fwd = GN.forward("GroupNorm")
    assert fwd(octx, p, widened([x, gamma, beta]), []) is NotImplemented       # float64
    assert fwd(octx, p, [x.transpose(0, 2, 1).copy().transpose(0, 2, 1), gamma, beta],
               []) is NotImplemented                                          # strided
    assert fwd(octx, p, [x, gamma.astype(np.float16), beta], []) is NotImplemented
    assert fwd(octx, _params("GroupNorm", num_groups=3), [x, gamma, beta], []) \
        is NotImplemented                        # 4 channels in 3 groups: the body's error
    assert fwd(octx, p, [x, gamma[:1], beta[:1]], []) is NotImplemented   # wrong shape
    assert fwd(octx, p, [x[:, :, 0].copy(), gamma, beta], []) is NotImplemented  # 2-D
    inst = GN.forward("InstanceNorm")
    assert inst(octx, _params("InstanceNorm"), [x, gamma, beta], []) is NotImplemented
    xi, gi, bi = _data(rng, "InstanceNorm", (2, 4, 6), _params("InstanceNorm"), np.float32)
    assert inst(octx, _params("InstanceNorm"), [xi, gi, bi], []) is not NotImplemented


def test_a_source_the_compiler_refuses_leaves_the_call_to_the_body(kernels_on_host,
                                                                    monkeypatch):
    monkeypatch.setattr(GN, "raw_kernel", refusing_raw_kernel)
    octx = OpContext(np, mx.cpu(), is_train=True)
    p = _params("InstanceNorm")
    args = _data(np.random.RandomState(4), "InstanceNorm", (2, 3, 8), p, np.float32)
    fwd = GN.forward("InstanceNorm")
    with pytest.warns(RuntimeWarning, match="did not compile"):
        assert fwd(octx, p, args, []) is NotImplemented
    assert fwd(octx, p, args, []) is NotImplemented      # no retry
    monkeypatch.setenv("MXNET_GPU_GROUPNORM_KERNEL", "0")
    monkeypatch.setattr(GN, "_REFUSED", set())
    assert fwd(octx, p, args, []) is NotImplemented


@pytest.mark.parametrize("layer", ["GroupNorm", "InstanceNorm"])
def test_trains_through_the_runner_and_autograd(kernels_on_host, monkeypatch, layer):
    """Registered as CPU kernels here: a Gluon layer's output and gradients (data,
    gamma, beta) are the operator body's."""
    rng = np.random.RandomState(5)
    xh = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)
    head = rng.standard_normal(xh.shape).astype(np.float32)

    def make(data):
        if layer == "GroupNorm":
            block, P = mx.gluon.nn.GroupNorm(num_groups=2), 2
        else:
            block, P = mx.gluon.nn.InstanceNorm(in_channels=4, scale=True), 4
        block.initialize()
        block(data)
        block.gamma.set_data(mx.nd.array(np.linspace(0.5, 1.5, P)))
        block.beta.set_data(mx.nd.array(np.linspace(-1, 1, P)))
        return block
    check_layer_trains_like_the_body(monkeypatch, kernels_on_host, layer, GN.forward(layer),
                                     GN.backward(layer), make, xh, head, 1e-4)


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="needs a CUDA GPU")
@pytest.mark.parametrize("op", list(GN.OPS))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gpu_equals_the_cpu(op, dtype):
    rng = np.random.RandomState(6)
    xh = rng.standard_normal((8, 32, 14, 14)).astype(dtype)
    P = 8 if op == "GroupNorm" else 32
    gh = rng.uniform(0.5, 1.5, P).astype(dtype)
    bh = rng.standard_normal(P).astype(dtype)
    head = rng.standard_normal(xh.shape).astype(dtype)
    kw = {"num_groups": 8} if op == "GroupNorm" else {}
    res = results_on_cpu_and_gpu(lambda *a: getattr(mx.nd, op)(*a, **kw), (xh, gh, bh),
                                 head, dtype)
    tol = TOL[np.dtype(dtype)]
    summed = xh.size // P
    for a, b, scale in zip(res["cpu"], res["gpu"], (1, 1, summed, summed)):
        np.testing.assert_allclose(b.astype(np.float64), a.astype(np.float64),
                                   rtol=10 * tol, atol=10 * tol * np.sqrt(scale))

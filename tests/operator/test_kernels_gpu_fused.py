"""The fused add -> relu kernel of GPU executors (operator/kernels_gpu_fused.py): its
sources compile with nvcc; run on the host (tests/cuda_on_host.py) they give the two
operators' results (the sum rounded to the type, then relu; NaN stays NaN); the fusion table
pairs additions with relu; on a GPU (skipped without one) a hybridized residual block
with the fusion equals the CPU."""
import ctypes

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import bfloat16
from mxnet.operator import kernels as KT
from mxnet.operator import kernels_gpu_fused as F
from mxnet.operator.registry import get_op

from cuda_on_host import per_dtype_host_library, per_dtype_ptx


def test_sources_compile_with_nvcc(tmp_path):
    per_dtype_ptx(tmp_path, F.source, F.TYPES)


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return per_dtype_host_library(
        tmp_path_factory.mktemp("fused"), F.source, F.TYPES,
        "const void* a, const void* b, void* y, long long n",
        "(const {t}*)a, (const {t}*)b, ({t}*)y, n")


def _host_add_relu(lib, a, b):
    y = np.full_like(a, 7)
    fn = getattr(lib, "emu_" + F.source(a.dtype)[0])
    fn(ctypes.c_uint(F.launch_blocks(a.size)), ctypes.c_uint(1), ctypes.c_uint(F._THREADS),
       ctypes.c_void_p(a.ctypes.data), ctypes.c_void_p(b.ctypes.data),
       ctypes.c_void_p(y.ctypes.data), ctypes.c_longlong(a.size))
    return y


def _two_operators(a, b):
    """What elemwise_add then relu give: the sum in the arrays' type, then
    maximum(s, 0) (NaN stays NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = (a.astype(np.float32) + b.astype(np.float32)).astype(a.dtype)
        return np.maximum(s, np.zeros_like(s))


@pytest.mark.parametrize("dtype", F.TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 255, 257, 100003])
def test_host_kernel_equals_the_two_operators(host, dtype, n):
    rng = np.random.RandomState(n)
    a = (rng.standard_normal(n) * 3).astype(dtype)
    b = (rng.standard_normal(n) * 3).astype(dtype)
    if n > 10:
        a[:4] = [np.nan, np.inf, -np.inf, 3e38]
        b[:4] = [1.0, 1.0, -1.0, 3e38]
    got = _host_add_relu(host, a, b)
    want = _two_operators(a, b)
    nan = np.isnan(want.astype(np.float32))
    assert np.array_equal(np.isnan(got.astype(np.float32)), nan) and (n < 10 or nan.any())
    np.testing.assert_array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))


@pytest.mark.skipif(bfloat16 is None, reason="no ml_dtypes")
def test_bfloat16_sums_round_to_nearest_even(host):
    # 1 + 2**-8 lies halfway between two bfloat16 values: ties go to the even one
    a = np.array([1.0, 1.0, 1.0078125], dtype=bfloat16)
    b = np.array([2.0 ** -8, 3 * 2.0 ** -8, 2.0 ** -8], dtype=bfloat16)
    got = _host_add_relu(host, a, b)
    np.testing.assert_array_equal(got.astype(np.float32),
                                  (a.astype(np.float32) + b.astype(np.float32))
                                  .astype(bfloat16).astype(np.float32))


def test_the_fusion_table_pairs_additions_with_relu(monkeypatch):
    monkeypatch.setattr(KT, "_FUSIONS", {})
    F.register_all(KT.register_fusion)
    relu, act = get_op("relu"), get_op("Activation")
    for add in ("elemwise_add", "_plus", "broadcast_add"):
        assert KT.lookup_fusion(get_op(add), relu, "gpu") is F.add_relu
        assert KT.lookup_fusion(get_op(add), act, "gpu", None,
                                act.parse(dict(act_type="relu"))) is F.add_relu
        assert KT.lookup_fusion(get_op(add), act, "gpu", None,
                                act.parse(dict(act_type="tanh"))) is None
        assert KT.lookup_fusion(get_op(add), relu, "cpu") is None


def test_declines_host_arrays():
    a = np.zeros(4, np.float32)
    assert F.add_relu(None, None, [a, a], [], [a.copy()]) is NotImplemented


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_residual_block_on_gpu_equals_cpu(dtype):
    pytest.importorskip("cupy")
    x = mx.sym.var("x")
    y = mx.sym.var("y")
    out = mx.sym.Activation(mx.sym.elemwise_add(x * 2, y), act_type="relu") * 3
    xs = np.random.RandomState(0).standard_normal((4, 8, 5, 5)).astype(dtype)
    ys = np.random.RandomState(1).standard_normal((4, 8, 5, 5)).astype(dtype)
    res = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        ex = out.simple_bind(ctx, x=xs.shape, y=ys.shape, type_dict={"x": dtype,
                                                                     "y": dtype})
        ex.arg_dict["x"][:] = xs
        ex.arg_dict["y"][:] = ys
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones(xs.shape, ctx=ctx, dtype=dtype))
        res.append((ex.outputs[0].asnumpy(), ex.grad_dict["x"].asnumpy(),
                    ex.grad_dict["y"].asnumpy()))
    for c, g in zip(*res):
        np.testing.assert_allclose(g, c, rtol=1e-3, atol=1e-3)

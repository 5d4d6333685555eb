"""mx.rtc: runtime-compiled CUDA kernels. Without a GPU every entry point raises a
clear MXNetError (never an ImportError); the GPU tests compare kernels with NumPy."""
import warnings

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.test_utils import assert_almost_equal

HAS_GPU = mx.context.num_gpus() > 0

AXPY = r'''
extern "C" __global__ void axpy(const float *x, float *y, float alpha, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n) y[i] += alpha * x[i];
}
'''

SOFTMAX_BODY = """
int i = threadIdx.x + blockIdx.x*blockDim.x;
float max_x = x[i*x_dims[1]];
for (int j = 1; j < x_dims[1]; ++j) {
    if (max_x < x[i*x_dims[1]+j]) {
        max_x = x[i*x_dims[1]+j];
    }
}
float sum = 0.0f;
for (int j = 0; j < x_dims[1]; ++j) {
    sum += expf(x[i*x_dims[1]+j]-max_x);
}
for (int j = 0; j < x_dims[1]; ++j) {
    y[i*x_dims[1]+j] = expf(x[i*x_dims[1]+j]-max_x)/sum;
}
"""


def test_rtc_is_a_callable_module():
    import types
    assert isinstance(mx.rtc, types.ModuleType)
    assert callable(mx.rtc)
    assert mx.rtc.CudaModule and mx.rtc.CudaKernel and mx.rtc.Rtc


@pytest.mark.skipif(HAS_GPU, reason="checks the CPU-only behaviour")
def test_cpu_only_machine_raises_clear_errors():
    with pytest.raises(MXNetError, match="mx.rtc requires a GPU"):
        mx.rtc.CudaModule(AXPY)
    x, y = mx.nd.ones((4, 3)), mx.nd.zeros((4, 3))
    with pytest.raises(MXNetError, match="mx.rtc requires a GPU"):
        mx.rtc('softmax', [('x', x)], [('y', y)], SOFTMAX_BODY)
    with pytest.raises(MXNetError, match="mx.rtc requires a GPU"):
        mx.rtc.Rtc('softmax', [('x', x)], [('y', y)], SOFTMAX_BODY)


def test_cpu_context_launch_is_refused():
    kernel = mx.rtc.CudaKernel(lambda *a, **k: None, "axpy",
                               mx.rtc._parse_signature("const float *x, float *y"))
    with pytest.raises(MXNetError, match="requires a GPU context"):
        kernel.launch([mx.nd.ones((2,)), mx.nd.ones((2,))], mx.cpu(), (1, 1, 1), (2, 1, 1))


def test_signature_parsing():
    sig = mx.rtc._parse_signature(
        "const float *x, float* y, int n, double alpha, const __half *__restrict__ h, "
        "int64_t *idx")
    assert sig == [(True, True, np.dtype(np.float32)), (True, False, np.dtype(np.float32)),
                   (False, False, np.dtype(np.int32)), (False, False, np.dtype(np.float64)),
                   (True, True, np.dtype(np.float16)), (True, False, np.dtype(np.int64))]
    with pytest.raises(MXNetError, match="cannot parse kernel parameter"):
        mx.rtc._parse_signature("struct foo *x")


def test_launch_dims_accept_integral_floats():
    assert mx.rtc._dims((6 / 2, 1, 1), "grid_dims") == (3, 1, 1)
    assert mx.rtc._dims(4, "block_dims") == (4, 1, 1)
    with pytest.raises(MXNetError, match="positive integers"):
        mx.rtc._dims((2.5, 1, 1), "grid_dims")


def test_legacy_source_declares_dims():
    rtc = mx.rtc.Rtc.__new__(mx.rtc.Rtc)
    rtc.name, rtc.input_names, rtc.output_names = "softmax", ["x"], ["y"]
    rtc.kernel = "y[0] = x[0];"
    src = rtc._source([mx.nd.ones((100, 10))], [mx.nd.ones((100, 10))])
    assert 'extern "C" __global__ void softmax(const float *x, float *y)' in src
    assert "const int x_ndim = 2;" in src and "const int x_dims[] = {100, 10};" in src
    assert "const int y_dims[] = {100, 10};" in src and src.rstrip().endswith("}")


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
def test_cuda_module_axpy():
    n = 1000
    ctx = mx.gpu(0)
    x = np.random.rand(n).astype(np.float32)
    y = np.random.rand(n).astype(np.float32)
    module = mx.rtc.CudaModule(AXPY)
    axpy = module.get_kernel("axpy", "const float *x, float *y, float alpha, int n")
    xd, yd = mx.nd.array(x, ctx=ctx), mx.nd.array(y, ctx=ctx)
    axpy.launch([xd, yd, 3.0, n], ctx, ((n + 255) // 256, 1, 1), (256, 1, 1))
    assert_almost_equal(yd.asnumpy(), y + 3.0 * x, rtol=1e-6)
    with pytest.raises(MXNetError, match="dtype"):
        axpy.launch([xd.astype("float64"), yd, 1.0, n], ctx, (1, 1, 1), (1, 1, 1))


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
def test_cuda_module_compile_error_is_mxnet_error():
    with pytest.raises(MXNetError, match="compilation failed"):
        mx.rtc.CudaModule('extern "C" __global__ void k(float *x) { x[0] = undefined; }')


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
def test_legacy_rtc_softmax_in_ndarray_op():
    """Seed 000: an NDArrayOp whose forward/backward launch mx.rtc kernels."""
    class NDArraySoftmax(mx.operator.NDArrayOp):
        def __init__(self):
            super().__init__(False)
            self.fwd_kernel = None
            self.bwd_kernel = None

        def list_arguments(self):
            return ['data', 'label']

        def infer_shape(self, in_shape):
            return [in_shape[0], (in_shape[0][0],)], [in_shape[0]]

        def forward(self, in_data, out_data):
            x, y = in_data[0], out_data[0]
            if self.fwd_kernel is None:
                self.fwd_kernel = mx.rtc('softmax', [('x', x)], [('y', y)], SOFTMAX_BODY)
            self.fwd_kernel.push([x], [y], (1, 1, 1), (x.shape[0], 1, 1))

        def backward(self, out_grad, in_data, out_data, in_grad):
            l, y, dx = in_data[1], out_data[0], in_grad[0]
            if self.bwd_kernel is None:
                self.bwd_kernel = mx.rtc('softmax_grad', [('y', y), ('l', l)], [('dx', dx)], """
int i = blockIdx.x;
int j = threadIdx.x;
int k = static_cast<int>(l[i]);
if (j == k) {
    dx[i*dx_dims[1]+j] = y[i*dx_dims[1]+j] - 1.0f;
} else {
    dx[i*dx_dims[1]+j] = y[i*dx_dims[1]+j];
}
""")
            self.bwd_kernel.push([y, l], [dx], (y.shape[0], 1, 1), (y.shape[1], 1, 1))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        op = NDArraySoftmax()
    sym = op(data=mx.sym.var("data"), name="softmax")
    ctx = mx.gpu(0)
    x = np.random.randn(16, 10).astype(np.float32)
    label = np.random.randint(0, 10, 16).astype(np.float32)
    exe = sym.simple_bind(ctx, data=x.shape)
    exe.forward(is_train=True, data=mx.nd.array(x, ctx=ctx),
                softmax_label=mx.nd.array(label, ctx=ctx))
    exe.backward()
    e = np.exp(x - x.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    assert_almost_equal(exe.outputs[0].asnumpy(), p, rtol=1e-5, atol=1e-6)
    g = p.copy()
    g[np.arange(16), label.astype(int)] -= 1
    assert_almost_equal(exe.grad_dict["data"].asnumpy(), g, rtol=1e-5, atol=1e-6)

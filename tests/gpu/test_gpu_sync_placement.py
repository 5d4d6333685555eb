"""GPU correctness: sync points wait for the device, arrays cross devices into the
right memory, Module/executor place batches on their bound contexts.

Tests marked ``gpu`` run only where CuPy sees a CUDA device; the placement logic that
does not need one (lists of contexts, data on another cpu id) runs everywhere.
"""
import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError

HAS_GPU = mx.context.num_gpus() > 0
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU seen by CuPy")


def _mlp():
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _blobs(n=120, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 3, n)
    x = rng.randn(n, 5).astype(np.float32) + 3 * np.eye(3, 5, dtype=np.float32)[y]
    return x, y.astype(np.float32)


def _fit(contexts, **kw):
    x, y = _blobs()
    it = mx.io.NDArrayIter(x, y, batch_size=20, shuffle=False)
    mod = mx.mod.Module(_mlp(), context=contexts, **kw)
    mx.random.seed(1)
    mod.fit(it, num_epoch=8, optimizer="sgd", optimizer_params={"learning_rate": 0.2},
            initializer=mx.init.Xavier(rnd_type="uniform", magnitude=1.0))
    acc = mx.metric.Accuracy()
    mod.score(mx.io.NDArrayIter(x, y, batch_size=20), acc)
    return mod, acc.get()[1]


# --- placement that runs on the CPU -------------------------------------------------
def test_module_on_a_list_of_cpu_contexts_splits_the_batch():
    mod, acc = _fit([mx.cpu(0), mx.cpu(1)], work_load_list=[1, 3])
    group = mod._exec_group
    # 20 examples split 1:3 between the two executors
    assert [e.arg_dict["data"].shape[0] for e in group.execs] == [5, 15]
    assert [e.arg_dict["data"].context for e in group.execs] == [mx.cpu(0), mx.cpu(1)]
    assert acc > 0.9
    arg, _ = mod.get_params()
    assert all(v.context == mx.cpu() for v in arg.values())


def test_executor_bound_on_cpu1_reads_data_from_cpu0():
    x = mx.sym.var("x")
    ex = (x * 2).simple_bind(ctx=mx.cpu(1), x=(2, 3))
    src = mx.nd.arange(6, ctx=mx.cpu(0)).reshape((2, 3))
    out = ex.forward(x=src)[0]
    assert out.context == mx.cpu(1)
    np.testing.assert_array_equal(out.asnumpy(), np.arange(6).reshape(2, 3) * 2)


def test_gpu_without_cuda_says_what_to_install():
    if HAS_GPU:
        pytest.skip("a GPU is present")
    with pytest.raises(MXNetError, match=r"pymxnet\[gpu-cu1[23]\]|no usable CUDA|no CUDA"):
        mx.nd.zeros((2,), ctx=mx.gpu())


# --- on the GPU ------------------------------------------------------------------------
@needs_gpu
def test_waitall_and_wait_to_read_wait_for_the_device():
    import cupy as cp
    a = mx.nd.ones((2048, 2048), ctx=mx.gpu())
    for _ in range(5):
        a = mx.nd.dot(a, a) / 2048.0
    a.wait_to_read()
    # nothing may be left queued on the device once a sync point returned
    assert cp.cuda.get_current_stream().done
    b = mx.nd.dot(a, a)
    mx.nd.waitall()
    assert cp.cuda.get_current_stream().done
    np.testing.assert_allclose(b.asnumpy(), np.ones((2048, 2048)) * 2048, rtol=1e-4)


@needs_gpu
def test_copyto_between_host_and_gpu_keeps_each_array_in_its_memory():
    import cupy as cp
    host = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    dev = mx.nd.zeros((3, 4), ctx=mx.gpu())
    host.copyto(dev)
    assert isinstance(dev._read(), cp.ndarray)
    back = mx.nd.zeros((3, 4))
    dev.copyto(back)
    assert isinstance(back._read(), np.ndarray)
    np.testing.assert_array_equal(back.asnumpy(), host.asnumpy())
    dev[:] = host * 2                       # setitem from another device
    assert isinstance(dev._read(), cp.ndarray)
    np.testing.assert_array_equal(dev.asnumpy(), host.asnumpy() * 2)


@needs_gpu
def test_module_fit_on_gpu_matches_cpu():
    _, acc_cpu = _fit(mx.cpu())
    mod, acc_gpu = _fit(mx.gpu())
    assert acc_gpu > 0.9 and abs(acc_gpu - acc_cpu) < 0.05
    arg, _ = mod.get_params()
    assert all(v.context == mx.cpu() for v in arg.values())


@needs_gpu
def test_module_on_the_same_gpu_twice():
    _, acc = _fit([mx.gpu(0), mx.gpu(0)])
    assert acc > 0.9


@needs_gpu
def test_split_and_load_same_gpu_twice_and_kvstore_device():
    parts = mx.gluon.utils.split_and_load(np.arange(8, dtype=np.float32),
                                          [mx.gpu(0), mx.gpu(0)])
    assert [p.context for p in parts] == [mx.gpu(0)] * 2
    kv = mx.kv.create("device")
    kv.init(0, mx.nd.zeros((4,), ctx=mx.gpu()))
    kv.push(0, parts)
    out = mx.nd.zeros((4,), ctx=mx.gpu())
    kv.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.arange(4) + np.arange(4, 8))


@needs_gpu
def test_features_and_memory_info():
    f = mx.runtime.Features()
    assert f.is_enabled("CUDA")
    free, total = mx.context.gpu_memory_info(0)
    assert 0 < free <= total
    mx.gpu(0).empty_cache()


@needs_gpu
def test_custom_op_writing_host_values_into_gpu_output():
    class Double(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            # a host array assigned into the GPU output, as seed programs do
            self.assign(out_data[0], req[0], mx.nd.array(in_data[0].asnumpy() * 2))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            in_grad[0][:] = mx.nd.array(out_grad[0].asnumpy() * 2)

    @mx.operator.register("gpu_test_double")
    class DoubleProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["data"]

        def infer_shape(self, in_shape):
            return in_shape, in_shape, []

        def create_operator(self, ctx, shapes, dtypes):
            return Double()

    x = mx.nd.ones((2, 3, 8, 8), ctx=mx.gpu())
    y = mx.nd.Custom(x, op_type="gpu_test_double")
    w = mx.nd.ones((4, 3, 3, 3), ctx=mx.gpu())
    z = mx.nd.Convolution(y, w, kernel=(3, 3), num_filter=4, no_bias=True)
    np.testing.assert_allclose(z.asnumpy(), np.full((2, 4, 6, 6), 54.0), rtol=1e-5)


def test_cpu_pinned_arrays_mix_with_cpu_arrays():
    a = mx.nd.ones((2, 3), ctx=mx.cpu_pinned())
    b = mx.nd.arange(6).reshape((2, 3))
    assert a.context == mx.cpu_pinned()
    np.testing.assert_array_equal((a + b).asnumpy(), 1 + np.arange(6).reshape(2, 3))
    c = mx.nd.zeros((2, 3), ctx=mx.cpu_pinned())
    b.copyto(c)
    np.testing.assert_array_equal(c.asnumpy(), b.asnumpy())


def test_split_and_load_onto_the_same_cpu_twice():
    parts = mx.gluon.utils.split_and_load(np.arange(8, dtype=np.float32),
                                          [mx.cpu(0), mx.cpu(0)])
    assert [p.shape for p in parts] == [(4,), (4,)]
    np.testing.assert_array_equal(parts[1].asnumpy(), np.arange(4, 8))

"""mx.model.DataParallelExecutorManager: the legacy FeedForward executor helper."""
import numpy as np
import pytest

import mxnet as mx


def _net():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def _params(rng):
    return {"fc_weight": mx.nd.array(rng.standard_normal((3, 4))),
            "fc_bias": mx.nd.array(rng.standard_normal(3))}


def test_split_over_two_devices_sums_to_full_batch_gradient():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2], np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=6, label_name="softmax_label")
    sym = _net()
    params = _params(rng)
    arg_names = sym.list_arguments()
    mgr = mx.model.DataParallelExecutorManager(
        sym, [mx.cpu(0), mx.cpu(1)], it, arg_names, ["fc_weight", "fc_bias"], [],
        work_load_list=[1, 2])
    assert [s.stop - s.start for s in mgr.slices] == [2, 4]
    mgr.set_params(params, {})
    batch = next(iter(it))
    mgr.load_data_batch(batch)
    mgr.forward(is_train=True)
    mgr.backward()
    # reference: one executor over the whole batch
    ex = sym.simple_bind(mx.cpu(), data=(6, 4), softmax_label=(6,))
    ex.copy_params_from(params)
    ex.forward(is_train=True, data=mx.nd.array(x), softmax_label=mx.nd.array(y))
    ex.backward()
    for i, name in enumerate(["fc_weight", "fc_bias"]):
        total = sum(g.asnumpy() for g in mgr.grad_arrays[i])
        np.testing.assert_allclose(total, ex.grad_dict[name].asnumpy(), rtol=1e-5, atol=1e-6)
    metric = mx.metric.Accuracy()
    mgr.update_metric(metric, batch.label)
    want = (ex.outputs[0].asnumpy().argmax(1) == y).mean()
    assert metric.get()[1] == pytest.approx(want)
    # copy_to averages the devices' copies into the given dicts
    out = {k: mx.nd.zeros(v.shape) for k, v in params.items()}
    mgr.copy_to(out, {})
    np.testing.assert_allclose(out["fc_weight"].asnumpy(), params["fc_weight"].asnumpy(),
                               rtol=1e-6)


def test_forward_before_load_is_an_error():
    it = mx.io.NDArrayIter(np.zeros((2, 4), np.float32), np.zeros(2, np.float32),
                           batch_size=2, label_name="softmax_label")
    sym = _net()
    mgr = mx.model.DataParallelExecutorManager(sym, [mx.cpu()], it, sym.list_arguments(),
                                               ["fc_weight", "fc_bias"], [])
    with pytest.raises(mx.base.MXNetError, match="load_data_batch"):
        mgr.forward()
    with pytest.raises(mx.base.MXNetError, match="work_load_list"):
        mx.model.DataParallelExecutorManager(sym, [mx.cpu()], it, sym.list_arguments(),
                                             ["fc_weight", "fc_bias"], [],
                                             work_load_list=[1, 1])

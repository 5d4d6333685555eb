"""BucketingModule (parameters shared across buckets, checkpoints), SequentialModule
(chained modules against a NumPy network) and PythonLossModule."""
import numpy as np
import pytest

import mxnet as mx
from mxnet.test_utils import assert_almost_equal

N_FEAT, N_OUT, BATCH = 4, 3, 6


def sym_gen(seq_len):
    """(batch, seq_len, N_FEAT) -> sum over time -> FC -> softmax; the parameters do
    not depend on seq_len, so every bucket shares them."""
    data = mx.sym.var("data")
    pooled = mx.sym.sum(data, axis=1)
    fc = mx.sym.FullyConnected(pooled, num_hidden=N_OUT, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax"), ("data",), ("softmax_label",)


def bucket_batch(rng, seq_len):
    X = rng.randn(BATCH, seq_len, N_FEAT).astype(np.float32)
    y = rng.randint(0, N_OUT, BATCH).astype(np.float32)
    return X, y, mx.io.DataBatch(
        [mx.nd.array(X)], [mx.nd.array(y)], pad=0, bucket_key=seq_len,
        provide_data=[mx.io.DataDesc("data", X.shape)],
        provide_label=[mx.io.DataDesc("softmax_label", y.shape)])


class BucketIter(mx.io.DataIter):
    """Yields prepared bucketed batches."""

    def __init__(self, batches, default_key):
        super().__init__(BATCH)
        self.batches, self.default_bucket_key = batches, default_key
        self.provide_data = [mx.io.DataDesc("data", (BATCH, default_key, N_FEAT))]
        self.provide_label = [mx.io.DataDesc("softmax_label", (BATCH,))]
        self.cur = 0

    def reset(self):
        self.cur = 0

    def next(self):
        if self.cur == len(self.batches):
            raise StopIteration
        self.cur += 1
        return self.batches[self.cur - 1]

    __next__ = next


def np_softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def np_bucket_sgd(W, b, data, lr):
    W, b = W.astype(np.float64), b.astype(np.float64)
    for X, y in data:
        s = X.sum(1)
        dz = np_softmax(s @ W.T + b)
        dz[np.arange(len(y)), y.astype(int)] -= 1
        W = W - lr * dz.T @ s / len(y)
        b = b - lr * dz.sum(0) / len(y)
    return W, b


def test_bucketing_shares_parameters_across_buckets():
    rng = np.random.RandomState(0)
    W = rng.randn(N_OUT, N_FEAT).astype(np.float32) * 0.3
    b = np.zeros(N_OUT, np.float32)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=5)
    mod.bind([("data", (BATCH, 5, N_FEAT))], [("softmax_label", (BATCH,))])
    mod.init_params(arg_params={"fc_weight": mx.nd.array(W), "fc_bias": mx.nd.array(b)})
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    seen = []
    for key in (5, 3, 2, 3):
        X, y, batch = bucket_batch(rng, key)
        mod.forward(batch, is_train=True)
        assert mod.get_outputs()[0].shape == (BATCH, N_OUT)
        mod.backward()
        mod.update()
        seen.append((X, y))
    assert sorted(mod._buckets) == [2, 3, 5]
    refW, refb = np_bucket_sgd(W, b, seen, 0.1)
    arg, _ = mod.get_params()
    assert_almost_equal(arg["fc_weight"].asnumpy(), refW, rtol=1e-4, atol=1e-5)
    assert_almost_equal(arg["fc_bias"].asnumpy(), refb, rtol=1e-4, atol=1e-5)
    # all buckets use the same parameter arrays
    w_default = mod._buckets[5]._exec_group.param_arrays[0][0]
    w_other = mod._buckets[3]._exec_group.param_arrays[0][0]
    assert_almost_equal(w_default.asnumpy(), w_other.asnumpy())


def test_bucketing_fit_score_and_checkpoint(tmp_path):
    rng = np.random.RandomState(1)
    batches = [bucket_batch(rng, k)[2] for k in (4, 2, 4, 3)]
    it = BucketIter(batches, default_key=4)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
    mod.fit(it, num_epoch=2, optimizer_params={"learning_rate": 0.1},
            initializer=mx.init.Xavier())
    score = dict(mod.score(it, "acc"))["accuracy"]
    assert 0.0 <= score <= 1.0
    prefix = str(tmp_path / "bkt")
    mod.save_checkpoint(prefix, 2)
    assert sorted(mx.nd.load(prefix + ".buckets")[0].asnumpy().tolist()) == [2, 3, 4]
    loaded = mx.mod.BucketingModule.load(prefix, 2, sym_gen=sym_gen, default_bucket_key=4)
    loaded.bind(it.provide_data, it.provide_label, for_training=False)
    assert dict(loaded.score(it, "acc"))["accuracy"] == pytest.approx(score)
    ref = mod.predict(it).asnumpy()
    assert_almost_equal(loaded.predict(it).asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_bucketing_requires_default_key():
    with pytest.raises(mx.MXNetError):
        mx.mod.BucketingModule(sym_gen)


# ---- SequentialModule --------------------------------------------------------------------
def seq_parts():
    net1 = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=5,
                                                   name="fc1"), act_type="tanh")
    net2 = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("hidden"), num_hidden=N_OUT,
                                                      name="fc2"), name="softmax")
    return net1, net2


def test_sequential_matches_numpy_training():
    rng = np.random.RandomState(2)
    X = rng.randn(12, 7).astype(np.float32)
    y = rng.randint(0, N_OUT, 12).astype(np.float32)
    p = {"fc1_weight": rng.randn(5, 7).astype(np.float32) * 0.3,
         "fc1_bias": np.zeros(5, np.float32),
         "fc2_weight": rng.randn(N_OUT, 5).astype(np.float32) * 0.3,
         "fc2_bias": np.zeros(N_OUT, np.float32)}
    net1, net2 = seq_parts()
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(net1, label_names=None))
    seq.add(mx.mod.Module(net2, data_names=["hidden"]), take_labels=True, auto_wiring=True)
    seq.fit(mx.io.NDArrayIter(X, y, 6), num_epoch=1, optimizer_params={"learning_rate": 0.5},
            arg_params={k: mx.nd.array(v) for k, v in p.items()})
    q = {k: v.astype(np.float64) for k, v in p.items()}
    for s in (0, 6):
        xb, yb = X[s:s + 6], y[s:s + 6]
        h = np.tanh(xb @ q["fc1_weight"].T + q["fc1_bias"])
        dz = np_softmax(h @ q["fc2_weight"].T + q["fc2_bias"])
        dz[np.arange(6), yb.astype(int)] -= 1
        dh = (dz @ q["fc2_weight"]) * (1 - h ** 2)
        grads = {"fc2_weight": dz.T @ h, "fc2_bias": dz.sum(0),
                 "fc1_weight": dh.T @ xb, "fc1_bias": dh.sum(0)}
        for k in q:
            q[k] = q[k] - 0.5 * grads[k] / 6
    arg, _ = seq.get_params()
    assert sorted(arg) == sorted(p)
    for k, v in q.items():
        assert_almost_equal(arg[k].asnumpy(), v, rtol=1e-4, atol=1e-5)
    assert seq.output_shapes == [("softmax_output", (6, N_OUT))]
    assert seq.label_shapes is not None and seq.data_names == ["data"]


def test_sequential_rejects_duplicate_parameter_names_and_bad_meta():
    net1, _ = seq_parts()
    seq = mx.mod.SequentialModule()
    with pytest.raises(mx.MXNetError, match="Unknown meta"):
        seq.add(mx.mod.Module(net1, label_names=None), take_label=True)
    seq.add(mx.mod.Module(net1, label_names=None))
    seq.add(mx.mod.Module(net1, label_names=None), auto_wiring=True)
    seq.bind([("data", (2, 5))], for_training=False)
    with pytest.raises(mx.MXNetError, match="Duplicated parameter names"):
        seq.init_params()


def test_python_loss_module_in_sequence_matches_softmax_output():
    """An FC Module + PythonLossModule(grad = softmax - onehot) trains like FC +
    SoftmaxOutput with normalization 'null'."""
    rng = np.random.RandomState(3)
    X = rng.randn(8, 5).astype(np.float32)
    y = rng.randint(0, N_OUT, 8).astype(np.float32)
    W = rng.randn(N_OUT, 5).astype(np.float32) * 0.3
    args = {"fc_weight": mx.nd.array(W), "fc_bias": mx.nd.zeros(N_OUT)}

    def grad_func(scores, labels):
        prob = np_softmax(scores.asnumpy())
        prob[np.arange(len(prob)), labels.asnumpy().astype(int)] -= 1
        return prob

    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=N_OUT, name="fc")
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(fc, label_names=None))
    seq.add(mx.mod.PythonLossModule(grad_func=grad_func), take_labels=True, auto_wiring=True)
    ref = mx.mod.Module(mx.sym.SoftmaxOutput(fc, name="softmax"))
    for mod in (seq, ref):
        mod.fit(mx.io.NDArrayIter(X, y, 4), num_epoch=1, eval_metric="acc",
                optimizer_params={"learning_rate": 0.3},
                arg_params={k: v.copy() for k, v in args.items()})
    for k in args:
        assert_almost_equal(seq.get_params()[0][k].asnumpy(), ref.get_params()[0][k].asnumpy(),
                            rtol=1e-5, atol=1e-6)

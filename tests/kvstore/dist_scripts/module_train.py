"""Module.fit with kvstore='dist_sync', unchanged user code: ``module_train.py KVSTORE
EPOCHS OUTDIR``. ``fit`` also runs the single-process reference on the combined
batches (Module scales the gradient by 1/(batch_size * num_workers) for '_sync')."""
import logging
import os
import sys

import numpy as np

import mxnet as mx

D, H, C, BATCH, STEPS = 6, 10, 3, 8, 4


def make_data(num_workers):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((STEPS, num_workers * BATCH, D)).astype(np.float32)
    Y = rng.integers(0, C, size=(STEPS, num_workers * BATCH)).astype(np.float32)
    return X, Y


def worker_rows(X, Y, rank, num_workers):
    """Worker rank's rows: its shard of every step's combined batch, in step order."""
    from mxnet.io.sharding import shard_range
    start, end = shard_range(X.shape[1], num_workers, rank)
    return X[:, start:end].reshape(-1, D), Y[:, start:end].reshape(-1)


def fit(kvstore, epochs, X, Y, batch_size, seed):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=H, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.FullyConnected(net, num_hidden=C, name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    it = mx.io.NDArrayIter(X, Y, batch_size=batch_size, shuffle=False)
    mod = mx.mod.Module(net, context=mx.cpu())
    mx.random.seed(seed)
    mod.fit(it, num_epoch=epochs, kvstore=kvstore, optimizer="sgd",
            optimizer_params={"learning_rate": 0.3, "momentum": 0.9},
            initializer=mx.init.Xavier())
    arg, _ = mod.get_params()
    return [arg[k].asnumpy() for k in sorted(arg)]


def main():
    logging.basicConfig(level=logging.WARNING)
    kv_type, epochs, outdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    kv = mx.kv.create(kv_type)
    X, Y = make_data(kv.num_workers)
    Xr, Yr = worker_rows(X, Y, kv.rank, kv.num_workers)
    weights = fit(kv, epochs, Xr, Yr, BATCH, seed=100 + kv.rank)
    np.savez(os.path.join(outdir, f"rank{kv.rank}.npz"), *weights)
    print(f"worker {kv.rank} done", flush=True)


if __name__ == "__main__":
    main()

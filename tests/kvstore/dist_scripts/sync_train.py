"""A small MLP trained with a KVStore and autograd (no Module/Gluon): run under MPI as
``sync_train.py KV_TYPE STEPS OUTDIR``; every worker saves its final weights to
OUTDIR/rank<r>.npz. ``train`` is also imported by the tests for the single-process
reference run on the combined batch."""
import os
import sys

import numpy as np

import mxnet as mx
from mxnet import autograd
from mxnet.io.sharding import shard_range

D, H, C = 6, 10, 3          # inputs, hidden units, classes
BATCH = 8                   # per worker
KEYS = [0, 1, 2, 3]


def make_data(steps, num_workers):
    """Per step, the combined batch of all workers (the same on every worker)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((steps, num_workers * BATCH, D)).astype(np.float32)
    Y = rng.integers(0, C, size=(steps, num_workers * BATCH)).astype(np.float32)
    return X, Y


def init_params(seed):
    rng = np.random.default_rng(seed)
    shapes = [(D, H), (H,), (H, C), (C,)]
    return [mx.nd.array(rng.standard_normal(s).astype(np.float32) * 0.5) for s in shapes]


def loss_fn(params, x, y):
    w1, b1, w2, b2 = params
    h = mx.nd.tanh(mx.nd.broadcast_add(mx.nd.dot(x, w1), b1.reshape((1, -1))))
    z = mx.nd.broadcast_add(mx.nd.dot(h, w2), b2.reshape((1, -1)))
    return -mx.nd.sum(mx.nd.pick(mx.nd.log_softmax(z), y, axis=1))


def train(kv, steps, global_batch, rank, num_workers, X, Y, param_seed):
    """Train for `steps`; this worker uses its shard of each step's combined batch."""
    params = init_params(param_seed)
    kv.init(KEYS, params)
    kv.pull(KEYS, out=params)               # every worker starts from rank 0's values
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, momentum=0.9, wd=1e-3,
                                      rescale_grad=1.0 / global_batch))
    for p in params:
        p.attach_grad()
    start, end = shard_range(X.shape[1], num_workers, rank)
    for step in range(steps):
        x = mx.nd.array(X[step, start:end])
        y = mx.nd.array(Y[step, start:end])
        with autograd.record():
            loss = loss_fn(params, x, y)
        loss.backward()
        grads = [p.grad for p in params]
        if step % 2:
            kv.pushpull(KEYS, grads, out=params)    # all keys in one call
        else:
            for k, g, p in zip(KEYS, grads, params):
                kv.pushpull(k, g, out=p)            # one key per call, as Trainer does
    return [p.asnumpy() for p in params]


def main():
    kv_type, steps, outdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    kv = mx.kv.create(kv_type)
    n = kv.num_workers
    X, Y = make_data(steps, n)
    weights = train(kv, steps, n * BATCH, kv.rank, n, X, Y, param_seed=100 + kv.rank)
    np.savez(os.path.join(outdir, f"rank{kv.rank}.npz"), *weights)
    print(f"worker {kv.rank}/{n} done", flush=True)


if __name__ == "__main__":
    main()

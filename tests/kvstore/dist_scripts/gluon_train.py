"""gluon.Trainer with a distributed kvstore, unchanged user code: ``gluon_train.py
KVSTORE STEPS OUTDIR``. ``train`` also runs the single-process reference."""
import os
import sys

import numpy as np

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon import nn
from mxnet.io.sharding import shard_range

D, H, C, BATCH = 6, 10, 3, 8


def make_data(steps, num_workers):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((steps, num_workers * BATCH, D)).astype(np.float32)
    Y = rng.integers(0, C, size=(steps, num_workers * BATCH)).astype(np.float32)
    return X, Y


def train(kvstore, steps, rank, num_workers, X, Y, seed):
    mx.random.seed(seed)
    net = nn.HybridSequential()
    net.add(nn.Dense(H, activation="tanh", in_units=D), nn.Dense(C, in_units=H))
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.3, "momentum": 0.9, "wd": 1e-3},
                            kvstore=kvstore)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    start, end = shard_range(X.shape[1], num_workers, rank)
    for step in range(steps):
        x, y = mx.nd.array(X[step, start:end]), mx.nd.array(Y[step, start:end])
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(BATCH)
    return [p.data().asnumpy() for p in net.collect_params().values()]


def main():
    kv_type, steps, outdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    kv = mx.kv.create(kv_type)
    X, Y = make_data(steps, kv.num_workers)
    # As in MXNet, Trainer syncs the parameters from rank 0 at its first step, after
    # that step's gradients were computed: workers seed identically.
    weights = train(kv, steps, kv.rank, kv.num_workers, X, Y, seed=100)
    np.savez(os.path.join(outdir, f"rank{kv.rank}.npz"), *weights)
    print(f"worker {kv.rank} done", flush=True)


if __name__ == "__main__":
    main()

"""Linear regression with kvstore='dist_async': every worker pushes gradients of its
own shard and pulls whatever weights the server holds, with no barrier per step.
Worker 1 is slowed down on purpose. Rank 0 saves the final weights and the loss before
and after to OUTDIR/result.npz."""
import os
import sys
import time

import numpy as np

import mxnet as mx
from mxnet.io.sharding import shard_range

D, BATCH, STEPS = 5, 16, 60

outdir = sys.argv[1]
kv = mx.kv.create("dist_async")
r, n = kv.rank, kv.num_workers
rng = np.random.default_rng(0)
w_true = rng.standard_normal((D, 1)).astype(np.float32)
X = rng.standard_normal((n * BATCH * 4, D)).astype(np.float32)
Y = X @ w_true
start, end = shard_range(len(X), n, r)
Xs, Ys = X[start:end], Y[start:end]


def loss(w):
    return float(np.mean((X @ w - Y) ** 2))


w = mx.nd.zeros((D, 1))
kv.init("w", w)
kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, rescale_grad=1.0 / BATCH))
kv.pull("w", out=w)
loss0 = loss(w.asnumpy())
for step in range(STEPS):
    lo = (step * BATCH) % len(Xs)
    xb, yb = mx.nd.array(Xs[lo:lo + BATCH]), mx.nd.array(Ys[lo:lo + BATCH])
    grad = mx.nd.dot(xb, mx.nd.dot(xb, w) - yb, transpose_a=True) * 2
    kv.pushpull("w", grad, out=w)         # the server's current weights
    if r == 1:
        time.sleep(0.002)
kv._barrier()                             # every push of every worker is applied now
kv.pull("w", out=w)
if r == 0:
    np.savez(os.path.join(outdir, "result.npz"), w=w.asnumpy(), w_true=w_true,
             loss0=loss0, loss1=loss(w.asnumpy()))
print(f"worker {r} done", flush=True)

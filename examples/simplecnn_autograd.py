"""Seed 003's SimpleCNN trained imperatively with mx.nd + autograd (no Gluon), on
Fashion-MNIST (Debian's dataset-fashion-mnist, MNIST format).

    python examples/simplecnn_autograd.py [--epochs 1] [--batch-size 64] [--limit N]
"""
import argparse
import time

import numpy as np

import mxnet as mx
from mxnet import autograd, nd


def init_params(ctx, rng):
    """conv1 1->32 3x3, conv2 32->64 3x3, fc1 3136->128, fc2 128->10 (Xavier-style)."""
    def xavier(shape, fan_in, fan_out):
        bound = np.sqrt(6.0 / (fan_in + fan_out))
        return nd.array(rng.uniform(-bound, bound, shape), ctx=ctx)
    params = {
        "conv1_weight": xavier((32, 1, 3, 3), 9, 32 * 9), "conv1_bias": nd.zeros(32, ctx),
        "conv2_weight": xavier((64, 32, 3, 3), 32 * 9, 64 * 9), "conv2_bias": nd.zeros(64, ctx),
        "fc1_weight": xavier((128, 3136), 3136, 128), "fc1_bias": nd.zeros(128, ctx),
        "fc2_weight": xavier((10, 128), 128, 10), "fc2_bias": nd.zeros(10, ctx),
    }
    for p in params.values():
        p.attach_grad()
    return params


def forward(x, P):
    x = nd.relu(nd.Convolution(x, P["conv1_weight"], P["conv1_bias"], kernel=(3, 3),
                               pad=(1, 1), num_filter=32))
    x = nd.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2))
    x = nd.relu(nd.Convolution(x, P["conv2_weight"], P["conv2_bias"], kernel=(3, 3),
                               pad=(1, 1), num_filter=64))
    x = nd.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2))
    x = x.reshape((0, -1))
    x = nd.relu(nd.FullyConnected(x, P["fc1_weight"], P["fc1_bias"], num_hidden=128))
    return nd.FullyConnected(x, P["fc2_weight"], P["fc2_bias"], num_hidden=10)


def train(epochs=1, batch_size=64, lr=0.1, momentum=0.9, limit=None, seed=0, log=print,
          test_limit=None, ctx=None, synthetic=False):
    if synthetic:
        from mlp_harness import load_data
        mnist = load_data(limit, synthetic=True, seed=seed)
    else:
        mnist = mx.test_utils.get_mnist()
    ctx = ctx or mx.cpu()
    rng = np.random.RandomState(seed)
    P = init_params(ctx, rng)
    velocity = {k: nd.zeros(v.shape, ctx) for k, v in P.items()}
    X, Y = mnist["train_data"], mnist["train_label"]
    if limit:
        X, Y = X[:limit], Y[:limit]
    for epoch in range(epochs):
        order = rng.permutation(len(X))
        t0, seen, total_loss = time.time(), 0, 0.0
        for i in range(0, len(X) - batch_size + 1, batch_size):
            idx = order[i:i + batch_size]
            data, label = nd.array(X[idx], ctx), nd.array(Y[idx], ctx)
            with autograd.record():
                loss = nd.softmax_cross_entropy(forward(data, P), label) / batch_size
            loss.backward()
            for k, w in P.items():           # SGD with momentum, by hand
                velocity[k][:] = momentum * velocity[k] - lr * w.grad
                w += velocity[k]
            seen += batch_size
            total_loss += loss.asscalar()
        log(f"epoch {epoch}: loss {total_loss / (seen / batch_size):.4f}, "
            f"{seen / (time.time() - t0):.0f} samples/s")
    return evaluate(P, mnist["test_data"][:test_limit], mnist["test_label"][:test_limit],
                    ctx=ctx)


def evaluate(P, X, Y, batch_size=500, ctx=None):
    correct = 0
    for i in range(0, len(X), batch_size):
        out = forward(nd.array(X[i:i + batch_size], ctx or mx.cpu()), P)
        correct += int((out.argmax(axis=1).asnumpy() == Y[i:i + batch_size]).sum())
    return correct / len(X)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--gpu", action="store_true", help="train on mx.gpu(0)")
    ap.add_argument("--synthetic", action="store_true",
                    help="random images around ten class centres instead of MNIST files")
    a = ap.parse_args()
    acc = train(a.epochs, a.batch_size, limit=a.limit, synthetic=a.synthetic,
                ctx=mx.gpu() if a.gpu else mx.cpu())
    print(f"test accuracy: {acc:.4f}")

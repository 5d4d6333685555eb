"""Seed 004's MLP on raw executors: a symbol, ``simple_bind`` for training, a second
executor bound to the same argument arrays for testing, and plain SGD written with
NDArray arithmetic. Data: Fashion-MNIST from /usr/share/datasets/fashion-mnist
(Debian's dataset-fashion-mnist), or --data-dir; random data with --synthetic.

    python examples/executor_mlp.py [--epochs 1] [--max-batches N] [--lr 0.001]
"""
import argparse
import time

import numpy as np

import mxnet as mx
from mxnet.io.idx import DEBIAN_FASHION_MNIST, find_mnist_dir, read_idx

DATA_DIR = DEBIAN_FASHION_MNIST


def load_data(data_dir=DATA_DIR, synthetic=False, seed=0):
    """(train_x, train_y, test_x, test_y): images flattened to 784 values in [0, 255];
    random data around ten class centres with synthetic, or when no MNIST-format
    files are found (data_dir, $MXNET_MNIST_DIR, Debian's fashion-mnist)."""
    if not synthetic:
        try:
            root = find_mnist_dir(data_dir)
        except mx.base.MXNetError:
            synthetic = True
    if synthetic:
        rng = np.random.RandomState(seed)
        centers = rng.rand(10, 784)
        def make(n):
            y = rng.randint(0, 10, n)
            return np.clip(centers[y] + 0.3 * rng.randn(n, 784), 0, 1), y
        trx, tr_y = make(2560)
        tex, te_y = make(512)
        return trx * 255, tr_y, tex * 255, te_y
    trx = read_idx(root, "train-images-idx3-ubyte").reshape(-1, 784)
    tr_y = read_idx(root, "train-labels-idx1-ubyte")
    tex = read_idx(root, "t10k-images-idx3-ubyte").reshape(-1, 784)
    te_y = read_idx(root, "t10k-labels-idx1-ubyte")
    return trx, tr_y, tex, te_y


def build_symbol():
    data = mx.sym.Variable("data")             # input features
    label = mx.sym.Variable("softmax_label")
    # Arguments can be given explicitly ...
    w1 = mx.sym.Variable("weight1")
    b1 = mx.sym.Variable("bias1")
    l1 = mx.sym.FullyConnected(data=data, num_hidden=128, name="layer1", weight=w1, bias=b1)
    a1 = mx.sym.Activation(data=l1, act_type="relu", name="act1")
    # ... or created automatically (layer2_weight, layer2_bias).
    l2 = mx.sym.FullyConnected(data=a1, num_hidden=10, name="layer2")
    return mx.sym.SoftmaxOutput(data=l2, label=label)


def train(epochs=1, batch_size=128, lr=0.001, max_batches=None, max_test=None,
          data_dir=DATA_DIR, synthetic=False, seed=0, ctx=None, log=print):
    """Train and return the test accuracy after the last epoch."""
    ctx = ctx or mx.cpu()
    np.random.seed(seed)
    trx, tr_y, tex, te_y = load_data(data_dir, synthetic, seed)
    if max_test:
        tex, te_y = tex[:max_test], te_y[:max_test]
    cost_classification = build_symbol()
    input_shapes = {"data": (batch_size, 28 * 28), "softmax_label": (batch_size,)}
    executor = cost_classification.simple_bind(ctx=ctx, grad_req="write", **input_shapes)
    # The test executor shares the training executor's arguments (no gradients).
    executor_test = cost_classification.bind(ctx=ctx, grad_req="null",
                                             args=executor.arg_arrays)
    for r in executor.arg_arrays:
        r[:] = np.random.randn(*r.shape) * 0.02
    log(executor.memory_plan.summary().rstrip())

    tr_idx = np.arange(len(trx))
    accuracy = 0.0
    for epoch in range(epochs):
        np.random.shuffle(tr_idx)
        t0, batches = time.time(), 0
        for x in range(0, len(tr_idx), batch_size):
            if max_batches is not None and batches >= max_batches:
                break
            idx = tr_idx[x:x + batch_size]
            if len(idx) != batch_size:          # the executor is bound to one batch size
                continue
            executor.arg_dict["data"][:] = trx[idx] / 255.
            executor.arg_dict["softmax_label"][:] = tr_y[idx]
            executor.forward(is_train=True)
            executor.backward()
            for pname, W, G in zip(cost_classification.list_arguments(),
                                   executor.arg_arrays, executor.grad_arrays):
                if pname in ("data", "softmax_label"):   # inputs are not updated
                    continue
                W[:] = W - G * lr
            batches += 1
        num_correct = num_total = 0
        for x in range(0, len(tex), batch_size):
            bx, by = tex[x:x + batch_size], te_y[x:x + batch_size]
            if bx.shape[0] != batch_size:
                continue
            executor_test.arg_dict["data"][:] = bx / 255.
            executor_test.forward()
            pred = np.argmax(executor_test.outputs[0].asnumpy(), axis=1)
            num_correct += int((pred == by).sum())
            num_total += len(by)
        accuracy = num_correct / float(max(num_total, 1))
        log(f"epoch {epoch}: {batches} batches in {time.time() - t0:.1f}s, "
            f"test accuracy {accuracy:.4f}")
    return accuracy


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--max-batches", type=int, default=None,
                    help="stop each epoch after this many batches (small runs)")
    ap.add_argument("--max-test", type=int, default=None, help="use only this many test images")
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--synthetic", action="store_true", help="random data, no files needed")
    ap.add_argument("--gpu", action="store_true")
    a = ap.parse_args()
    train(a.epochs, a.batch_size, a.lr, a.max_batches, a.max_test, a.data_dir, a.synthetic,
          ctx=mx.gpu() if a.gpu else mx.cpu())

"""pymxnet's main job: seed 003's SimpleCNN trained with Gluon on Fashion-MNIST.

Trains with a progress bar (loss, accuracy, samples/s), reports test accuracy, saves
the parameters, and on a later run with ``--evaluate`` loads them and evaluates.

    python examples/train_fashion_mnist.py [--epochs 2] [--hybridize] [--evaluate]

Data: Debian's ``dataset-fashion-mnist`` (MNIST-format files under
/usr/share/datasets/fashion-mnist); installed with apt-get when missing and possible.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

import mxnet as mx
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"


class SimpleCNN(gluon.HybridBlock):
    """Seed 003's network: two 3x3 conv + max-pool stages, then 128 -> 10 dense."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.conv1 = nn.Conv2D(32, kernel_size=3, strides=1, padding=1)
            self.conv2 = nn.Conv2D(64, kernel_size=3, strides=1, padding=1)
            self.fc1 = nn.Dense(128)
            self.fc2 = nn.Dense(10)

    def hybrid_forward(self, F, x):
        x = F.relu(self.conv1(x))
        x = F.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2))
        x = F.relu(self.conv2(x))
        x = F.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2))
        x = x.reshape((0, -1))
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def ensure_dataset():
    """Make sure Debian's Fashion-MNIST files are there, installing them if we can."""
    if os.path.isdir(DEBIAN_DIR):
        return
    if shutil.which("apt-get") and os.geteuid() == 0:
        print("Fashion-MNIST not found; installing Debian's dataset-fashion-mnist ...")
        subprocess.run(["apt-get", "install", "-y", "-qq", "dataset-fashion-mnist"],
                       check=False)
    if not os.path.isdir(DEBIAN_DIR):
        sys.exit(f"Fashion-MNIST is needed in {DEBIAN_DIR}: install it with "
                 "`sudo apt-get install dataset-fashion-mnist` (Debian/Ubuntu), or put the "
                 "four MNIST-format files there.")


class Progress:
    """A one-line progress bar redrawn in place on a terminal (plain lines otherwise)."""

    def __init__(self, total, width=30):
        self.total, self.width = total, width
        self.tty = sys.stdout.isatty()
        self.start = time.time()

    def update(self, done, samples, loss, acc, final=False):
        rate = samples / max(time.time() - self.start, 1e-9)
        filled = int(self.width * done / self.total)
        line = (f"[{'=' * filled}{'.' * (self.width - filled)}] {done}/{self.total} "
                f"loss {loss:.4f} acc {acc:.4f} {rate:,.0f} samples/s")
        if self.tty:
            print("\r" + line, end="\n" if final else "", flush=True)
        elif final or done % max(self.total // 10, 1) == 0:
            print(line, flush=True)


def loaders(batch_size):
    transform = gluon.data.vision.transforms.ToTensor()
    train = gluon.data.vision.datasets.FashionMNIST(train=True).transform_first(transform)
    test = gluon.data.vision.datasets.FashionMNIST(train=False).transform_first(transform)
    return (gluon.data.DataLoader(train, batch_size=batch_size, shuffle=True),
            gluon.data.DataLoader(test, batch_size=500))


def evaluate(net, data, ctx):
    metric = mx.metric.Accuracy()
    for x, y in data:
        metric.update([y.as_in_context(ctx)], [net(x.as_in_context(ctx))])
    return metric.get()[1]


def train(net, train_data, ctx, epochs, lr, momentum, batch_size):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": lr, "momentum": momentum})
    for epoch in range(epochs):
        bar = Progress(len(train_data))
        metric, total_loss, seen = mx.metric.Accuracy(), 0.0, 0
        for i, (data, label) in enumerate(train_data, 1):
            data, label = data.as_in_context(ctx), label.as_in_context(ctx)
            with autograd.record():
                output = net(data)
                loss = loss_fn(output, label)
            loss.backward()
            trainer.step(batch_size=data.shape[0])
            metric.update([label], [output])
            total_loss += loss.sum().asscalar()
            seen += data.shape[0]
            bar.update(i, seen, total_loss / seen, metric.get()[1], final=i == len(train_data))
        print(f"epoch {epoch + 1}/{epochs}: train loss {total_loss / seen:.4f}, "
              f"train accuracy {metric.get()[1]:.4f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--hybridize", action="store_true")
    ap.add_argument("--params", default="simplecnn-fashion-mnist.params")
    ap.add_argument("--evaluate", action="store_true",
                    help="load --params and report test accuracy, no training")
    args = ap.parse_args(argv)
    ensure_dataset()
    mx.random.seed(0)
    ctx = mx.cpu()
    net = SimpleCNN()
    if args.hybridize:
        net.hybridize()
    train_data, test_data = loaders(args.batch_size)
    if args.evaluate:
        if not os.path.exists(args.params):
            sys.exit(f"no saved parameters at {args.params}: train first (without --evaluate)")
        net.load_parameters(args.params, ctx=ctx)
    else:
        net.initialize(mx.init.Xavier(), ctx=ctx)
        train(net, train_data, ctx, args.epochs, args.lr, args.momentum, args.batch_size)
        net.save_parameters(args.params)
        print(f"saved parameters to {args.params}")
    acc = evaluate(net, test_data, ctx)
    print(f"test accuracy: {acc:.4f}")
    return acc


if __name__ == "__main__":
    main()

"""pymxnet's main job: seed 003's SimpleCNN trained with Gluon on Fashion-MNIST.

Trains with a progress bar (loss, accuracy, samples/s; tqdm on a terminal, plain lines
otherwise), reports train and test loss/accuracy per epoch, saves the parameters and
draws ``training_curves.png`` beside them (with matplotlib: ``pip install
pymxnet[plot]``); a later run with ``--evaluate`` loads the parameters and evaluates.

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


def plot_curves(history, path):
    """Writes loss and accuracy per epoch (train and test) to ``path`` with matplotlib;
    returns the path, or None when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")            # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    epochs = [h["epoch"] for h in history]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, title in ((ax_loss, "loss", "Loss"), (ax_acc, "acc", "Accuracy")):
        ax.plot(epochs, [h["train_" + key] for h in history], "o-", label="train")
        ax.plot(epochs, [h["test_" + key] for h in history], "s--", label="test")
        ax.set_xlabel("epoch")
        ax.set_title(f"{title} per epoch")
        ax.set_xticks(epochs)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("SimpleCNN on Fashion-MNIST (pymxnet, Gluon)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def loaders(batch_size):
    transform = gluon.data.vision.transforms.ToTensor()
    train = gluon.data.vision.datasets.FashionMNIST(train=True).transform_first(transform)
    test = gluon.data.vision.datasets.FashionMNIST(train=False).transform_first(transform)
    return (gluon.data.DataLoader(train, batch_size=batch_size, shuffle=True),
            gluon.data.DataLoader(test, batch_size=500))


def evaluate(net, data, ctx, loss_fn=None):
    """Test accuracy, or (accuracy, mean loss) when ``loss_fn`` is given."""
    metric, total_loss, seen = mx.metric.Accuracy(), 0.0, 0
    for x, y in data:
        y = y.as_in_context(ctx)
        out = net(x.as_in_context(ctx))
        metric.update([y], [out])
        if loss_fn is not None:
            total_loss += loss_fn(out, y).sum().asscalar()
            seen += x.shape[0]
    acc = metric.get()[1]
    return acc if loss_fn is None else (acc, total_loss / max(seen, 1))


def train(net, train_data, test_data, ctx, epochs, lr, momentum, batch_size):
    """Trains; returns one dict per epoch (train/test loss and accuracy)."""
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": lr, "momentum": momentum})
    history = []
    for epoch in range(epochs):
        # a tqdm bar on a terminal, a plain line every tenth of the epoch otherwise
        from mxnet._progress import progress_bar   # here: benchmarks import SimpleCNN under real MXNet
        bar = progress_bar(total=len(train_data), desc=f"epoch {epoch + 1}/{epochs}",
                           unit="batch", file=sys.stdout)
        metric, total_loss, seen, start = mx.metric.Accuracy(), 0.0, 0, time.time()
        for data, label in train_data:
            data, label = data.as_in_context(ctx), label.as_in_context(ctx)
            with autograd.record():
                output = net(data)
                loss = loss_fn(output, label)
            loss.backward()
            trainer.step(batch_size=data.shape[0])
            metric.update([label], [output])
            total_loss += loss.sum().asscalar()
            seen += data.shape[0]
            bar.set_postfix(loss=f"{total_loss / seen:.4f}", acc=f"{metric.get()[1]:.4f}",
                            samples_per_s=f"{seen / max(time.time() - start, 1e-9):,.0f}",
                            refresh=False)
            bar.update(1)
        bar.close()
        test_acc, test_loss = evaluate(net, test_data, ctx, loss_fn)
        history.append({"epoch": epoch + 1, "train_loss": total_loss / seen,
                        "train_acc": metric.get()[1], "test_loss": test_loss,
                        "test_acc": test_acc})
        print(f"epoch {epoch + 1}/{epochs}: train loss {total_loss / seen:.4f}, "
              f"train accuracy {metric.get()[1]:.4f}, test loss {test_loss:.4f}, "
              f"test accuracy {test_acc:.4f}", flush=True)
    return history


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
    ap.add_argument("--plot", default=None,
                    help="where to write the training curves (default: "
                         "training_curves.png beside --params; needs matplotlib)")
    ap.add_argument("--no-plot", action="store_true", help="do not draw training curves")
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
        history = train(net, train_data, test_data, ctx, args.epochs, args.lr,
                        args.momentum, args.batch_size)
        net.save_parameters(args.params)
        print(f"saved parameters to {args.params}")
        if not args.no_plot:
            plot = args.plot or os.path.join(os.path.dirname(os.path.abspath(args.params)),
                                             "training_curves.png")
            if plot_curves(history, plot):
                print(f"wrote training curves to {os.path.abspath(plot)}")
            else:
                print("matplotlib is not installed: pip install 'pymxnet[plot]' to get "
                      "training_curves.png")
    acc = evaluate(net, test_data, ctx)
    print(f"test accuracy: {acc:.4f}")
    return acc


if __name__ == "__main__":
    main()

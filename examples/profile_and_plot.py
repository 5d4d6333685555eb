"""Profile the main job's hybridized training step and draw LeNet.

    python examples/profile_and_plot.py [--out examples/outputs] [--steps 3]

Writes, under --out:
  profile_hybridized_step.json  Chrome trace (open in chrome://tracing or
                                https://ui.perfetto.dev) of a few SGD steps of
                                train_fashion_mnist.py's SimpleCNN, hybridized, one
                                "step" frame per iteration with every graph node of the
                                forward and backward passes and the optimizer updates
  profile_hybridized_step.txt   the profiler's aggregate table for those steps
  lenet.png (and lenet.gv)      mx.viz.plot_network of a hybridized Gluon LeNet
                                (the PNG needs Graphviz's `dot`; the .gv source does not)
The batch is random (shape of a Fashion-MNIST batch) so no dataset is needed.
"""
import argparse
import os
import shutil
import sys

import mxnet as mx
from mxnet import autograd, gluon, nd, profiler
from mxnet.gluon import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_fashion_mnist import SimpleCNN  # noqa: E402


def lenet():
    net = nn.HybridSequential(prefix="lenet_")
    with net.name_scope():
        net.add(nn.Conv2D(20, kernel_size=5, activation="tanh"),
                nn.MaxPool2D(pool_size=2, strides=2),
                nn.Conv2D(50, kernel_size=5, activation="tanh"),
                nn.MaxPool2D(pool_size=2, strides=2),
                nn.Flatten(),
                nn.Dense(500, activation="tanh"),
                nn.Dense(10))
    return net


def profile_steps(out_dir, steps, batch_size=64):
    mx.random.seed(0)
    net = SimpleCNN()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.05, "momentum": 0.9})
    data = nd.random.uniform(shape=(batch_size, 1, 28, 28))
    label = nd.array([i % 10 for i in range(batch_size)])

    def step():
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(batch_size)
        return loss

    step().wait_to_read()          # builds the cached graph: not part of the trace
    trace = os.path.join(out_dir, "profile_hybridized_step.json")
    profiler.set_config(profile_all=True, aggregate_stats=True, filename=trace)
    profiler.set_state("run")
    frame = profiler.Frame(profiler.Domain("training"), "step")
    for _ in range(steps):
        frame.start()
        step()
        mx.nd.waitall()
        frame.stop()
    profiler.set_state("stop")
    profiler.dump()
    with open(os.path.join(out_dir, "profile_hybridized_step.txt"), "w") as f:
        f.write(profiler.dumps(reset=True))
    return trace


def plot_lenet(out_dir):
    net = lenet()
    net.initialize()
    net.hybridize()
    net(nd.zeros((1, 1, 28, 28)))
    dot = mx.viz.plot_network(net, shape={"data": (1, 1, 28, 28)}, title="lenet",
                              save_format="png", node_attrs={"fixedsize": "false"})
    with open(os.path.join(out_dir, "lenet.gv"), "w") as f:
        f.write(dot.source)
    if shutil.which("dot") is None:
        print("Graphviz's dot not found: wrote lenet.gv only")
        return None
    return dot.render(filename="lenet", directory=out_dir, cleanup=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "outputs"))
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    print("trace:", profile_steps(args.out, args.steps))
    print("plot:", plot_lenet(args.out))


if __name__ == "__main__":
    main()

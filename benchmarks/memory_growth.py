"""RSS of a steady training loop (issue 19, point 4): a small MLP trained imperatively,
hybridized, and through Module, with RSS printed at intervals. Growth after warm-up
should be ~0 (MXNet 1.9.1: +0.1 MB imperative, +0.0 MB hybridized over 2500 steps).

    python3 benchmarks/memory_growth.py [--steps 3000] [--every 500] [--mode imperative]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import numpy as np  # noqa: E402

import mxnet as mx  # noqa: E402
from mxnet import autograd, gluon, nd  # noqa: E402


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _net(hybridize):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(64, activation="relu"), gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    return net


def gluon_steps(hybridize):
    net = _net(hybridize)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rs = np.random.RandomState(0)

    def step():
        # a fresh batch each step, as a data loader gives
        x, y = nd.array(rs.rand(32, 20)), nd.array(rs.randint(0, 10, 32))
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(32)
        return loss.mean().asscalar()
    return step


def module_steps():
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(data, num_hidden=64)
    out = mx.sym.Activation(out, act_type="relu")
    out = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(out, num_hidden=10), name="softmax")
    mod = mx.mod.Module(out)
    mod.bind(data_shapes=[("data", (32, 20))], label_shapes=[("softmax_label", (32,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01})
    rs = np.random.RandomState(0)
    metric = mx.metric.Accuracy()

    def step():
        batch = mx.io.DataBatch([nd.array(rs.rand(32, 20))], [nd.array(rs.randint(0, 10, 32))])
        mod.forward_backward(batch)
        mod.update()
        mod.update_metric(metric, batch.label)
        return mod.get_outputs()[0].asnumpy()
    return step


MODES = {"imperative": lambda: gluon_steps(False), "hybridized": lambda: gluon_steps(True),
         "module": module_steps}


def run(mode, steps, every, warmup):
    step = MODES[mode]()
    base = None
    for i in range(1, steps + 1):
        step()
        if i == warmup:
            base = rss_mb()
        if i % every == 0:
            print(f"{mode:10s} step {i:5d}  RSS {rss_mb():8.2f} MB", flush=True)
    growth = rss_mb() - base
    print(f"{mode:10s} growth after step {warmup}: {growth:+.2f} MB", flush=True)
    return growth


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--mode", choices=sorted(MODES), action="append")
    a = ap.parse_args()
    for mode in a.mode or list(MODES):
        run(mode, a.steps, a.every, a.warmup)


if __name__ == "__main__":
    main()

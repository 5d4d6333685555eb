"""Seed 003's SimpleCNN trained with Gluon (batch 64, SGD lr 0.01): samples/s,
imperative and hybridized, for pymxnet (with oneDNN and with its NumPy kernels), the
real MXNet 1.9.1 and PyTorch CPU (same model, same batch), 2 threads each, medians of
alternating runs; plus each process's peak RSS.

Data: random Fashion-MNIST-shaped batches (1x28x28, 10 classes) made in the worker,
so the data pipeline is not what is measured.

    python benchmarks/gluon_train.py [--steps 60] [--repeat 3]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

BATCH = 64
VARIANTS = dict([harness.NUMPY_VARIANT])


def worker_mxnet(steps, hybridize):
    import numpy as np
    import mxnet as mx
    from mxnet import autograd, gluon, nd

    sys.path.insert(0, os.path.join(harness.HERE, "..", "examples"))
    from train_fashion_mnist import SimpleCNN   # seed 003's network (a HybridBlock)

    net = SimpleCNN()
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    rng = np.random.RandomState(0)
    data = [nd.array(rng.rand(BATCH, 1, 28, 28)) for _ in range(4)]
    label = [nd.array(rng.randint(0, 10, BATCH)) for _ in range(4)]

    def step(i):
        with autograd.record():
            loss = loss_fn(net(data[i % 4]), label[i % 4])
        loss.backward()
        trainer.step(BATCH)
        return loss
    for i in range(5):
        step(i).wait_to_read()
    t0 = time.perf_counter()
    for i in range(steps):
        loss = step(i)
    loss.wait_to_read()
    mx.nd.waitall()
    return steps * BATCH / (time.perf_counter() - t0)


def worker_torch(steps):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(2)
    torch.manual_seed(0)

    net = harness.torch_simple_cnn()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    data = [torch.rand(BATCH, 1, 28, 28) for _ in range(4)]
    label = [torch.randint(0, 10, (BATCH,)) for _ in range(4)]

    def step(i):
        opt.zero_grad()
        loss = F.cross_entropy(net(data[i % 4]), label[i % 4])
        loss.backward()
        opt.step()
    for i in range(5):
        step(i)
    t0 = time.perf_counter()
    for i in range(steps):
        step(i)
    return steps * BATCH / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--mode", default="imperative")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--frameworks", default="pymxnet,pymxnet-numpy,mxnet-1.9.1,pytorch")
    ap.add_argument("--out", default=os.path.join(harness.HERE, "results", "gluon_train.md"))
    args = ap.parse_args()
    if args.worker:
        if args.worker == "pytorch":
            sps = worker_torch(args.steps)
        else:
            sps = worker_mxnet(args.steps, args.mode == "hybridized")
        print(json.dumps({f"{args.mode} samples/s": sps,
                          f"{args.mode} peak RSS MB": harness.peak_rss_mb()}))
        return
    me = os.path.abspath(__file__)
    frameworks = args.frameworks.split(",")

    def modes(fw):
        ms = ("imperative",) if fw == "pytorch" else ("imperative", "hybridized")
        return [["--mode", m, "--steps", str(args.steps)] for m in ms]
    runs = harness.run_alternating(me, frameworks, modes, repeat=args.repeat,
                                   env_of=lambda fw: dict(VARIANTS.get(fw, {})))
    for row in runs.values():        # hybridize's gain, per framework
        imp, hyb = row.get("imperative samples/s"), row.get("hybridized samples/s")
        if isinstance(imp, float) and isinstance(hyb, float):
            row["hybridized / imperative"] = hyb / imp
    metrics = ["imperative samples/s", "hybridized samples/s"]
    mem = ["imperative peak RSS MB", "hybridized peak RSS MB"]
    loads = ", ".join(f"{fw} {runs[fw].get('load', float('nan')):.1f}" for fw in frameworks)
    text = ["# Gluon SimpleCNN training (batch 64, SGD)", "", harness.machine_note(), "",
            f"Medians of {args.repeat} runs per framework, alternating; median load average "
            f"at the start of each framework's runs: {loads}. pymxnet-numpy is pymxnet "
            "with oneDNN off (MXNET_MKLDNN_ENABLED=0); PyTorch runs eagerly (no "
            "hybridized column).", "",
            *harness.section(harness.THROUGHPUT, runs, metrics, lower_is_better=False,
                             unit="samples/s"),
            "Hybridized vs imperative (samples/s ratio, per framework): " + ", ".join(
                f"{fw} {runs[fw]['hybridized / imperative']:.2f}x" for fw in frameworks
                if "hybridized / imperative" in runs[fw]), "",
            *harness.section(harness.PEAK_RSS, runs, mem, unit="MB")]
    harness.write_report(args.out, text, runs)


if __name__ == "__main__":
    main()

"""Symbolic executors (seed 004): the raw-executor MLP (784-128-10, batch 128) and a
LeNet executor (batch 64), forward+backward samples/s and peak process memory, for
pymxnet (oneDNN on and off), the real MXNet 1.9.1 and PyTorch (the same graphs, eager)
in one run (2 threads each, medians of alternating runs), plus pymxnet's memory
plan: bytes of its planned buffers vs. what a plan without reuse would allocate.

    python benchmarks/executor.py
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def mlp(mx):
    data = mx.sym.Variable("data")
    l1 = mx.sym.FullyConnected(data=data, num_hidden=128, name="layer1")
    a1 = mx.sym.Activation(data=l1, act_type="relu", name="act1")
    l2 = mx.sym.FullyConnected(data=a1, num_hidden=10, name="layer2")
    return mx.sym.SoftmaxOutput(data=l2, name="softmax"), (128, 784)


def lenet(mx):
    data = mx.sym.Variable("data")
    c1 = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20)
    p1 = mx.sym.Pooling(mx.sym.Activation(c1, act_type="tanh"), pool_type="max",
                        kernel=(2, 2), stride=(2, 2))
    c2 = mx.sym.Convolution(p1, kernel=(5, 5), num_filter=50)
    p2 = mx.sym.Pooling(mx.sym.Activation(c2, act_type="tanh"), pool_type="max",
                        kernel=(2, 2), stride=(2, 2))
    f1 = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.flatten(p2), num_hidden=500),
                           act_type="tanh")
    f2 = mx.sym.FullyConnected(f1, num_hidden=10)
    return mx.sym.SoftmaxOutput(f2, name="softmax"), (64, 1, 28, 28)


def worker(model, steps):
    import numpy as np
    import mxnet as mx
    sym, shape = {"mlp": mlp, "lenet": lenet}[model](mx)
    ex = sym.simple_bind(ctx=mx.cpu(), grad_req="write", data=shape)
    rng = np.random.RandomState(0)
    for name, arr in ex.arg_dict.items():
        if name == "softmax_label":
            arr[:] = rng.randint(0, 10, arr.shape)
        else:
            arr[:] = rng.standard_normal(arr.shape) * 0.05
    for _ in range(3):
        ex.forward(is_train=True)
        ex.backward()
    mx.nd.waitall()
    t0 = time.perf_counter()
    for _ in range(steps):
        ex.forward(is_train=True)
        ex.backward()
    mx.nd.waitall()
    sps = steps * shape[0] / (time.perf_counter() - t0)
    out = {f"{model} samples/s": sps, f"{model} peak RSS MB": harness.peak_rss_mb()}
    plan = getattr(ex, "memory_plan", None)
    if plan is not None:
        out[f"{model} plan MB"] = plan.planned_bytes / 2 ** 20
        out[f"{model} no-reuse MB"] = plan.naive_bytes / 2 ** 20
    return out


def worker_torch(model, steps):
    """The same graphs' forward+backward (no optimiser) in PyTorch, eager."""
    import torch
    import torch.nn as tnn
    import torch.nn.functional as F
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    torch.manual_seed(0)
    if model == "mlp":
        net, shape = tnn.Sequential(tnn.Linear(784, 128), tnn.ReLU(),
                                    tnn.Linear(128, 10)), (128, 784)
    else:
        net = tnn.Sequential(tnn.Conv2d(1, 20, 5), tnn.Tanh(), tnn.MaxPool2d(2, 2),
                             tnn.Conv2d(20, 50, 5), tnn.Tanh(), tnn.MaxPool2d(2, 2),
                             tnn.Flatten(), tnn.Linear(800, 500), tnn.Tanh(),
                             tnn.Linear(500, 10))
        shape = (64, 1, 28, 28)
    # the data gradient too: the MXNet executors are bound with grad_req='write' for
    # every argument, data included
    x = torch.randn(*shape, requires_grad=True)
    y = torch.randint(0, 10, (shape[0],))

    def step():
        net.zero_grad(set_to_none=False)
        x.grad = None
        F.cross_entropy(net(x), y).backward()
    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return {f"{model} samples/s": steps * shape[0] / (time.perf_counter() - t0),
            f"{model} peak RSS MB": harness.peak_rss_mb()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--model")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--frameworks", default="pymxnet,pymxnet-numpy,mxnet-1.9.1,pytorch")
    ap.add_argument("--out", default=os.path.join(harness.HERE, "results", "executor.md"))
    args = ap.parse_args()
    if args.worker:
        run = worker_torch if args.worker == "pytorch" else worker
        print(json.dumps(run(args.model, args.steps)))
        return
    me = os.path.abspath(__file__)
    frameworks = args.frameworks.split(",")
    runs = harness.run_alternating(
        me, frameworks, lambda fw: [["--model", model, "--steps", str(steps)] for model, steps
                                    in (("mlp", args.steps), ("lenet", max(10, args.steps // 5)))],
        repeat=args.repeat, env_of=lambda fw: dict([harness.NUMPY_VARIANT]).get(fw, {}))
    speed = ["mlp samples/s", "lenet samples/s"]
    mem = ["mlp peak RSS MB", "lenet peak RSS MB"]
    ours = runs["pymxnet"]
    plan = [f"- {m}: planned {ours.get(m + ' plan MB', float('nan')):.2f} MB vs "
            f"{ours.get(m + ' no-reuse MB', float('nan')):.2f} MB without reuse"
            for m in ("mlp", "lenet")]
    loads = ", ".join(f"{fw} {runs[fw].get('load', float('nan')):.1f}" for fw in frameworks)
    text = ["# Executor forward+backward", "", harness.machine_note(), "",
            f"Medians of {args.repeat} alternating runs; median load average at the start: "
            f"{loads}. pymxnet-numpy: oneDNN off; PyTorch: the same graphs, eager.", "",
            *harness.section(harness.THROUGHPUT, runs, speed, lower_is_better=False,
                             unit="samples/s"),
            *harness.section(harness.PEAK_RSS, runs, mem, unit="MB"),
            "pymxnet memory plan:", *plan, ""]
    harness.write_report(args.out, text, runs)


if __name__ == "__main__":
    main()

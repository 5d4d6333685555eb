"""Symbolic executors (seed 004): the raw-executor MLP (784-128-10, batch 128) and a
LeNet executor (batch 64), forward+backward samples/s and peak process memory, for
pymxnet and the real MXNet 1.9.1 in one run (2 threads each), plus pymxnet's memory
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--model")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--out", default=os.path.join(harness.HERE, "results", "executor.md"))
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.model, args.steps)))
        return
    me = os.path.abspath(__file__)
    runs = {}
    for fw in ("pymxnet", "mxnet-1.9.1"):
        runs[fw] = {}
        for model, steps in (("mlp", args.steps), ("lenet", max(10, args.steps // 5))):
            harness.add_result(runs[fw], harness.run_worker(
                me, fw, ["--model", model, "--steps", str(steps)]), model)
    speed = ["mlp samples/s", "lenet samples/s"]
    mem = ["mlp peak RSS MB", "lenet peak RSS MB"]
    ours = runs["pymxnet"]
    plan = [f"- {m}: planned {ours.get(m + ' plan MB', float('nan')):.2f} MB vs "
            f"{ours.get(m + ' no-reuse MB', float('nan')):.2f} MB without reuse"
            for m in ("mlp", "lenet")]
    text = ["# Executor forward+backward", "", harness.machine_note(), "",
            *harness.section(harness.THROUGHPUT, runs, speed, lower_is_better=False,
                             unit="samples/s"),
            *harness.section(harness.PEAK_RSS, runs, mem, unit="MB"),
            "pymxnet memory plan:", *plan, ""]
    harness.write_report(args.out, text, runs)


if __name__ == "__main__":
    main()

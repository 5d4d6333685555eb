"""NumPy mode (``mx.np``/``mx.npx``) cost: µs per op for ``a + b`` on (10,), ``npx.relu``
on (10,) and a 64x64 ``np.dot``, beside the same ops in nd mode; one call of the d2l
book's hybridize-section MLP (Dense 256-relu, 128-relu, 2 on one 512-wide sample),
imperative and hybridized; and the d2l-style
LeNet (sigmoid, avg-pool, hybridized) training throughput in np mode, for pymxnet, the
real MXNet 1.9.1 and the PyTorch equivalent, in one run with 2 threads.

    python benchmarks/numpy_mode.py [--out benchmarks/results/numpy_mode.md]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CASES = ["np a+b (10,) µs", "nd a+b (10,) µs", "npx.relu (10,) µs", "nd.relu (10,) µs",
         "np.dot 64x64 µs", "nd.dot 64x64 µs", "d2l MLP call, imperative µs",
         "d2l MLP call, hybridized µs", "LeNet np-mode train samples/s"]
LENET = CASES.index("LeNet np-mode train samples/s")


def _loop(op, sync):
    def run(n):
        for _ in range(n):
            c = op()
        sync(c)
    return run


def worker_mxnet():
    import numpy as onp

    import mxnet as mx
    from mxnet import autograd, gluon, np, npx
    from mxnet.gluon import nn
    res = {}
    a, b = mx.nd.ones((10,)), mx.nd.ones((10,))
    m = mx.nd.random.uniform(shape=(64, 64))
    wait = lambda c: c.wait_to_read()  # noqa: E731
    res[CASES[1]] = harness.best_us(_loop(lambda: a + b, wait), 20000)
    res[CASES[3]] = harness.best_us(_loop(lambda: mx.nd.relu(a), wait), 20000)
    res[CASES[5]] = harness.best_us(_loop(lambda: mx.nd.dot(m, m), wait), 5000)
    npx.set_np()
    pa, pb = np.ones((10,)), np.ones((10,))
    pm = np.random.uniform(size=(64, 64))
    res[CASES[0]] = harness.best_us(_loop(lambda: pa + pb, wait), 20000)
    res[CASES[2]] = harness.best_us(_loop(lambda: npx.relu(pa), wait), 20000)
    res[CASES[4]] = harness.best_us(_loop(lambda: np.dot(pm, pm), wait), 5000)

    mlp = nn.HybridSequential()
    mlp.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
    mlp.initialize()
    x = np.random.normal(size=(1, 512))
    res[CASES[6]] = harness.best_us(_loop(lambda: mlp(x), wait), 2000)
    mlp.hybridize()
    res[CASES[7]] = harness.best_us(_loop(lambda: mlp(x), wait), 2000)

    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, 5, padding=2, activation="sigmoid"), nn.AvgPool2D(2, 2),
            nn.Conv2D(16, 5, activation="sigmoid"), nn.AvgPool2D(2, 2),
            nn.Dense(120, activation="sigmoid"), nn.Dense(84, activation="sigmoid"),
            nn.Dense(10))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.9})
    X = np.array(onp.random.uniform(size=(256, 1, 28, 28)).astype(onp.float32))
    y = np.array(onp.random.randint(0, 10, 256).astype(onp.float32))

    def step():
        with autograd.record():
            ls = loss(net(X), y)
        ls.backward()
        trainer.step(256)
        return ls
    for _ in range(3):
        step().wait_to_read()
    t0 = time.perf_counter()
    steps = 20
    for _ in range(steps):
        ls = step()
    ls.wait_to_read()
    res[CASES[LENET]] = steps * 256 / (time.perf_counter() - t0)
    return res


def worker_torch():
    import torch
    from torch import nn
    torch.set_num_threads(2)
    res = {}
    a, b = torch.ones(10), torch.ones(10)
    m = torch.rand(64, 64)
    for case, op in ((CASES[0], lambda: a + b), (CASES[2], lambda: torch.relu(a))):
        res[case] = harness.best_us(_loop(op, lambda c: None), 20000)
    res[CASES[4]] = harness.best_us(_loop(lambda: torch.mm(m, m), lambda c: None), 5000)
    mlp = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                        nn.Linear(128, 2))
    x = torch.randn(1, 512)
    with torch.no_grad():
        res[CASES[6]] = harness.best_us(_loop(lambda: mlp(x), lambda c: None), 2000)
    net = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.Sigmoid(), nn.AvgPool2d(2, 2),
                        nn.Conv2d(6, 16, 5), nn.Sigmoid(), nn.AvgPool2d(2, 2), nn.Flatten(),
                        nn.Linear(400, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(),
                        nn.Linear(84, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.9)
    lossf = nn.CrossEntropyLoss()
    X, y = torch.rand(256, 1, 28, 28), torch.randint(0, 10, (256,))

    def step():
        opt.zero_grad()
        ls = lossf(net(X), y)
        ls.backward()
        opt.step()
    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(20):
        step()
    res[CASES[LENET]] = 20 * 256 / (time.perf_counter() - t0)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--out", default=os.path.join(harness.HERE, "results", "numpy_mode.md"))
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker_torch() if args.worker == "pytorch" else worker_mxnet()))
        return
    me = os.path.abspath(__file__)
    runs = {"pymxnet": harness.run_worker(me, "pymxnet"),
            "mxnet-1.9.1": harness.run_worker(me, "mxnet-1.9.1"),
            "pytorch": harness.run_worker(me, "pytorch")}
    text = ["# NumPy mode: per-op cost and d2l-style LeNet training", "",
            harness.machine_note(), "", "Per op (lower is better):", "",
            harness.table(runs, CASES[:LENET], unit="µs"), "",
            "LeNet training, batch 256 (higher is better):", "",
            harness.table(runs, CASES[LENET:], lower_is_better=False, unit="samples/s"), ""]
    harness.write_report(args.out, text, runs)


if __name__ == "__main__":
    main()

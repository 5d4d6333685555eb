"""Module.fit on Fashion-MNIST: the 784-128-64-10 MLP and LeNet (conv 5x5x20, tanh,
max-pool, conv 5x5x50, tanh, max-pool, fc 500, tanh, fc 10), batch 100, SGD lr 0.1
momentum 0.9, Xavier init, for pymxnet (with oneDNN and with its NumPy kernels), the
real MXNet 1.9.1 and the same networks in PyTorch (eager, same init, optimiser, batch
and per-batch accuracy), 2 threads each, medians of alternating runs. Reports training
throughput (samples/s over the whole ``fit`` call, metric updates and logging
included), scoring throughput, test accuracy and each worker's peak RSS.

The parent process reads the Fashion-MNIST files once (pymxnet's IDX reader) and
hands the same arrays to every worker (an .npz in a temporary directory), so both
frameworks see identical data; shuffling and initialisation use each framework's RNG.

    python benchmarks/module_fit.py [--train 10000] [--test 10000] [--epochs 1] [--repeat 3]
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

BATCH = 100
MODELS = ("mlp", "lenet")
VARIANTS = dict([harness.NUMPY_VARIANT])


def build(mx, model):
    data = mx.sym.var("data")
    if model == "mlp":
        x = mx.sym.flatten(data)
        for i, width in enumerate((128, 64)):
            x = mx.sym.FullyConnected(x, num_hidden=width, name=f"fc{i + 1}")
            x = mx.sym.Activation(x, act_type="relu", name=f"relu{i + 1}")
        x = mx.sym.FullyConnected(x, num_hidden=10, name="fc3")
    else:
        x = data
        for i, filters in enumerate((20, 50)):
            x = mx.sym.Convolution(x, kernel=(5, 5), num_filter=filters, name=f"conv{i + 1}")
            x = mx.sym.Activation(x, act_type="tanh", name=f"tanh{i + 1}")
            x = mx.sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2),
                               name=f"pool{i + 1}")
        x = mx.sym.flatten(x)
        x = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=500, name="fc1"),
                              act_type="tanh", name="tanh3")
        x = mx.sym.FullyConnected(x, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def worker(model, data_file, epochs):
    import numpy as np
    import mxnet as mx
    d = np.load(data_file)
    mx.random.seed(0)
    np.random.seed(0)
    train = mx.io.NDArrayIter(d["train_x"], d["train_y"], BATCH, shuffle=True)
    test = mx.io.NDArrayIter(d["test_x"], d["test_y"], BATCH)
    mod = mx.mod.Module(build(mx, model), context=mx.cpu())
    t0 = time.perf_counter()
    mod.fit(train, num_epoch=epochs, optimizer="sgd", initializer=mx.init.Xavier(),
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9}, eval_metric="acc")
    mx.nd.waitall()
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    acc = dict(mod.score(test, "acc"))["accuracy"]
    score_s = time.perf_counter() - t0
    n_train = len(d["train_y"]) // BATCH * BATCH * epochs
    n_test = len(d["test_y"])
    return {f"{model} fit samples/s": n_train / fit_s,
            f"{model} score samples/s": n_test / score_s,
            f"{model} test accuracy": acc}


def worker_torch(model, data_file, epochs):
    """The same networks, initialisation (Xavier uniform, zero bias), optimiser, batch
    size, shuffling and per-batch accuracy metric in PyTorch (eager)."""
    import numpy as np
    import torch
    import torch.nn as tnn
    import torch.nn.functional as F
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    torch.manual_seed(0)
    d = np.load(data_file)
    if model == "mlp":
        net = tnn.Sequential(tnn.Flatten(), tnn.Linear(784, 128), tnn.ReLU(),
                             tnn.Linear(128, 64), tnn.ReLU(), tnn.Linear(64, 10))
    else:
        net = tnn.Sequential(tnn.Conv2d(1, 20, 5), tnn.Tanh(), tnn.MaxPool2d(2, 2),
                             tnn.Conv2d(20, 50, 5), tnn.Tanh(), tnn.MaxPool2d(2, 2),
                             tnn.Flatten(), tnn.Linear(800, 500), tnn.Tanh(),
                             tnn.Linear(500, 10))
    for m in net.modules():
        if isinstance(m, (tnn.Linear, tnn.Conv2d)):
            tnn.init.xavier_uniform_(m.weight)   # = mx.init.Xavier() (uniform, avg, 3)
            tnn.init.zeros_(m.bias)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    tx, ty = torch.from_numpy(d["train_x"]), torch.from_numpy(d["train_y"]).long()
    n = len(ty) // BATCH * BATCH
    t0 = time.perf_counter()
    for _ in range(epochs):
        perm = torch.randperm(len(ty))
        correct = 0
        net.train()
        for j in range(0, n, BATCH):
            idx = perm[j:j + BATCH]
            x, y = tx[idx], ty[idx]
            opt.zero_grad()
            out = net(x)
            F.cross_entropy(out, y).backward()
            opt.step()
            correct += int((out.argmax(1) == y).sum())    # the "acc" metric per batch
    fit_s = time.perf_counter() - t0
    vx, vy = torch.from_numpy(d["test_x"]), torch.from_numpy(d["test_y"]).long()
    net.eval()
    t0 = time.perf_counter()
    with torch.no_grad():
        right = sum(int((net(vx[j:j + BATCH]).argmax(1) == vy[j:j + BATCH]).sum())
                    for j in range(0, len(vy), BATCH))
    score_s = time.perf_counter() - t0
    return {f"{model} fit samples/s": n * epochs / fit_s,
            f"{model} score samples/s": len(vy) / score_s,
            f"{model} test accuracy": right / len(vy)}


def load_data(n_train, n_test, path):
    sys.path.insert(0, harness.SRC)
    import numpy as np
    from mxnet.test_utils import get_mnist
    m = get_mnist()
    np.savez(path, train_x=m["train_data"][:n_train], train_y=m["train_label"][:n_train],
             test_x=m["test_data"][:n_test], test_y=m["test_label"][:n_test])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--model", default="mlp", choices=MODELS)
    ap.add_argument("--data")
    ap.add_argument("--train", type=int, default=10000)
    ap.add_argument("--test", type=int, default=10000)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--frameworks", default="pymxnet,pymxnet-numpy,mxnet-1.9.1,pytorch")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(harness.HERE, "results", "module_fit.md"))
    args = ap.parse_args()
    if args.worker:
        run = worker_torch if args.worker == "pytorch" else worker
        res = run(args.model, args.data, args.epochs)
        res[f"{args.model} peak RSS MB"] = harness.peak_rss_mb()
        print(json.dumps(res))
        return
    me = os.path.abspath(__file__)
    frameworks = args.frameworks.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "fashion_mnist.npz")
        load_data(args.train, args.test, data)
        runs = harness.run_alternating(
            me, frameworks, lambda fw: [["--model", m, "--data", data, "--epochs",
                                         str(args.epochs)] for m in MODELS],
            repeat=args.repeat, env_of=lambda fw: dict(VARIANTS.get(fw, {})))
    speed = [f"{m} {k} samples/s" for m in MODELS for k in ("fit", "score")]
    accuracy = [f"{m} test accuracy" for m in MODELS]
    rss = [f"{m} peak RSS MB" for m in MODELS]
    loads = ", ".join(f"{fw} {runs[fw].get('load', float('nan')):.1f}" for fw in frameworks)
    text = [f"# Module.fit on Fashion-MNIST (batch {BATCH}, SGD lr 0.1 momentum 0.9, "
            f"{args.epochs} epoch(s) on {args.train} images, tested on {args.test})", "",
            harness.machine_note(), "",
            f"Medians of {args.repeat} runs per framework, alternating; median load average "
            f"at the start of each framework's runs: {loads}. pymxnet-numpy is pymxnet "
            "with oneDNN off (MXNET_MKLDNN_ENABLED=0); PyTorch runs the same networks "
            "eagerly.", "",
            *harness.section(harness.THROUGHPUT, runs, speed, lower_is_better=False,
                             unit="samples/s"),
            *harness.section("Test accuracy after training (same data; RNG streams differ):",
                             runs, accuracy, lower_is_better=False, unit="accuracy"),
            *harness.section(harness.PEAK_RSS, runs, rss, unit="MB")]
    harness.write_report(args.out, text, runs)


if __name__ == "__main__":
    main()

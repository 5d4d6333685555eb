"""Sparse training, pymxnet against the real MXNet 1.9.1 (2 threads each, one run):

* **Sparse linear classification** (logistic regression) on LibSVM-format synthetic
  data: 1,000,000 features at 0.01 % density (100 nonzeros a row), read with
  ``LibSVMIter`` as csr batches; forward ``dot(csr, w)``, the weight gradient
  ``dot(csr.T, g)`` is row_sparse and ``sgd_update`` updates only its rows (lazy).
  The dense equivalent would need a (batch, 1M) float32 array per batch (2 GB at
  batch 512) and is not run.
* **Matrix factorisation** recommender: user and item ``gluon.nn.Embedding`` layers
  (row_sparse gradients, ``sparse_grad=True``), dot-product rating, L2 loss, Trainer
  with SGD; and the same model with dense gradients (``sparse_grad=False``).

Each case runs in its own process per framework, so the peak resident memory is the
case's own; the frameworks alternate, ``--repeat`` times (medians reported). Samples per second: higher is better.

    python benchmarks/sparse_train.py [--quick]
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

FEATURES, NNZ_PER_ROW = 1_000_000, 100          # 0.01 % density
CASES = {
    "linear": "sparse linear classification (LibSVM, 1M features, 0.01%)",
    "mf-sparse": "matrix factorisation, row_sparse embedding gradients",
    "mf-dense": "matrix factorisation, dense embedding gradients",
}


def write_libsvm(path, rows, seed=0):
    """A LibSVM file (zero-based, sorted indices) with a learnable label."""
    import numpy as np
    rng = np.random.RandomState(seed)
    truth = rng.standard_normal(FEATURES).astype(np.float32)
    with open(path, "w") as f:
        for _ in range(rows):
            cols = np.unique(rng.randint(0, FEATURES, NNZ_PER_ROW))   # sorted
            vals = rng.uniform(0, 1, len(cols)).astype(np.float32)
            label = int(vals @ truth[cols] > 0)
            f.write(f"{label} " + " ".join(f"{c}:{v:.4f}" for c, v in zip(cols, vals))
                    + "\n")


def linear(path, batch, epochs):
    import mxnet as mx
    from mxnet import nd
    it = mx.io.LibSVMIter(data_libsvm=path, data_shape=(FEATURES,), batch_size=batch)
    w = nd.zeros((FEATURES, 1))
    loss = 0.0

    def epoch():
        nonlocal loss
        it.reset()
        n = 0
        for b in it:
            x, y = b.data[0], b.label[0].reshape((-1, 1))
            p = nd.sigmoid(nd.sparse.dot(x, w))
            gw = nd.sparse.dot(x, p - y, transpose_a=True)      # row_sparse
            nd.sparse.sgd_update(w, gw, lr=0.5, rescale_grad=1.0 / batch, out=w)
            n += batch
        loss = float(nd.mean(-(y * nd.log(p + 1e-7) + (1 - y) * nd.log(1 - p + 1e-7)))
                     .asscalar())
        return n
    epoch()                                                    # warm-up
    t0 = time.perf_counter()
    n = sum(epoch() for _ in range(epochs))
    nd.waitall()
    return n / (time.perf_counter() - t0), loss


def matrix_factorisation(sparse, batch, steps, users=200_000, items=100_000, dim=32):
    import numpy as np
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    rng = np.random.RandomState(1)
    u_ids = rng.randint(0, users, (steps, batch)).astype(np.float32)
    i_ids = rng.randint(0, items, (steps, batch)).astype(np.float32)
    ratings = rng.uniform(1, 5, (steps, batch)).astype(np.float32)

    class MF(gluon.Block):
        def __init__(self):
            super().__init__()
            self.user = gluon.nn.Embedding(users, dim, sparse_grad=sparse)
            self.item = gluon.nn.Embedding(items, dim, sparse_grad=sparse)

        def forward(self, u, i):
            return (self.user(u) * self.item(i)).sum(axis=1)

    net = MF()
    net.initialize(mx.init.Normal(0.1))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05},
                            kvstore=None)
    l2 = gluon.loss.L2Loss()
    loss = 0.0

    def step(k):
        nonlocal loss
        u, i, r = nd.array(u_ids[k]), nd.array(i_ids[k]), nd.array(ratings[k])
        with autograd.record():
            out = l2(net(u, i), r)
        out.backward()
        trainer.step(batch)
        return out
    step(0).wait_to_read()                                     # warm-up
    t0 = time.perf_counter()
    for k in range(1, steps):
        out = step(k)
    loss = float(out.mean().asscalar())
    nd.waitall()
    return (steps - 1) * batch / (time.perf_counter() - t0), loss


def worker(case, path, quick):
    import mxnet as mx
    if case == "linear":
        sps, loss = linear(path, 512, 1 if quick else 2)
    else:
        sps, loss = matrix_factorisation(case == "mf-sparse", 1024, 6 if quick else 30)
    return {CASES[case]: sps, CASES[case] + " peak RSS": harness.peak_rss_mb(),
            CASES[case] + " final loss": loss, "version": mx.__version__}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--case")
    ap.add_argument("--data")
    ap.add_argument("--quick", action="store_true", help="smaller runs (a smoke test)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per case and framework, alternating; medians reported")
    ap.add_argument("--out", default=os.path.join(harness.HERE, "results",
                                                  "sparse_train.md"))
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.case, args.data, args.quick)))
        return
    me = os.path.abspath(__file__)
    rows = 2048 if args.quick else 10240
    results = {"pymxnet": {}, "mxnet-1.9.1": {}}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.libsvm")
        write_libsvm(path, rows)
        for case in CASES:
            extra = ["--case", case, "--data", path] + (["--quick"] if args.quick else [])
            # alternating runs, medians: the machine's load changes under us
            res = harness.run_alternating(me, list(results), lambda fw: [extra],
                                          repeat=args.repeat)
            for fw in results:
                results[fw].update({k: v for k, v in res[fw].items() if k != "load"})
    speed = list(CASES.values())
    mem = [c + " peak RSS" for c in speed]
    loss = [c + " final loss" for c in speed]
    text = ["# Sparse training: samples/s and peak memory", "", harness.machine_note(), "",
            f"LibSVM file: {rows} rows x {FEATURES} features, {NNZ_PER_ROW} nonzeros a "
            "row; batch 512 (linear), 1024 (matrix factorisation: 200k users, 100k "
            f"items, 32 factors). Each figure: the median of {args.repeat} runs per "
            "framework, the frameworks alternating.", ""]
    text += harness.section("Samples per second (higher is better; ratio > 1: pymxnet "
                            "faster):", results, speed, lower_is_better=False, unit="samples/s")
    text += harness.section(harness.PEAK_RSS, results, mem, unit="MB")
    text += harness.section("Final training loss (a sanity check: both should learn "
                            "alike):", results, loss, unit="loss")
    harness.write_report(args.out, text, results)


if __name__ == "__main__":
    main()

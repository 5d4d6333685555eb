"""Forward+backward time of the hot NN operators — Convolution (batch 64, 32->64
channels, 14x14, 3x3, pad 1), FullyConnected (64x3136 -> 128), max Pooling 2x2 and
BatchNorm on (64, 64, 14, 14), the FCN upsampler of the d2l book (Deconvolution
21 -> 21 channels, 64x64 kernel, stride 32, pad 16, on (8, 21, 10, 15)) and a
transformer's LayerNorm (4096 tokens x 512 features, over the last axis) — for pymxnet,
the real MXNet 1.9.1 (oneDNN) and PyTorch CPU, 2 threads each, plus pymxnet with oneDNN
off (its NumPy kernels). Each worker reports the best of 5 timings of 20 calls; the
table gives the median of ``--repeat`` alternating runs per framework (this machine's
timings drift by 20% between runs, for every framework alike). Milliseconds per
forward+backward, lower is better. ``--baseline-src`` (another checkout's src/, e.g. a
git worktree of an earlier commit) adds that tree as two more columns, with and without
oneDNN.

    python benchmarks/nn_ops.py [--repeat 3] [--baseline-src DIR --baseline-name NAME]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CASES = ["Convolution 64x32x14x14 -> 64, 3x3", "FullyConnected 64x3136 -> 128",
         "Pooling max 2x2 on 64x64x14x14", "BatchNorm 64x64x14x14 (train)",
         "Deconvolution 8x21x10x15 -> 21, 64x64 stride 32 (FCN)",
         "LayerNorm 4096x512 (last axis)"]
FCN = dict(kernel=(64, 64), stride=(32, 32), pad=(16, 16))


VARIANTS = dict([harness.NUMPY_VARIANT])


def _time(fn, n=20, repeat=5):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e3


def worker_mxnet():
    import numpy as np
    import mxnet as mx
    from mxnet import autograd, nd
    rng = np.random.RandomState(0)

    def arr(*shape):
        a = nd.array(rng.standard_normal(shape).astype(np.float32))
        a.attach_grad()
        return a

    def fwd_bwd(f, *xs):
        def run():
            with autograd.record():
                y = f(*xs)
            y.backward()
            for x in xs:
                x.grad.wait_to_read()
        return run
    x, w, b = arr(64, 32, 14, 14), arr(64, 32, 3, 3), arr(64)
    conv = fwd_bwd(lambda x, w, b: nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1),
                                                   num_filter=64), x, w, b)
    d, fw, fb = arr(64, 3136), arr(128, 3136), arr(128)
    fc = fwd_bwd(lambda d, w, b: nd.FullyConnected(d, w, b, num_hidden=128), d, fw, fb)
    p = arr(64, 64, 14, 14)
    pool = fwd_bwd(lambda p: nd.Pooling(p, kernel=(2, 2), stride=(2, 2), pool_type="max"), p)
    g, be = arr(64), arr(64)
    mm, mv = nd.zeros(64), nd.ones(64)
    bn = fwd_bwd(lambda p, g, be: nd.BatchNorm(p, g, be, mm, mv, fix_gamma=False), p, g, be)
    u, uw = arr(8, 21, 10, 15), arr(21, 21, 64, 64)
    up = fwd_bwd(lambda u, uw: nd.Deconvolution(u, uw, num_filter=21, no_bias=True, **FCN),
                 u, uw)
    t, lg, lb = arr(4096, 512), arr(512), arr(512)
    ln = fwd_bwd(lambda t, lg, lb: nd.LayerNorm(t, lg, lb, axis=-1), t, lg, lb)
    return {CASES[0]: _time(conv), CASES[1]: _time(fc), CASES[2]: _time(pool),
            CASES[3]: _time(bn), CASES[4]: _time(up, n=3), CASES[5]: _time(ln)}


def worker_torch():
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(2)
    torch.manual_seed(0)

    def arr(*shape):
        return torch.randn(*shape, requires_grad=True)

    def fwd_bwd(f, *xs):
        def run():
            y = f(*xs)
            y.backward(torch.ones_like(y))
        return run
    x, w, b = arr(64, 32, 14, 14), arr(64, 32, 3, 3), arr(64)
    d, fw, fb = arr(64, 3136), arr(128, 3136), arr(128)
    p = arr(64, 64, 14, 14)
    g, be = arr(64), arr(64)
    mm, mv = torch.zeros(64), torch.ones(64)
    u, uw = arr(8, 21, 10, 15), arr(21, 21, 64, 64)
    t, lg, lb = arr(4096, 512), arr(512), arr(512)
    return {
        CASES[0]: _time(fwd_bwd(lambda x, w, b: F.conv2d(x, w, b, padding=1), x, w, b)),
        CASES[1]: _time(fwd_bwd(lambda d, w, b: F.linear(d, w, b), d, fw, fb)),
        CASES[2]: _time(fwd_bwd(lambda p: F.max_pool2d(p, 2, 2), p)),
        CASES[3]: _time(fwd_bwd(lambda p, g, be: F.batch_norm(p, mm, mv, g, be, True), p, g,
                                be)),
        CASES[4]: _time(fwd_bwd(lambda u, uw: F.conv_transpose2d(u, uw, stride=32, padding=16),
                                u, uw), n=3),
        CASES[5]: _time(fwd_bwd(lambda t, lg, lb: F.layer_norm(t, (512,), lg, lb), t, lg,
                                lb)),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--frameworks", default="pymxnet,pymxnet-numpy,mxnet-1.9.1,pytorch")
    ap.add_argument("--out", default=os.path.join(harness.HERE, "results", "nn_ops.md"))
    ap.add_argument("--baseline-src", help="another checkout's src/ to time as columns")
    ap.add_argument("--baseline-name", default="pymxnet-baseline")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker_torch() if args.worker == "pytorch" else worker_mxnet()))
        return
    me = os.path.abspath(__file__)
    frameworks = args.frameworks.split(",")
    variants = dict(VARIANTS)
    if args.baseline_src:
        src = {"PYTHONPATH": os.path.abspath(args.baseline_src)}
        name = args.baseline_name
        frameworks[2:2] = [name, name + "-numpy"]
        variants[name] = src
        variants[name + "-numpy"] = dict(VARIANTS["pymxnet-numpy"], **src)
    runs = harness.run_alternating(me, frameworks, lambda fw: [[]], repeat=args.repeat,
                                   env_of=lambda fw: dict(variants.get(fw, {})))
    loads = ", ".join(f"{fw} {runs[fw].get('load', float('nan')):.1f}" for fw in frameworks)
    text = ["# NN operators, forward+backward (ms, lower is better)", "",
            harness.machine_note(), "",
            f"Medians of {args.repeat} runs per framework, alternating (each run: the best of "
            f"5 timings of 20 calls); median load average at the start of each framework's "
            f"runs: {loads}. pymxnet-numpy is pymxnet with oneDNN off "
            "(MXNET_MKLDNN_ENABLED=0).", "", harness.table(runs, CASES, unit="ms"), ""]
    harness.write_report(args.out, text, runs)


if __name__ == "__main__":
    main()

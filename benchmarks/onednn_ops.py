"""oneDNN vs NumPy kernels for the hot NN operators, forward+backward, beside MXNet 1.9.1.

Same cases as nn_ops.py. The two pymxnet columns call the operator contract directly
(``forward`` then ``backward`` on preallocated NumPy arrays): 'pymxnet-numpy' runs the
operators' NumPy bodies, 'pymxnet-onednn' the oneDNN adapters of
``mxnet.backend.onednn.register`` (what the kernel table dispatches to once wired),
so the columns compare kernels, without the imperative front end's overhead. MXNet
1.9.1 (its MKLDNN build) runs the same cases through ``nd`` + autograd as in nn_ops.py.
2 threads everywhere (OMP_NUM_THREADS=2, ``--threads`` to change). Milliseconds per
forward+backward, the fastest of 40 calls, median over 3 alternating runs.

    python benchmarks/onednn_ops.py
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import nn_ops  # noqa: E402
from nn_ops import CASES, worker_mxnet  # noqa: E402


def _time(fn, n=40):
    """The fastest of n single forward+backward runs, in ms: on a shared machine the
    minimum filters out the runs another process preempted (the same statistic for
    every framework: MXNet's worker uses it too)."""
    import time
    fn()
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


nn_ops._time = _time


def _cases():
    """(name, op name, params, inputs, aux, is_train) per case."""
    import numpy as np
    from mxnet.operator.registry import get_op
    rng = np.random.RandomState(0)

    def arr(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def p(name, **kw):
        return get_op(name).parse(kw)
    return [
        (CASES[0], "Convolution", p("Convolution", kernel=(3, 3), pad=(1, 1), num_filter=64),
         [arr(64, 32, 14, 14), arr(64, 32, 3, 3), arr(64)], [], False),
        (CASES[1], "FullyConnected", p("FullyConnected", num_hidden=128),
         [arr(64, 3136), arr(128, 3136), arr(128)], [], False),
        (CASES[2], "Pooling", p("Pooling", kernel=(2, 2), stride=(2, 2), pool_type="max"),
         [arr(64, 64, 14, 14)], [], False),
        (CASES[3], "BatchNorm", p("BatchNorm", fix_gamma=False),
         [arr(64, 64, 14, 14), arr(64), arr(64)],
         [np.zeros(64, np.float32), np.ones(64, np.float32)], True),
    ]


def worker_pymxnet(use_onednn):
    import numpy as np
    import mxnet as mx
    from mxnet.operator.registry import OpContext, get_op
    from mxnet.backend import onednn
    if use_onednn and not onednn.available():
        return {"error": "oneDNN unavailable: " + str(onednn.load_error())}
    from mxnet.backend.onednn.register import OPS
    res = {}
    for case, name, prm, inputs, aux, train in _cases():
        op = get_op(name)
        n = len(inputs)
        fctx = OpContext(np, mx.cpu(), is_train=train)
        bctx = OpContext(np, mx.cpu(), is_train=True, need_grad=[True] * n,
                         in_shapes=[a.shape for a in inputs])
        if use_onednn:
            fwd, bwd = OPS[name]
        else:
            def fwd(ctx, p, i, a, out=None, op=op):
                return op.forward(ctx, p, i, a)

            def bwd(ctx, p, og, i, o, a, in_grad=None, op=op):
                return op.backward(ctx, p, og, i, o, a)
        outs = fwd(fctx, prm, inputs, aux)
        assert outs is not NotImplemented, case
        dy = [np.ones_like(outs[0])] + [None] * (len(outs) - 1)

        def run(fwd=fwd, bwd=bwd, prm=prm, inputs=inputs, aux=aux, fctx=fctx, bctx=bctx,
                dy=dy):
            o = fwd(fctx, prm, inputs, aux)
            g = bwd(bctx, prm, dy, inputs, o, aux)
            assert g is not NotImplemented
        res[case] = _time(run)
    if use_onednn:
        res["oneDNN"] = onednn.version()
    return res


def _median(results):
    """Per-case median over runs (a run's error is kept when every run failed)."""
    ok = [r for r in results if "error" not in r]
    if not ok:
        return results[-1]
    out = dict(ok[-1])
    for case in CASES:
        vals = sorted(r[case] for r in ok if isinstance(r.get(case), (int, float)))
        if vals:
            out[case] = vals[len(vals) // 2]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--out", default=os.path.join(harness.HERE, "results", "onednn_ops.md"))
    ap.add_argument("--threads", type=int, default=2, help="OMP_NUM_THREADS of every run")
    ap.add_argument("--runs", type=int, default=3,
                    help="alternating runs per framework; the table has their medians")
    args = ap.parse_args()
    if args.worker:
        if args.worker == "mxnet-1.9.1":
            print(json.dumps(worker_mxnet()))
        else:
            print(json.dumps(worker_pymxnet(args.worker == "pymxnet-onednn")))
        return
    me = os.path.abspath(__file__)
    note = harness.machine_note()
    fws = ("pymxnet-onednn", "pymxnet-numpy", "mxnet-1.9.1")
    samples = {fw: [] for fw in fws}
    for _ in range(args.runs):            # alternate, so load changes hit every column
        for fw in fws:
            samples[fw].append(harness.run_worker(me, fw, threads=args.threads))
    runs = {fw: _median(results) for fw, results in samples.items()}
    load_end = os.getloadavg()[0]
    text = ["# oneDNN vs NumPy kernels, forward+backward (ms, lower is better)", "",
            note + f"; load average {load_end:.2f} at the end; OMP_NUM_THREADS="
            f"{args.threads}; median of {args.runs} alternating runs", "",
            harness.table(runs, CASES, unit="ms"), ""]
    harness.write_report(args.out, text, runs)


if __name__ == "__main__":
    main()

"""Host time of the cuDNN adapters per call, without a GPU (µs per call).

The adapters (operator/kernels_cudnn.py) decide layouts, destinations and overlaps,
build or look up descriptors and launch cuDNN or pymxnet's own kernels; without CUDA
graphs a ResNet-50 step makes ~270 such calls, so their Python is part of the
host-bound no-graph step. Here the compute is stubbed out (cuDNN's calls and the
channels-last BatchNorm kernels do nothing), the arrays are the tests' stand-in CuPy
arrays over NumPy (tests/cudnn_stand_in.py) and the real libcudnn makes the
descriptors, so what is timed is the adapters' own work on the host: a direction for
the GPU, not a GPU figure (CuPy's own calls cost more than NumPy's stand-ins).

Shapes: a ResNet-50 stage-3 layer (batch 8, 64 channels, 14x14, 3x3 convolution,
channels-last as the GPU executor holds them). Needs libcudnn (MXNET_CUDNN_LIBRARY).

    python benchmarks/gpu/adapter_host_time.py [--baseline-src OLD/src --baseline-name NAME]
        [--out benchmarks/results/adapter_host_time.md]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def _timed(call, n):
    """µs per call of ``call()``: the best of 5 timings of ``n`` calls (harness)."""
    import harness

    def loop(k):
        for _ in range(k):
            call()
    loop(200)
    return harness.best_us(loop, n)


def measure(n=3000):
    import numpy as np
    import pytest
    from mxnet.backend import bn_channels_last as NHWC
    from mxnet.backend.cudnn import kernels as K
    from mxnet.operator import kernels_cudnn as KC
    from mxnet.operator.registry import OpContext, get_op
    from cudnn_stand_in import LIB, WHY, install_runtime, wrap
    if LIB is None:
        raise SystemExit(f"libcudnn not loadable: {WHY}")
    mp = pytest.MonkeyPatch()
    install_runtime(mp)
    for name in ("conv_forward", "conv_backward_data", "conv_backward_filter",
                 "conv_backward_bias", "add_bias"):
        mp.setattr(K, name, lambda *a, **k: None)
    mp.setattr(NHWC, "raw_kernel", lambda cp, key, make: (lambda *a, **k: None))

    n_, c, h = 8, 64, 14

    def cl(shape):          # channels-last bytes of a logical NCHW array
        b, ch, hh, ww = shape
        return wrap(np.zeros((b, hh, ww, ch), np.float32)).reshape(b, ch, hh, ww)

    def fctx(fin, fout):
        ctx = OpContext(np, None, is_train=True)
        ctx.layout = (tuple(fin), tuple(fout))
        return ctx

    def bctx(og, ins, outd, tg, need, shapes):
        ctx = OpContext(np, None, is_train=True, need_grad=need, in_shapes=shapes,
                        req=["write"] * len(need))
        ctx.layout = (tuple(og), tuple(ins), tuple(outd), tuple(tg))
        return ctx

    x, y, dx = cl((n_, c, h, h)), cl((n_, c, h, h)), cl((n_, c, h, h))
    w, dw = (wrap(np.zeros((c, c, 3, 3), np.float32)) for _ in range(2))
    conv = get_op("Convolution").parse(dict(kernel=(3, 3), pad=(1, 1), num_filter=c,
                                            no_bias=True))
    bn = get_op("BatchNorm").parse(dict(fix_gamma=False, momentum=0.9, eps=1e-5))
    vec = [wrap(np.ones(c, np.float32)) for _ in range(7)]
    gamma, beta, mean, invstd, dg, db = vec[:6]
    aux = [wrap(np.zeros(c, np.float32)), wrap(np.ones(c, np.float32))]
    cb = bctx([True], [True, False], [True], [True, False], [True, True],
              [x.shape, w.shape])
    bb = bctx([True, False, False], [True, False, False], [True, False, False],
              [True, False, False], [True] * 3, [x.shape, (c,), (c,)])
    calls = {
        "Convolution forward": lambda: KC.conv_forward(fctx([True, False], [True]), conv,
                                                       [x, w], [], out=[y]),
        "Convolution backward": lambda: KC.conv_backward(cb, conv, [y], [x, w], [None], [],
                                                         in_grad=[dx, dw]),
        "BatchNorm forward": lambda: KC.bn_forward(
            fctx([True, False, False], [True, False, False]), bn, [x, gamma, beta], aux,
            out=[y, mean, invstd]),
        "BatchNorm backward": lambda: KC.bn_backward(
            bb, bn, [y, None, None], [x, gamma, beta], [y, mean, invstd], aux,
            in_grad=[dx, dg, db]),
    }
    try:
        return {name: _timed(fn, n) for name, fn in calls.items()}
    finally:
        mp.undo()


def main():
    import harness
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.tree_arguments(ap, "adapter_host_time.md")
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--worker", action="store_true")
    args = ap.parse_args()
    if args.worker:
        import json
        print(json.dumps(measure(args.calls)))
        return 0

    def run(src):
        return {(name,): us for name, us in
                harness.source_tree_worker(__file__, ["--calls", args.calls], src).items()}
    best = harness.tree_comparison(harness.trees_of(args), [run], args.repeat)
    harness.write_text(args.out, [
        "# Host time of the cuDNN adapters per call, compute stubbed out (µs, lower "
        "is better)", "", harness.machine_note(), "",
        "Stand-in arrays over NumPy, the real libcudnn for descriptors, cuDNN's and "
        "the BatchNorm kernels' compute stubbed out (benchmarks/gpu/"
        "adapter_host_time.py): the adapters' own Python, a direction for the GPU "
        "(CuPy's own calls cost more than the stand-ins'). ResNet-50 stage-3 shapes, "
        "channels-last. 1 thread; each figure the best of %d runs (alternating) of "
        "the best of 5 timings of %d calls." % (args.repeat, args.calls), ""] +
        harness.tree_table(["call"], best))
    return 0


if __name__ == "__main__":
    sys.exit(main())

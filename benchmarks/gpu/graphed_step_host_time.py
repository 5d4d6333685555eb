"""Host time of a training step whose hybridized block runs as CUDA graphs, without a GPU
(µs per step).

With ``MXNET_ENABLE_CUDA_GRAPHS=1`` a hybridized block's forward and backward are one
graph launch each, so what the host does per step is the rest: the loss and its
backward (imperative), AMP's loss scaling and finite check, the trainer's update, and
the graph runner's own bookkeeping. Session 17 measured seed 003's CNN this way at
0.67x PyTorch on an H200 with the GPU idle most of the step (host-bound). Here the
graphs' replays do nothing (the executor's graph backend is a stand-in whose capture
runs the step once and whose launch returns at once), the arrays are small host arrays,
so what is timed is pymxnet's own Python around the graphs: a direction for the GPU,
where CuPy's calls add their own cost per launch. Two parts differ on a GPU: the
optimizer updates every parameter in one multi-tensor kernel there (here one NumPy
update per parameter), and AMP's finite check is read back a step later there (here
at once).

Models: seed 003's SimpleCNN (batch 1, 1x8x8) and ResNet-50 v1's layer structure with
channels cut 16-fold (batch 2, 3x32x32); SGD with momentum; fp32 and AMP (bfloat16,
``amp.init_trainer``, ``amp.scale_loss``).

    python benchmarks/gpu/graphed_step_host_time.py [--baseline-src OLD/src
        --baseline-name NAME] [--out benchmarks/results/graphed_step_host_time.md]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

CASES = [("seed CNN", "fp32"), ("seed CNN", "amp"), ("ResNet-50 layers, 1/16 channels", "fp32"),
         ("ResNet-50 layers, 1/16 channels", "amp")]


class _NoReplay:
    """The executor's CUDA-graph backend with no device: a capture runs the work once,
    a replay does nothing (and is counted)."""

    def __init__(self):
        self.launches = 0

    @staticmethod
    def ident(arr):
        return arr.__array_interface__["data"][0], arr.strides

    @staticmethod
    def capture(fn, owner):
        fn()
        return object()

    def launch(self, graph):
        self.launches += 1


def measure(model, precision, steps):
    os.environ["MXNET_ENABLE_CUDA_GRAPHS"] = "1"
    import numpy as np
    import mxnet as mx
    from mxnet import gluon, nd
    from mxnet.executor import cuda_graph
    import harness
    backend = cuda_graph._test_backend = _NoReplay()
    amp = None
    if precision == "amp":
        from mxnet.contrib import amp
        amp.init(target_dtype="bfloat16")
    if model == "seed CNN":
        from train_fashion_mnist import SimpleCNN
        net, shape, labels = SimpleCNN(), (1, 1, 8, 8), [3]
    else:
        from mxnet.gluon.model_zoo import vision
        net = vision.ResNetV1(vision.BottleneckV1, [3, 4, 6, 3], [4, 16, 32, 64, 128],
                              classes=10)
        shape, labels = (2, 3, 32, 32), [1, 2]
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.01, "momentum": 0.9})
    if amp is not None:
        amp.init_trainer(trainer)
    data = nd.array(np.random.RandomState(0).rand(*shape))
    label = nd.array(labels)
    step = harness.gluon_train_step(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer,
                                    data, label, shape[0], amp)

    def loop(n):
        for _ in range(n):
            step()
        mx.nd.waitall()
    loop(50)
    before = backend.launches
    loop(10)
    if backend.launches - before != 20:     # a forward and a backward graph per step
        raise SystemExit(f"{model} {precision}: the step did not run as two graphs "
                         f"({backend.launches - before} replays in 10 steps)")
    return harness.best_us(loop, steps)


def main():
    import harness
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.tree_arguments(ap, "graphed_step_host_time.md")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--worker", nargs=2, metavar=("MODEL", "PRECISION"))
    args = ap.parse_args()
    if args.worker:
        import json
        print(json.dumps(measure(args.worker[0], args.worker[1], args.steps)))
        return 0

    def run_of(model, precision):
        steps = max(50, args.steps // (20 if "ResNet" in model else 1))
        return lambda src: {(model, precision): harness.source_tree_worker(
            __file__, [model, precision, "--steps", steps], src)}
    best = harness.tree_comparison(harness.trees_of(args),
                                   [run_of(*case) for case in CASES], args.repeat)
    harness.write_text(args.out, [
        "# Host time of a CUDA-graphed training step, the graphs' replays left out "
        "(µs per step, lower is better)", "", harness.machine_note(), "",
        "benchmarks/gpu/graphed_step_host_time.py: hybridized with static_alloc/"
        "static_shape and MXNET_ENABLE_CUDA_GRAPHS=1, the executor's graph backend a "
        "stand-in whose replay does nothing, small host arrays: pymxnet's own Python "
        "around the graphs (loss, AMP, trainer, graph runner), a direction for the "
        "GPU, where CuPy's launches add their cost (and the update is one multi-tensor "
        "kernel, the AMP check read a step later). 1 thread; each figure the best "
        "of %d runs (alternating) of the best of 5 timings." % args.repeat, ""] +
        harness.tree_table(["model", "precision"], best, "%.0f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

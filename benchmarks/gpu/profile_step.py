"""Where a pymxnet training step spends its time on the GPU.

    python3 benchmarks/gpu/profile_step.py --model resnet50 --mode hybridized --out DIR

Two views of the same steps of ``gpu_train.py``'s workload:
1. host side: cProfile over a few steps (what Python does per step: dispatch,
   bookkeeping, kernel launches), sorted by own time;
2. device side: the CUDA kernels the process launched, timed by CUPTI through
   ``torch.profiler`` (it records every kernel in the process, CuPy's and cuDNN's
   included), grouped by kernel name.
If host time per step exceeds the GPU's busy time, launches are the bottleneck; if not,
the kernel table says which kernels to replace.
"""
import argparse
import cProfile
import io
import os
import pstats
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50", choices=["resnet50", "resnet18", "cnn"])
    ap.add_argument("--mode", default="hybridized", choices=["hybridized", "imperative"])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import numpy as np
    import cupy as cp
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    from gpu_train import MODELS, LR, MOMENTUM, _mx_net

    shape, classes, batch = MODELS[args.model]
    ctx = mx.gpu(0)
    net = _mx_net(args.model, classes)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if args.mode == "hybridized":
        net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": LR, "momentum": MOMENTUM})
    rng = np.random.RandomState(0)
    data = nd.array(rng.rand(batch, *shape).astype(np.float32), ctx=ctx)
    label = nd.array(rng.randint(0, classes, batch).astype(np.float32), ctx=ctx)

    def step():
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(batch)

    sync = cp.cuda.Device(0).synchronize
    for _ in range(3):
        step()
    mx.nd.waitall()
    sync()

    report = io.StringIO()
    # host view
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    for _ in range(args.steps):
        step()
    mx.nd.waitall()
    prof.disable()
    sync()
    wall = (time.perf_counter() - t0) / args.steps
    st = pstats.Stats(prof, stream=report)
    print(f"== {args.model} {args.mode} batch {batch}: {wall * 1e3:.1f} ms/step "
          f"({batch / wall:.0f} samples/s) under cProfile", file=report)
    st.sort_stats("tottime").print_stats(35)
    st.sort_stats("cumulative").print_stats(25)

    # device view
    try:
        import torch
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as tp:
            for _ in range(args.steps):
                step()
            mx.nd.waitall()
            sync()
            torch.cuda.synchronize()
        events = tp.key_averages()
        total_gpu = sum(getattr(e, "self_device_time_total", 0) or 0 for e in events)
        print(f"\n== CUDA kernels over {args.steps} steps: GPU busy "
              f"{total_gpu / 1e3 / args.steps:.1f} ms/step", file=report)
        print(events.table(sort_by="self_cuda_time_total", row_limit=45,
                           max_name_column_width=90), file=report)
    except Exception as exc:  # noqa: BLE001  (the host view still stands)
        print(f"\n== device view unavailable: {type(exc).__name__}: {exc}", file=report)

    text = report.getvalue()
    with open(os.path.join(args.out, f"profile_{args.model}_{args.mode}.txt"), "w") as f:
        f.write(text)
    print(text[:6000])


if __name__ == "__main__":
    main()

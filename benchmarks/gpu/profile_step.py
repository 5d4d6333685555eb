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
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50", choices=["resnet50", "resnet18", "cnn"])
    ap.add_argument("--mode", default="hybridized", choices=["hybridized", "imperative"])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "amp"],
                    help="amp: mx.contrib.amp in bfloat16 (as gpu_train.py's AMP rows)")
    ap.add_argument("--out", default=".")
    ap.add_argument("--attribute", action="store_true",
                    help="also attribute every kernel to the pymxnet source lines that "
                         "launched it (Python tracer; run with CUDA graphs off)")
    ap.add_argument("--framework", default="pymxnet", choices=["pymxnet", "pytorch"],
                    help="pytorch: the same model and step in PyTorch eager, for a "
                         "side-by-side kernel table")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.framework == "pytorch":
        return profile_torch(args)

    import numpy as np
    import cupy as cp
    import mxnet as mx
    from mxnet import gluon, nd
    import harness
    from gpu_train import MODELS, LR, MOMENTUM, _mx_net

    shape, classes, batch = MODELS[args.model]
    ctx = mx.gpu(0)
    amp = None
    if args.precision == "amp":
        from mxnet.contrib import amp
        amp.init(target_dtype="bfloat16")
    net = _mx_net(args.model, classes)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if args.mode == "hybridized":
        net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": LR, "momentum": MOMENTUM})
    if amp is not None:
        amp.init_trainer(trainer)
    rng = np.random.RandomState(0)
    data = nd.array(rng.rand(batch, *shape).astype(np.float32), ctx=ctx)
    label = nd.array(rng.randint(0, classes, batch).astype(np.float32), ctx=ctx)

    step = harness.gluon_train_step(net, loss_fn, trainer, data, label, batch, amp)

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

    def finish():
        mx.nd.waitall()
        sync()

    if amp is not None:
        widened_ops(step, finish, report)
    engine_pushes(step, finish, report)
    kernel_table(step, finish, args.steps, report)
    if args.attribute:
        attribute_kernels(step, finish, report)
    amp_tag = "_amp" if args.precision == "amp" else ""
    graphs_tag = "" if os.environ.get("MXNET_ENABLE_CUDA_GRAPHS", "0") == "1" or \
        args.mode != "hybridized" else "_nographs"
    # AMP's finite check waiting on the host each step (the default defers it to the
    # device): its own report, an A/B
    sync_tag = "_synccheck" if amp is not None and \
        os.environ.get("MXNET_AMP_ASYNC_OVERFLOW_CHECK", "1") == "0" else ""
    # convolutions through cuDNN graph-API plans (off by default): an A/B
    plan_tag = "_graphapi" if os.environ.get("MXNET_CUDNN_GRAPH_API", "0") == "1" else ""
    write_report(report, args, f"profile_{args.model}_{args.mode}{amp_tag}{graphs_tag}"
                               f"{sync_tag}{plan_tag}.txt")


def widened_ops(step, finish, report):
    """The operator calls of one step that took bfloat16 arrays through float32
    (operator/bfloat16.py's run_widened): what is left for bfloat16 kernels."""
    from collections import Counter
    from mxnet.operator import bfloat16 as bf16
    seen = Counter()
    original = bf16.run_widened

    def counting(compute, op, body, octx, is_backward, *rest, **kw):
        seen[(op.name, "backward" if is_backward else "forward")] += 1
        return original(compute, op, body, octx, is_backward, *rest, **kw)

    bf16.run_widened = counting
    try:
        step()
        finish()
    finally:
        bf16.run_widened = original
    print(f"== bfloat16 calls computed in float32, one step: {sum(seen.values())}",
          file=report)
    for (name, direction), n in seen.most_common():
        print(f"   {n:5d}  {name} {direction}", file=report)


def engine_pushes(step, finish, report):
    """The work of one step handed to an engine worker instead of running in the
    calling thread (dispatch runs GPU work inline when its inputs are idle): its
    names, and what each waited on; a read that then waits for a worker is a thread
    hand-off and a GIL round trip on the step's critical path."""
    from collections import Counter
    from mxnet import engine
    eng = engine.get()
    pushed, waits = Counter(), Counter()
    push, wait = eng.push_sync, eng.wait_for_var

    def counting_push(fn, ctx, const, mutate, *rest, **kw):
        name = rest[1] if len(rest) > 1 else kw.get("name", "?")
        busy = sum(1 for v in list(const) + list(mutate) if v.num_pending)
        pushed[(str(name), busy)] += 1
        return push(fn, ctx, const, mutate, *rest, **kw)

    def counting_wait(var):
        if var.num_pending:
            waits[traceback.extract_stack(limit=4)[0].name] += 1
        return wait(var)

    eng.push_sync, eng.wait_for_var = counting_push, counting_wait
    try:
        step()
        finish()
    finally:
        del eng.push_sync, eng.wait_for_var
    print(f"== engine pushes in one step: {sum(pushed.values())} "
          f"(name, inputs/outputs with pending work)", file=report)
    for (name, busy), n in pushed.most_common():
        print(f"   {n:5d}  {name}  pending {busy}", file=report)
    print(f"== waits for pending work in one step: {sum(waits.values())}", file=report)
    for frame, n in waits.most_common():
        print(f"   {n:5d}  {frame}", file=report)


def _mx_frames(stack):
    """The pymxnet frames of a Python stack (outermost first), as 'file:line func'."""
    # torch.profiler names a frame by its path from the package root: "mxnet/x.py(N): f"
    return [name for name in stack if name.startswith("mxnet/") or "/mxnet/" in name]


def attribute_kernels(step, finish, report, depth=3):
    """One step under torch.profiler's Python tracer; each GPU kernel / copy / memset is
    charged to the innermost pymxnet frames around the CUDA runtime call that launched
    it (matched by CUPTI's correlation id). Answers 'which operator made this kernel'."""
    import json
    import tempfile
    import torch
    from torch.profiler import profile, ProfilerActivity
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     with_stack=True) as tp:
            step()
            finish()
            torch.cuda.synchronize()
        path = os.path.join(tempfile.mkdtemp(), "trace.json")
        tp.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        if os.environ.get("PROFILE_KEEP_TRACE"):
            import gzip
            import shutil
            with open(path, "rb") as src, gzip.open(os.environ["PROFILE_KEEP_TRACE"],
                                                    "wb") as dst:
                shutil.copyfileobj(src, dst)
    except Exception as exc:  # noqa: BLE001
        print(f"\n== attribution unavailable: {type(exc).__name__}: {exc}", file=report)
        return
    launches, py = {}, {}
    for e in events:
        cat = e.get("cat")
        if cat in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            launches[e["args"]["correlation"]] = e
        elif cat == "python_function":
            py.setdefault(e.get("tid"), []).append(e)
    for lst in py.values():
        lst.sort(key=lambda e: e["ts"])
    totals = {}
    for e in events:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        launch = launches.get(e.get("args", {}).get("correlation"))
        chain = []
        if launch is not None:
            t = launch["ts"]
            # the launching thread's frames (MXNET_ENGINE_TYPE=NaiveEngine keeps every
            # launch on the traced main thread)
            stack = [p for p in py.get(launch.get("tid"), ())
                     if p["ts"] <= t <= p["ts"] + p.get("dur", 0)]
            chain = _mx_frames([p["name"] for p in stack])[-depth:]
        kname = e["name"][:70]
        key = (kname, " < ".join(reversed(chain)) or "?")
        n, us = totals.get(key, (0, 0.0))
        totals[key] = (n + 1, us + e.get("dur", 0))
    busy = sum(us for _, us in totals.values())
    print(f"\n== kernels by launching pymxnet frames, one step: {busy / 1e3:.1f} ms",
          file=report)
    for (kname, where), (n, us) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:70]:
        print(f"{us / 1e3:8.3f} ms {n:5d}x  {kname}\n{'':22s}{where}", file=report)


# kernel families worth a line of their own in the summary: (label, name fragments)
KERNEL_GROUPS = (
    ("cuDNN layout transposes", ("nchwToNhwc", "nhwcToNchw")),
    ("batch norm kernels", ("bn_fw", "bn_bw", "batchnorm", "mxnet_bn_nhwc")),
    ("fused add+relu", ("mxnet_add_relu",)),
    ("copies", ("cupy_copy", "memcpy", "Memcpy")),
)


def kernel_groups(events):
    """(label, launches, device us) per KERNEL_GROUPS family over profiler ``events``
    (torch.profiler's key averages)."""
    out = []
    for label, parts in KERNEL_GROUPS:
        n = us = 0
        for e in events:
            if any(p in e.key for p in parts):
                t = getattr(e, "self_device_time_total", 0) or 0
                if t:
                    n += e.count
                    us += t
        out.append((label, n, us))
    return out


def kernel_table(step, finish, steps, report):
    """Append the CUDA kernels of ``steps`` calls of ``step`` (CUPTI through
    torch.profiler) to ``report``, with the GPU's busy time per step."""
    try:
        import torch
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as tp:
            for _ in range(steps):
                step()
            finish()
            torch.cuda.synchronize()
        events = tp.key_averages()
        total_gpu = sum(getattr(e, "self_device_time_total", 0) or 0 for e in events)
        print(f"\n== CUDA kernels over {steps} steps: GPU busy "
              f"{total_gpu / 1e3 / steps:.1f} ms/step", file=report)
        for label, n, us in kernel_groups(events):
            print(f"== {label}: {n / steps:.0f} launches, {us / 1e3 / steps:.2f} ms/step",
                  file=report)
        print(events.table(sort_by="self_cuda_time_total", row_limit=60,
                           max_name_column_width=110), file=report)
    except Exception as exc:  # noqa: BLE001  (the host view still stands)
        print(f"\n== device view unavailable: {type(exc).__name__}: {exc}", file=report)


def write_report(report, args, name):
    text = report.getvalue()
    with open(os.path.join(args.out, name), "w") as f:
        f.write(text)
    print(text[:6000])


def profile_torch(args):
    """PyTorch eager, gpu_train.py's equivalent model and step (fp32, cuDNN defaults)."""
    import torch
    import torch.nn.functional as F
    from gpu_train import MODELS, LR, MOMENTUM, _torch_net

    shape, classes, batch = MODELS[args.model]
    torch.manual_seed(0)
    dev = torch.device("cuda:0")
    net = _torch_net(args.model, classes).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    data = torch.rand(batch, *shape, device=dev)
    label = torch.randint(0, classes, (batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(net(data), label).backward()
        opt.step()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / args.steps
    report = io.StringIO()
    print(f"== pytorch {args.model} eager batch {batch}: {wall * 1e3:.1f} ms/step "
          f"({batch / wall:.0f} samples/s)", file=report)
    kernel_table(step, torch.cuda.synchronize, args.steps, report)
    write_report(report, args, f"profile_{args.model}_pytorch.txt")


if __name__ == "__main__":
    main()

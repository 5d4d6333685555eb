"""Training throughput on one GPU, pymxnet side by side with PyTorch, in one run.

Same model, batch, dtype and optimiser (SGD, lr 0.01, momentum 0.9) on synthetic data
already on the GPU, so only the training step is measured:

- seed 003's CNN (examples/train_fashion_mnist.SimpleCNN), 1x28x28, batch 256
- ResNet-18 v1 on 3x32x32, 10 classes, batch 128
- ResNet-50 v1 on 3x224x224, 1000 classes, batch 64

pymxnet runs imperative and hybridized (static_alloc), fp32 and AMP (mx.contrib.amp;
reported 'not supported' with the reason when it fails on the GPU); PyTorch runs eager
fp32 and bf16 autocast. fp32 comes in two flavours on both sides: 'fp32' is each
framework's default (PyTorch ships ``torch.backends.cudnn.allow_tf32 = True``, so its
convolutions use TF32 on sm_80+, matmuls stay fp32; pymxnet, like MXNet 1.9.1 with cuDNN
8, runs convolutions in cuDNN's DEFAULT_MATH, TF32 on sm_80+), and 'fp32-strict' turns
TF32 off (PyTorch: both allow_tf32 flags False; pymxnet: NVIDIA_TF32_OVERRIDE=0). Its ResNets are written here to match Gluon's v1 blocks
(stride on the first 1x1 conv of a bottleneck), so both sides train the same network.

Timing: warm-up steps, then N steps, then a real device synchronisation
(``cupy.cuda.Device.synchronize`` after ``mx.nd.waitall``; ``torch.cuda.synchronize``):
samples/s = N * batch / elapsed. The time that ``waitall`` alone reports is kept as
well, to show whether it waited for the device. Memory: PyTorch's
``max_memory_allocated``/``max_memory_reserved``; for pymxnet 'peak used GB' is the true
high-water mark of the CuPy pool's in-use bytes during one extra step after the timed
ones, polled by a thread (see ``_peak_of_one_step``; a lower bound, close to the
truth; not while timing), and 'reserved GB' the pool's ``total_bytes()`` at the end
(the pool never returns blocks, so that is its reserved peak).

``GPU_TRAIN_HOST_DATA=pageable`` (or ``pinned``) makes each pymxnet step copy its batch
from host memory first (ordinary, or ``mx.cpu_pinned``), as a data loader's loop does:
with ``MXNET_GPU_COPY_STREAM=1`` beside it, the copy-stream A/B of
``backend/copy_stream.py``.

Every case runs in its own process (AMP patches operators process-wide; memory peaks
stay separate).

    python benchmarks/gpu_train.py [--quick] [--out DIR] [--models cnn,resnet18,resnet50]
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")

MODELS = {  # name: (input shape without batch, classes, batch)
    "cnn": ((1, 28, 28), 10, 256),
    "resnet18": ((3, 32, 32), 10, 128),
    "resnet50": ((3, 224, 224), 1000, 64),
}
LR, MOMENTUM = 0.01, 0.9


# ----------------------------------------------------------------------- pymxnet
def _mx_net(model, classes):
    from mxnet.gluon.model_zoo import vision
    if model == "cnn":
        sys.path.insert(0, os.path.join(HERE, "..", "examples"))
        from train_fashion_mnist import SimpleCNN   # seed 003's network
        return SimpleCNN()
    return {"resnet18": vision.resnet18_v1, "resnet50": vision.resnet50_v1}[model](
        classes=classes)


def worker_mxnet(model, mode, precision, warmup, iters):
    import numpy as np
    import mxnet as mx
    from mxnet import gluon, nd

    shape, classes, batch = MODELS[model]
    if os.environ.get("GPU_TRAIN_CPU_DRYRUN"):    # shakes out the script without a GPU
        ctx, cp = mx.cpu(), None
    else:
        import cupy as cp
        ctx = mx.gpu(0)
    amp_dtype = None
    if precision == "amp":
        from mxnet.contrib import amp
        # bfloat16, as PyTorch's AMP rows (bf16 autocast); it needs CuPy with bfloat16
        # (CuPy 14 + ml_dtypes), else float16, said in the row
        target = os.environ.get("GPU_TRAIN_AMP_DTYPE", "bfloat16")
        if target == "bfloat16" and cp is not None:
            try:
                cp.zeros(1, "bfloat16")
            except Exception:  # noqa: BLE001
                target = "float16"
        try:
            amp.init(target_dtype=target)
            amp_dtype = target
        except Exception as exc:  # noqa: BLE001  (reported, never faked)
            return {"error": f"not supported: {target}: {type(exc).__name__}: {exc}"}
    net = _mx_net(model, classes)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if mode == "hybridized":
        net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": LR, "momentum": MOMENTUM})
    if amp_dtype is not None:
        amp.init_trainer(trainer)
    rng = np.random.RandomState(0)
    data = nd.array(rng.rand(batch, *shape).astype(np.float32), ctx=ctx)
    label = nd.array(rng.randint(0, classes, batch).astype(np.float32), ctx=ctx)
    pool = cp.get_default_memory_pool() if cp is not None else None
    peak_used = [0]

    import harness            # benchmarks/: the script's own folder
    step = harness.gluon_train_step(net, loss_fn, trainer, data, label, batch,
                                    amp if amp_dtype is not None else None)
    host_data = os.environ.get("GPU_TRAIN_HOST_DATA", "")
    if host_data:
        # every step first copies its batch from host memory, as a data loader's loop
        # does (pageable, or page-locked: mx.cpu_pinned); MXNET_GPU_COPY_STREAM=1 puts
        # that copy on the GPU's copy stream
        host_ctx = mx.cpu_pinned(0) if host_data == "pinned" else mx.cpu()
        source = nd.array(data.asnumpy(), ctx=host_ctx)
        compute_step = step

        def step(*args):
            source.copyto(data)
            return compute_step(*args)

    sync = cp.cuda.Device(0).synchronize if cp is not None else (lambda: None)
    for _ in range(warmup):
        step()
    mx.nd.waitall()
    sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        loss = step()
    mx.nd.waitall()
    t_waitall = time.perf_counter() - t0
    sync()
    elapsed = time.perf_counter() - t0
    final_loss = float(loss.mean().asscalar())
    graph_bytes = 0
    if pool is not None:
        peak_used[0] = _peak_of_one_step(cp, pool, step, sync)
        # CUDA graphs' capture pool (MXNET_ENABLE_CUDA_GRAPHS=1) is outside CuPy's
        # default pool: its blocks stay reserved for the replays, so count them too
        from mxnet.executor.cuda_graph import private_pool_bytes
        graph_bytes = private_pool_bytes()
    return {"samples/s": iters * batch / elapsed,
            "waitall-only samples/s": iters * batch / t_waitall,
            "host data": host_data or None,
            "peak used GB": (peak_used[0] + graph_bytes) / 1e9 if pool else None,
            "pool reserved GB": (pool.total_bytes() + graph_bytes) / 1e9 if pool else None,
            "graph pool GB": graph_bytes / 1e9,
            "amp dtype": amp_dtype, "final loss": final_loss,
            "finite": bool(np.isfinite(final_loss))}


def _peak_of_one_step(cp, pool, step, sync):
    """The CuPy pool's in-use high-water mark (bytes) over one training step, sampled by
    a thread polling ``pool.used_bytes()`` (CuPy's memory hooks are thread-local and the
    engine allocates on its worker threads, so a hook would miss those allocations; the
    pool itself is shared). Polls every ~0.2 ms, limited by the GIL's switch interval
    (5 ms): a lower bound of the true peak, far closer than sampling at step ends."""
    import threading
    import mxnet as mx

    sync()
    peak = [pool.used_bytes()]
    done = threading.Event()

    def poll():
        while not done.is_set():
            peak[0] = max(peak[0], pool.used_bytes())
            time.sleep(0.0002)

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    try:
        step()
        mx.nd.waitall()
        sync()
    finally:
        done.set()
        t.join()
    return max(peak[0], pool.used_bytes())


# ----------------------------------------------------------------------- PyTorch
def _torch_net(model, classes):
    import torch.nn as tnn
    import torch.nn.functional as F

    if model == "cnn":
        import harness            # benchmarks/: the script's own folder
        return harness.torch_simple_cnn()

    def conv_bn(cin, cout, k, stride, bias=False):
        return [tnn.Conv2d(cin, cout, k, stride, k // 2, bias=bias), tnn.BatchNorm2d(cout)]

    class Block(tnn.Module):
        """Gluon's BasicBlockV1 / BottleneckV1 (stride on the first conv). As in MXNet's
        model zoo, the bottleneck's two 1x1 convolutions carry a bias (Gluon's Conv2D
        default) and every other convolution has none."""

        def __init__(self, cin, cout, stride, bottleneck):
            super().__init__()
            if bottleneck:
                mid = cout // 4
                layers = (conv_bn(cin, mid, 1, stride, bias=True) + [tnn.ReLU()] +
                          conv_bn(mid, mid, 3, 1) + [tnn.ReLU()] +
                          conv_bn(mid, cout, 1, 1, bias=True))
            else:
                layers = conv_bn(cin, cout, 3, stride) + [tnn.ReLU()] + conv_bn(cout, cout, 3, 1)
            self.body = tnn.Sequential(*layers)
            self.down = (tnn.Sequential(*conv_bn(cin, cout, 1, stride))
                         if stride != 1 or cin != cout else None)

        def forward(self, x):
            res = x if self.down is None else self.down(x)
            return F.relu(self.body(x) + res)

    bottleneck = model == "resnet50"
    layers = [3, 4, 6, 3] if bottleneck else [2, 2, 2, 2]
    channels = [64, 256, 512, 1024, 2048] if bottleneck else [64, 64, 128, 256, 512]
    mods = conv_bn(3, 64, 7, 2) + [tnn.ReLU(), tnn.MaxPool2d(3, 2, 1)]
    cin = channels[0]
    for i, n in enumerate(layers):
        for j in range(n):
            mods.append(Block(cin, channels[i + 1], 2 if (j == 0 and i > 0) else 1,
                              bottleneck))
            cin = channels[i + 1]
    mods += [tnn.AdaptiveAvgPool2d(1), tnn.Flatten(), tnn.Linear(cin, classes)]
    return tnn.Sequential(*mods)


def worker_torch(model, mode, precision, warmup, iters):
    import torch
    import torch.nn.functional as F

    shape, classes, batch = MODELS[model]
    torch.manual_seed(0)
    if precision == "fp32-strict":     # TF32 off everywhere
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    # else PyTorch's shipped defaults: cuDNN convolutions may use TF32, matmuls not
    dev = torch.device("cuda:0")
    net = _torch_net(model, classes).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    data = torch.rand(batch, *shape, device=dev)
    label = torch.randint(0, classes, (batch,), device=dev)
    amp = precision == "amp"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = F.cross_entropy(net(data), label)
        loss.backward()
        opt.step()
        return loss

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(iters):
        loss = step()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    return {"samples/s": iters * batch / elapsed,
            "peak used GB": torch.cuda.max_memory_allocated() / 1e9,
            "pool reserved GB": torch.cuda.max_memory_reserved() / 1e9,
            "amp dtype": "bfloat16" if amp else None, "final loss": float(loss),
            "finite": bool(torch.isfinite(loss))}


# ----------------------------------------------------------------------- driver
def cases(models, quick):
    for model in models:
        if not quick:
            yield model, "pymxnet", "imperative", "fp32"
        strict = not quick or model == "resnet50"     # --quick: ResNet-50 only
        yield model, "pymxnet", "hybridized", "fp32"
        if strict:
            yield model, "pymxnet", "hybridized", "fp32-strict"
        if not quick:
            yield model, "pymxnet", "imperative", "fp32-strict"
            yield model, "pymxnet", "imperative", "amp"
        # ===== AMP (pymxnet float16/bfloat16) cases: the `gpu` helper's step goes here
        yield model, "pymxnet", "hybridized", "amp"
        # ===== end AMP
        yield model, "pytorch", "eager", "fp32"
        if strict:
            yield model, "pytorch", "eager", "fp32-strict"
        yield model, "pytorch", "eager", "amp"


def run_case(model, fw, mode, precision, warmup, iters, timeout):
    env = dict(os.environ)
    if fw == "pymxnet":
        env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
        if precision == "fp32-strict":
            env["NVIDIA_TF32_OVERRIDE"] = "0"     # cuDNN FMA math, no TF32
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", fw, "--model", model,
           "--mode", mode, "--precision", precision, "--warmup", str(warmup),
           "--iters", str(iters)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout}s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()][-3:]
        return {"error": " / ".join(ln.strip() for ln in tail)[-400:]}
    res = json.loads(lines[-1])
    res["process s"] = round(time.perf_counter() - t0, 1)
    return res


def fmt(v, spec="%.3g"):
    return spec % v if isinstance(v, (int, float)) and not isinstance(v, bool) else \
        ("n/a" if v is None else str(v))


def report(results, args):
    lines = ["# GPU training: pymxnet vs PyTorch", "",
             f"warm-up {args.warmup} steps, {args.iters} timed steps (ResNet-50: "
             f"{args.iters_r50}); SGD lr {LR} momentum {MOMENTUM}; synthetic data on the GPU. "
             "fp32: each framework's default (TF32 convolutions allowed on sm_80+ in both); "
             "fp32-strict: TF32 off (PyTorch allow_tf32 False; pymxnet "
             "NVIDIA_TF32_OVERRIDE=0). pymxnet peak used: pool in-use high-water mark over "
             "one step (polled); reserved: pool total_bytes.", "",
             "| model (batch) | framework | mode | precision | samples/s | "
             "vs PyTorch eager (same fp32 flavour) | peak used GB | reserved GB | loss | note |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        ref = next((x for x in results if x["model"] == r["model"] and
                    x["framework"] == "pytorch" and x["precision"] == r["precision"]
                    .replace("amp", "fp32")), None)
        sps, rsps = r.get("samples/s"), ref and ref.get("samples/s")
        ratio = "%.2fx" % (sps / rsps) if sps and rsps else "n/a"
        note = r.get("error", "")
        if "waitall-only samples/s" in r:
            note = "waitall alone: %s samples/s" % fmt(r["waitall-only samples/s"])
        if r.get("amp dtype"):
            note = (note + "; " if note else "") + r["amp dtype"]
        note = note.replace("|", "/").replace("\n", " ")[-300:]
        lines.append(f"| {r['model']} ({MODELS[r['model']][2]}) | {r['framework']} | "
                     f"{r['mode']} | {r['precision']} | {fmt(sps)} | {ratio} | "
                     f"{fmt(r.get('peak used GB'))} | {fmt(r.get('pool reserved GB'))} | "
                     f"{fmt(r.get('final loss'))} | {note} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", choices=["pymxnet", "pytorch"])
    ap.add_argument("--model", default="cnn", choices=list(MODELS))
    ap.add_argument("--mode", default="imperative")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "fp32-strict", "amp"])
    ap.add_argument("--models", default="cnn,resnet18,resnet50")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--iters-r50", type=int, default=None,
                    help="timed steps for ResNet-50 (default: --iters)")
    ap.add_argument("--quick", action="store_true",
                    help="2 warm-up and 5 timed steps (ResNet-50: 3); hybridized only; "
                    "strict fp32 for ResNet-50 only")
    ap.add_argument("--timeout", type=float, default=300, help="per case, seconds")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "gpu_train"))
    args = ap.parse_args()
    if args.quick:
        args.warmup, args.iters = 2, 5
        args.iters_r50 = args.iters_r50 or 3
    args.iters_r50 = args.iters_r50 or args.iters
    if args.worker:
        fn = worker_mxnet if args.worker == "pymxnet" else worker_torch
        iters = args.iters_r50 if args.model == "resnet50" else args.iters
        print(json.dumps(fn(args.model, args.mode, args.precision, args.warmup, iters)))
        return 0
    os.makedirs(args.out, exist_ok=True)
    results = []
    for model, fw, mode, precision in cases(args.models.split(","), args.quick):
        res = run_case(model, fw, mode, precision, args.warmup, args.iters, args.timeout)
        res.update(model=model, framework=fw, mode=mode, precision=precision)
        print(json.dumps(res), flush=True)
        results.append(res)
        with open(os.path.join(args.out, "gpu_train.json"), "w") as f:
            json.dump(results, f, indent=1)       # kept after every case (timeouts)
        text = report(results, args)
        with open(os.path.join(args.out, "gpu_train.md"), "w") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

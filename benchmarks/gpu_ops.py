"""GPU operators, forward + backward: pymxnet on cuDNN, pymxnet's CuPy bodies (the
kernel table's GPU entries removed) and PyTorch, on one GPU.

Cases (fp32 unless named): Convolution 3x3 256->256 at 56x56, batch 64 (also fp16);
max Pooling 3x3/2 pad 1 on 64x64x112x112; BatchNorm training on 64x256x56x56; softmax
over 1000 classes for 4096 rows; ReLU on 64x256x56x56; LayerNorm over the last axis of
4096x768 (BERT-base's rows: batch 32, length 128), fp32 and fp16; GroupNorm (32 groups)
and InstanceNorm on 32x256x56x56. Each timing: two warm-up
iterations (algorithm search included), then the mean of ``n`` iterations between two
device synchronisations. Both run fp32 convolution twice: with their defaults (TF32
allowed in cuDNN convolutions: PyTorch's allow_tf32, pymxnet's DEFAULT_MATH as in MXNet
1.9.1) and with TF32 off (allow_tf32 False; NVIDIA_TF32_OVERRIDE=0).

    python benchmarks/gpu_ops.py [--quick] [--only SUBSTRING[,SUBSTRING...]] [--out DIR]

Writes gpu_ops.json and gpu_ops.md into DIR (default benchmarks/results) and prints the
table. Milliseconds per fwd+bwd iteration, lower is better.
"""
import argparse
import contextlib
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))


def _cases(quick):
    b = 64
    return [
        ("conv3x3 256->256 56x56 b%d fp32" % b, "conv", dict(shape=(b, 256, 56, 56),
                                                            dtype="float32")),
        ("conv3x3 256->256 56x56 b%d fp16" % b, "conv", dict(shape=(b, 256, 56, 56),
                                                            dtype="float16")),
        ("maxpool 3x3/2 p1 64x64x112x112", "pool", dict(shape=(64, 64, 112, 112))),
        ("BatchNorm train 64x256x56x56", "bn", dict(shape=(64, 256, 56, 56))),
        ("softmax 4096x1000", "softmax", dict(shape=(4096, 1000))),
        ("relu 64x256x56x56", "relu", dict(shape=(64, 256, 56, 56))),
        ("LayerNorm 4096x768 fp32", "ln", dict(shape=(4096, 768), dtype="float32")),
        ("LayerNorm 4096x768 fp16", "ln", dict(shape=(4096, 768), dtype="float16")),
        ("GroupNorm 32 groups 32x256x56x56", "gn", dict(shape=(32, 256, 56, 56))),
        ("InstanceNorm 32x256x56x56", "in", dict(shape=(32, 256, 56, 56))),
    ]


# --- pymxnet ---------------------------------------------------------------------------
def _mx_step(kind, shape, dtype="float32"):
    import mxnet as mx
    ctx = mx.gpu(0)
    x = mx.nd.random.normal(shape=shape, ctx=ctx).astype(dtype)
    x.attach_grad()
    params = []
    if kind == "conv":
        w = (mx.nd.random.normal(shape=(256, 256, 3, 3), ctx=ctx) * 0.02).astype(dtype)
        b = mx.nd.zeros((256,), ctx=ctx, dtype=dtype)
        params = [w, b]
    elif kind == "bn":
        c = shape[1]
        params = [mx.nd.ones((c,), ctx=ctx), mx.nd.zeros((c,), ctx=ctx)]
        aux = [mx.nd.zeros((c,), ctx=ctx), mx.nd.ones((c,), ctx=ctx)]
    elif kind in ("ln", "gn", "in"):
        d = {"ln": shape[-1], "gn": 32, "in": shape[1]}[kind]
        params = [mx.nd.ones((d,), ctx=ctx, dtype=dtype), mx.nd.zeros((d,), ctx=ctx,
                                                                      dtype=dtype)]
    for a in params:
        a.attach_grad()

    def fwd():
        if kind == "conv":
            return mx.nd.Convolution(x, *params, kernel=(3, 3), pad=(1, 1), num_filter=256)
        if kind == "pool":
            return mx.nd.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1))
        if kind == "bn":
            return mx.nd.BatchNorm(x, *params, *aux, fix_gamma=False)
        if kind == "softmax":
            return mx.nd.softmax(x, axis=-1)
        if kind == "ln":
            return mx.nd.LayerNorm(x, *params, axis=-1, eps=1e-5)
        if kind == "gn":
            return mx.nd.GroupNorm(x, *params, num_groups=32, eps=1e-5)
        if kind == "in":
            return mx.nd.InstanceNorm(x, *params, eps=1e-3)
        return mx.nd.Activation(x, act_type="relu")
    with mx.autograd.record():
        y0 = fwd()
    head = mx.nd.ones(y0.shape, ctx=ctx, dtype=y0.dtype)

    def step():
        with mx.autograd.record():
            y = fwd()
        y.backward(head)
    return step


def _mx_sync():
    import cupy
    import mxnet as mx
    mx.nd.waitall()
    cupy.cuda.Device().synchronize()


@contextlib.contextmanager
def _without_gpu_kernels():
    """The operators' CuPy bodies: the kernel table's GPU entries taken out meanwhile."""
    from mxnet.operator import kernels
    saved = {k: v for k, v in kernels._TABLE.items() if k[1] == "gpu"}
    for k in saved:
        del kernels._TABLE[k]
    try:
        yield
    finally:
        kernels._TABLE.update(saved)


@contextlib.contextmanager
def _env(name, value):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


# --- PyTorch ------------------------------------------------------------------------------
def _torch_step(kind, shape, dtype="float32"):
    import torch
    import torch.nn.functional as F
    dev = "cuda"
    dt = getattr(torch, dtype)
    x = torch.randn(shape, device=dev, dtype=dt, requires_grad=True)
    if kind == "conv":
        w = (torch.randn(256, 256, 3, 3, device=dev) * 0.02).to(dt).requires_grad_()
        b = torch.zeros(256, device=dev, dtype=dt, requires_grad=True)
        fwd = lambda: F.conv2d(x, w, b, padding=1)  # noqa: E731
    elif kind == "pool":
        fwd = lambda: F.max_pool2d(x, 3, 2, 1)  # noqa: E731
    elif kind == "bn":
        c = shape[1]
        g = torch.ones(c, device=dev, requires_grad=True)
        bb = torch.zeros(c, device=dev, requires_grad=True)
        rm, rv = torch.zeros(c, device=dev), torch.ones(c, device=dev)
        fwd = lambda: F.batch_norm(x, rm, rv, g, bb, training=True, eps=1e-3)  # noqa
    elif kind == "softmax":
        fwd = lambda: F.softmax(x, dim=-1)  # noqa: E731
    elif kind == "ln":
        d = shape[-1]
        g = torch.ones(d, device=dev, dtype=dt, requires_grad=True)
        bb = torch.zeros(d, device=dev, dtype=dt, requires_grad=True)
        fwd = lambda: F.layer_norm(x, (d,), g, bb, eps=1e-5)  # noqa: E731
    elif kind == "gn":
        # MXNet's GroupNorm has one gamma per group; PyTorch's per channel (the same work)
        c = shape[1]
        g = torch.ones(c, device=dev, dtype=dt, requires_grad=True)
        bb = torch.zeros(c, device=dev, dtype=dt, requires_grad=True)
        fwd = lambda: F.group_norm(x, 32, g, bb, eps=1e-5)  # noqa: E731
    elif kind == "in":
        c = shape[1]
        g = torch.ones(c, device=dev, dtype=dt, requires_grad=True)
        bb = torch.zeros(c, device=dev, dtype=dt, requires_grad=True)
        fwd = lambda: F.instance_norm(x, weight=g, bias=bb, eps=1e-3)  # noqa: E731
    else:
        fwd = lambda: F.relu(x)  # noqa: E731
    head = torch.ones_like(fwd())

    def step():
        fwd().backward(head)
    return step


def _torch_sync():
    import torch
    torch.cuda.synchronize()


def _time(step, sync, n):
    for _ in range(2):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    sync()
    return (time.perf_counter() - t0) / n * 1e3


def _safe(fn):
    try:
        return round(fn(), 3), None
    except Exception as err:   # a failing column is reported, the rest still run
        return None, f"{type(err).__name__}: {str(err)[:300]}"


def run(quick, out_dir, only=None):
    import mxnet as mx
    from mxnet.backend import cudnn
    if mx.context.num_gpus() == 0:
        raise SystemExit("gpu_ops.py: no GPU visible (mx.context.num_gpus() == 0)")
    try:
        import torch
        have_torch = torch.cuda.is_available()
    except ImportError:
        have_torch = False
    n = 5 if quick else 20
    n_slow = 2 if quick else 5
    info = {"cudnn": cudnn.version() if cudnn.available() else None,
            "cudnn_error": cudnn.load_error(), "quick": quick, "iters": n}
    rows = []
    for name, kind, kw in _cases(quick):
        if only and not any(o in name for o in only.split(",")):
            continue
        row = {"case": name}
        row["pymxnet_cudnn_ms"], row["pymxnet_cudnn_error"] = _safe(
            lambda: _time(_mx_step(kind, **kw), _mx_sync, n))
        if kind == "conv" and kw["dtype"] == "float32":
            with _env("NVIDIA_TF32_OVERRIDE", "0"):     # strict fp32: FMA math
                row["pymxnet_cudnn_no_tf32_ms"], row["pymxnet_cudnn_no_tf32_error"] = _safe(
                    lambda: _time(_mx_step(kind, **kw), _mx_sync, n))
        with _without_gpu_kernels():
            row["pymxnet_cupy_ms"], row["pymxnet_cupy_error"] = _safe(
                lambda: _time(_mx_step(kind, **kw), _mx_sync, n_slow))
        if have_torch:
            import torch
            row["torch_ms"], row["torch_error"] = _safe(
                lambda: _time(_torch_step(kind, **kw), _torch_sync, n))
            if kind == "conv" and kw["dtype"] == "float32":
                prev = torch.backends.cudnn.allow_tf32
                torch.backends.cudnn.allow_tf32 = False
                try:
                    row["torch_no_tf32_ms"], row["torch_no_tf32_error"] = _safe(
                        lambda: _time(_torch_step(kind, **kw), _torch_sync, n))
                finally:
                    torch.backends.cudnn.allow_tf32 = prev
        rows.append({k: v for k, v in row.items() if v is not None})
        print(json.dumps(rows[-1]), flush=True)
    cols = ["pymxnet_cudnn_ms", "pymxnet_cudnn_no_tf32_ms", "pymxnet_cupy_ms", "torch_ms",
            "torch_no_tf32_ms"]
    lines = [f"GPU ops, ms per fwd+bwd iteration (cuDNN {info['cudnn']}, "
             f"{'quick' if quick else 'full'} run)", "",
             "| case | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for r in rows:
        lines.append(f"| {r['case']} | " + " | ".join(
            str(r.get(c, "-")) for c in cols) + " |")
    errs = [f"- {r['case']}: {k}: {v}" for r in rows for k, v in r.items()
            if k.endswith("_error")]
    if errs:
        lines += ["", "Errors:"] + errs
    md = "\n".join(lines) + "\n"
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "gpu_ops.json"), "w") as f:
        json.dump({"info": info, "rows": rows}, f, indent=1)
    with open(os.path.join(out_dir, "gpu_ops.md"), "w") as f:
        f.write(md)
    print(md)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--out", default=os.path.join(HERE, "results"),
                    help="directory for gpu_ops.json / gpu_ops.md")
    ap.add_argument("--only", help="just the cases whose name contains this (or one of these, "
                    "comma-separated)")
    args = ap.parse_args(argv)
    run(args.quick, args.out, args.only)


if __name__ == "__main__":
    main()

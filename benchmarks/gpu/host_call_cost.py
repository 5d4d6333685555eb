"""Host time per call of the GPU operations a training step makes outside its CUDA graphs
(µs per call, on the device): CuPy's own calls, pymxnet's operator calls, PyTorch's.

Why: the seed CNN's graphed step took 3.5 ms on an H200 with the GPU busy ~1 ms, while
pymxnet's own Python for that step is ~0.45 ms on a 2-core host
(benchmarks/gpu/graphed_step_host_time.py). Session 12's profile of it charged
``cupy.array`` ~125 µs a call, ``astype`` ~80 µs, ``take_along_axis`` ~250 µs (under
cProfile). This says what each kind of call costs the host there, beside PyTorch's
launch of the same work, so that the next change targets the right calls. Small
arrays (the loss's (256, 10)), nothing synchronised inside the timed loops (the queue
is drained between rows).

    python3 benchmarks/gpu/host_call_cost.py [--calls 2000]
"""
import argparse
import sys
import time


def _per_call(fn, calls, sync):
    for _ in range(50):
        fn()
    sync()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
        sync()
    return best * 1e6


def cupy_rows(cp, calls):
    import numpy as np
    sync = cp.cuda.Device(0).synchronize
    a = cp.random.rand(256, 10).astype(np.float32)
    b = cp.empty_like(a)
    host = np.random.rand(256).astype(np.float32)
    k = cp.RawKernel(r'''extern "C" __global__ void nop(float* x) {}''', "nop")
    cp.negative(a, out=b)               # compiled and loaded before the capture
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        cp.negative(a, out=b)
        graph = s.end_capture()
    rows = {
        "cupy.empty (pool hit)": lambda: cp.empty((256, 10), np.float32),
        "astype float32->bfloat16": lambda: a.astype("bfloat16"),
        "negative (ufunc)": lambda: cp.negative(a),
        "negative into out=": lambda: cp.negative(a, out=b),
        "mean over axis 1 (reduction)": lambda: a.mean(axis=1),
        "copy b[...] = a": lambda: b.__setitem__(Ellipsis, a),
        "cupy.asarray (256 floats from host)": lambda: cp.asarray(host),
        "RawKernel launch (cached)": lambda: k((1,), (32,), (b,)),
        "Event() + record": lambda: cp.cuda.Event(disable_timing=True).record(),
        "graph launch (1 node)": lambda: graph.launch(),
    }
    return _each(rows, calls, sync)


def _each(rows, calls, sync):
    """{name: µs per call}; a row that fails says why instead (the others still run)."""
    out = {}
    for name, fn in rows.items():
        try:
            out[name] = _per_call(fn, calls // 8 if "Loss" in name else calls, sync)
        except Exception as err:  # noqa: BLE001  (a probe reports, never stops)
            out[name] = f"failed: {type(err).__name__}: {err}"
    return out


def mxnet_rows(cp, calls):
    import numpy as np
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    sync = cp.cuda.Device(0).synchronize
    ctx = mx.gpu(0)
    x = nd.array(np.random.rand(256, 10), ctx=ctx)
    y = nd.array(np.random.randint(0, 10, 256), ctx=ctx)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x.attach_grad()

    def loss_step():
        with autograd.record():
            loss = loss_fn(x, y)
        loss.backward()
    rows = {
        "mx nd.negative": lambda: nd.negative(x),
        "mx nd.log_softmax": lambda: nd.log_softmax(x, axis=-1),
        "mx nd.pick": lambda: nd.pick(x, y, axis=-1),
        "mx nd.mean(axis=1)": lambda: nd.mean(x, axis=1),
        "mx SoftmaxCrossEntropyLoss fwd+bwd": loss_step,
    }
    return _each(rows, calls, sync)


def torch_rows(calls):
    import torch
    sync = torch.cuda.synchronize
    x = torch.rand(256, 10, device="cuda", requires_grad=True)
    y = torch.randint(0, 10, (256,), device="cuda")
    lossf = torch.nn.CrossEntropyLoss()

    def loss_step():
        lossf(x, y).backward()
    rows = {
        "torch neg": lambda: torch.neg(x.detach()),
        "torch log_softmax": lambda: torch.log_softmax(x.detach(), -1),
        "torch CrossEntropyLoss fwd+bwd": loss_step,
    }
    return _each(rows, calls, sync)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000)
    args = ap.parse_args()
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
    except Exception as err:  # noqa: BLE001  (a probe reports, never stops)
        print(f"host_call_cost: no GPU ({type(err).__name__}: {err})")
        return 0
    for label, rows in (("cupy", lambda: cupy_rows(cp, args.calls)),
                        ("pymxnet", lambda: mxnet_rows(cp, args.calls)),
                        ("pytorch", lambda: torch_rows(args.calls))):
        try:
            for name, us in rows().items():
                print(f"{label:8s} {name:40s} " +
                      (f"{us:8.1f} us/call" if isinstance(us, float) else us))
        except Exception as err:  # noqa: BLE001
            print(f"{label:8s} unavailable: {type(err).__name__}: {err}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

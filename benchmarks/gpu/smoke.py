"""GPU correctness smoke for the device check: sync points, Module.fit on the GPU,
runtime features, memory info. Prints one line per check and a JSON summary; exits 0
with 'no GPU' when CuPy sees none (so the CPU dry run of device_check.sh passes)."""
import json
import sys
import time

import numpy as np

import mxnet as mx


def check_sync():
    """10 x dot(4096^2): the time waitall reports must cover the device work."""
    import cupy as cp
    a = mx.nd.random.uniform(shape=(4096, 4096), ctx=mx.gpu())
    mx.nd.waitall()
    t0 = time.perf_counter()
    outs = [mx.nd.dot(a, a) for _ in range(10)]
    mx.nd.waitall()
    t_wait = time.perf_counter() - t0
    queued_done = cp.cuda.get_current_stream().done
    t1 = time.perf_counter()
    cp.cuda.Device(0).synchronize()
    t_extra = time.perf_counter() - t1
    ref = outs[0].asnumpy()
    host = a.asnumpy()
    err = float(np.abs(ref - host @ host).max() / np.abs(host @ host).max())
    return {"waitall_s": round(t_wait, 4), "extra_device_sync_s": round(t_extra, 5),
            "stream_done_after_waitall": bool(queued_done), "dot_rel_err": err,
            "ok": bool(queued_done) and t_extra < 0.05 * max(t_wait, 1e-3) and err < 1e-3}


def check_wait_to_read():
    import cupy as cp
    a = mx.nd.ones((4096, 4096), ctx=mx.gpu())
    b = mx.nd.dot(a, a)
    b.wait_to_read()
    return {"stream_done_after_wait_to_read": bool(cp.cuda.get_current_stream().done),
            "ok": bool(cp.cuda.get_current_stream().done) and float(b[0, 0].asscalar()) == 4096}


def check_module_fit(ctx):
    rng = np.random.RandomState(0)
    y = rng.randint(0, 10, 2000)
    centers = rng.randn(10, 64).astype(np.float32)
    x = centers[y] + 0.3 * rng.randn(2000, 64).astype(np.float32)
    it = mx.io.NDArrayIter(x, y.astype(np.float32), batch_size=100, shuffle=True)
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=64, name="fc1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(net, context=ctx)
    t0 = time.perf_counter()
    mod.fit(it, num_epoch=2, optimizer="sgd", optimizer_params={"learning_rate": 0.1},
            initializer=mx.init.Xavier())
    acc = mx.metric.Accuracy()
    mod.score(mx.io.NDArrayIter(x, y.astype(np.float32), batch_size=100), acc)
    return {"ctx": str(ctx), "accuracy": acc.get()[1],
            "seconds": round(time.perf_counter() - t0, 2), "ok": acc.get()[1] > 0.9}


def main():
    report = {"features": [f.name for f in mx.runtime.feature_list() if f.enabled]}
    n = mx.context.num_gpus()
    report["num_gpus"] = n
    if n == 0:
        report["status"] = "no GPU"
        print(json.dumps(report, indent=1))
        return 0
    checks = {"sync": check_sync, "wait_to_read": check_wait_to_read,
              "module_fit_gpu": lambda: check_module_fit(mx.gpu()),
              "module_fit_gpu_x2": lambda: check_module_fit([mx.gpu(0), mx.gpu(0)]),
              "memory_info": lambda: dict(zip(("free", "total"), mx.context.gpu_memory_info(0)),
                                          ok=True)}
    failed = 0
    for name, fn in checks.items():
        try:
            res = fn()
        except Exception as exc:  # noqa: BLE001  (report every check, then fail)
            res = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        failed += not res.get("ok")
        report[name] = res
        print(name, json.dumps(res), flush=True)
    for feat in ("CUDA", "CUDNN", "NCCL", "CUDA_RTC"):
        report[feat] = mx.runtime.Features().is_enabled(feat)
    print(json.dumps(report, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

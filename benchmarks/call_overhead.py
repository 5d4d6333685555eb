"""Host time of everyday NDArray calls outside operators (µs per call): making small
arrays, in-place arithmetic, a metric update, NumPy-mode in-place arithmetic.

Scripts call these in every step (``nd.zeros`` for an RNN's begin state, ``+=`` in a
hand-written update, ``metric.update`` per batch), so their cost is paid as often as an
operator's. Shapes are small, (4, 10): what is timed is the call, not the arithmetic.
pymxnet, the real MXNet 1.9.1 and PyTorch (``torch.zeros``, ``add_``, ``mul_``; no
metric row), 1 thread each, in one run, alternating frameworks.

    python benchmarks/call_overhead.py [--out benchmarks/results/call_overhead.md]
        [--baseline-src <an earlier checkout>/src --baseline-name pymxnet-before]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CASES = ["nd.zeros((4, 10))", "nd.ones((4, 10))", "a += b", "a -= 1.0", "a *= b",
         "np-mode a += b", "Accuracy update + get"]
CALLS = 20000


def _loop(fn):
    def run(n):
        for _ in range(n):
            fn()
    run(1000)
    return harness.best_us(run, CALLS)


def worker_mxnet():
    import numpy as np
    import mxnet as mx
    from mxnet import nd
    a, b = nd.ones((4, 10)), nd.ones((4, 10)) * 1e-9
    label = nd.array([1, 2, 3, 0])
    pred = nd.array(np.random.RandomState(0).rand(4, 10))
    acc = mx.metric.Accuracy()

    def metric():
        acc.update([label], [pred])
        acc.get()
    res = {CASES[0]: _loop(lambda: nd.zeros((4, 10))),
           CASES[1]: _loop(lambda: nd.ones((4, 10))),
           CASES[2]: _loop(lambda: a.__iadd__(b)),
           CASES[3]: _loop(lambda: a.__isub__(1.0)),
           CASES[4]: _loop(lambda: a.__imul__(b)),
           CASES[6]: _loop(metric)}
    mx.npx.set_np()
    c, d = mx.np.ones((4, 10)), mx.np.ones((4, 10)) * 1e-9
    res[CASES[5]] = _loop(lambda: c.__iadd__(d))
    a.wait_to_read()
    return res


def worker_torch():
    import torch
    torch.set_num_threads(1)
    a, b = torch.ones(4, 10), torch.ones(4, 10) * 1e-9
    add = _loop(lambda: a.add_(b))
    return {CASES[0]: _loop(lambda: torch.zeros((4, 10))),
            CASES[1]: _loop(lambda: torch.ones((4, 10))),
            CASES[2]: add, CASES[3]: _loop(lambda: a.sub_(1.0)),
            CASES[4]: _loop(lambda: a.mul_(b)), CASES[5]: add}


def main():
    harness.one_thread_comparison(
        __file__, "call_overhead.md", worker_mxnet, worker_torch,
        "Host time of everyday NDArray calls (µs per call, lower is better)",
        "Each run's figure is the best of 5 timings of 20000 calls on (4, 10) float32 "
        "arrays. PyTorch: torch.zeros/ones, add_/sub_/mul_ (its add_ also fills the "
        "NumPy-mode row); no metric row.", CASES, "µs")


if __name__ == "__main__":
    main()

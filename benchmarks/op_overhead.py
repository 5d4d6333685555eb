"""Imperative per-op overhead: microseconds per op for ``a + b`` on (10,) arrays,
``relu`` on (10,), 64x64 ``dot``, and a chain of 10 elementwise ops on (1000, 1000),
for pymxnet (NaiveEngine, ThreadedEngine), the real MXNet 1.9.1 and PyTorch (CPU),
all with 2 threads, in one run.

    python benchmarks/op_overhead.py [--out benchmarks/results/op_overhead.md]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CASES = ["a+b (10,)", "relu (10,)", "dot 64x64", "10-op chain (1000,1000), per op"]


def worker_mxnet():
    import mxnet as mx
    a, b = mx.nd.ones((10,)), mx.nd.ones((10,))
    m = mx.nd.random.uniform(shape=(64, 64))
    big = mx.nd.ones((1000, 1000))

    def add(n):
        for _ in range(n):
            c = a + b
        c.wait_to_read()

    def relu(n):
        for _ in range(n):
            c = mx.nd.relu(a)
        c.wait_to_read()

    def dot(n):
        for _ in range(n):
            c = mx.nd.dot(m, m)
        c.wait_to_read()

    def chain(n):
        for _ in range(n // 10):
            x = big
            for _ in range(5):
                x = x * 1.0001
                x = x + 0.5
            x.wait_to_read()
    add(100), relu(100), dot(100), chain(10)
    return {CASES[0]: harness.best_us(add, 20000), CASES[1]: harness.best_us(relu, 20000),
            CASES[2]: harness.best_us(dot, 5000), CASES[3]: harness.best_us(chain, 50, 3)}


def worker_torch():
    import torch
    torch.set_num_threads(2)
    a, b = torch.ones(10), torch.ones(10)
    m = torch.rand(64, 64)
    big = torch.ones(1000, 1000)

    def add(n):
        for _ in range(n):
            a + b

    def relu(n):
        for _ in range(n):
            torch.relu(a)

    def dot(n):
        for _ in range(n):
            torch.mm(m, m)

    def chain(n):
        for _ in range(n // 10):
            x = big
            for _ in range(5):
                x = x * 1.0001
                x = x + 0.5
    return {CASES[0]: harness.best_us(add, 20000), CASES[1]: harness.best_us(relu, 20000),
            CASES[2]: harness.best_us(dot, 5000), CASES[3]: harness.best_us(chain, 50, 3)}


def main():
    args = harness.command_line("op_overhead.md", worker_mxnet, worker_torch)
    if args is None:
        return
    me = os.path.abspath(__file__)
    runs = {
        "pymxnet Threaded": harness.run_worker(me, "pymxnet",
                                               env_extra={"MXNET_ENGINE_TYPE": "ThreadedEnginePerDevice"}),
        "pymxnet Naive": harness.run_worker(me, "pymxnet",
                                            env_extra={"MXNET_ENGINE_TYPE": "NaiveEngine"}),
        "mxnet-1.9.1": harness.run_worker(me, "mxnet-1.9.1"),
        "mxnet-1.9.1 Naive": harness.run_worker(me, "mxnet-1.9.1",
                                                env_extra={"MXNET_ENGINE_TYPE": "NaiveEngine"}),
        "pytorch": harness.run_worker(me, "pytorch"),
    }
    text = ["# Imperative per-op overhead (µs per op, lower is better)", "",
            harness.machine_note(), "", harness.table(runs, CASES, unit="µs"), ""]
    harness.write_report(args.out, text, runs)


if __name__ == "__main__":
    main()

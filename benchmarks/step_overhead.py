"""Host time of a training step whose computation is negligible (µs per step): what a
small model pays per step in Python before any kernel matters, and what a GPU step
that only queues kernels costs the host (the host-bound rows of gpu_train.py).

A 3-layer MLP (8-16-16-4, ReLU), batch 4, softmax cross-entropy, SGD with momentum;
Gluon imperative and hybridized (static_alloc), a Module step (forward_backward +
update); keyword operator calls (``Activation(x, act_type='relu')``, ``pick``) on
(4, 4). pymxnet, the real MXNet 1.9.1 and PyTorch (eager: its one step stands in each
Gluon row; ``F.relu`` and ``gather`` for the calls), 1 thread each, in one run,
alternating frameworks.

    python benchmarks/step_overhead.py [--out benchmarks/results/step_overhead.md]
        [--baseline-src <an earlier checkout>/src --baseline-name pymxnet-before]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CASES = ["gluon imperative step", "gluon hybridized step", "module step",
         "Activation(act_type=relu) call", "pick(axis, keepdims) call"]
STEPS = 3000


def worker_mxnet():
    import numpy as np
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    x = nd.array(np.random.RandomState(0).randn(4, 8))
    y = nd.array([0, 1, 2, 3])
    res = {}
    for case, hybridize in ((CASES[0], False), (CASES[1], True)):
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(16, activation="relu"), gluon.nn.Dense(16, activation="relu"),
                gluon.nn.Dense(4))
        net.initialize()
        if hybridize:
            net.hybridize(static_alloc=True, static_shape=True)
        trainer = gluon.Trainer(net.collect_params(), "sgd",
                                {"learning_rate": 0.01, "momentum": 0.9})
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

        def steps(n):
            for _ in range(n):
                with autograd.record():
                    loss = loss_fn(net(x), y)
                loss.backward()
                trainer.step(4)
            loss.wait_to_read()
        steps(200)
        res[case] = harness.best_us(steps, STEPS, repeat=3)

    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=16), act_type="relu")
    h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=16), act_type="relu")
    out = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=4), name="softmax")
    it = mx.io.NDArrayIter(x.asnumpy(), y.asnumpy(), batch_size=4)
    mod = mx.mod.Module(out, context=mx.cpu())
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01,
                                                          "momentum": 0.9})
    batch = next(iter(it))

    def module_steps(n):
        for _ in range(n):
            mod.forward_backward(batch)
            mod.update()
        mod.get_outputs()[0].wait_to_read()
    module_steps(200)
    res[CASES[2]] = harness.best_us(module_steps, STEPS, repeat=3)

    a, idx = nd.array(np.random.RandomState(1).randn(4, 4)), nd.array([0, 1, 2, 3])

    def act(n):
        for _ in range(n):
            c = nd.Activation(a, act_type="relu")
        c.wait_to_read()

    def pick(n):
        for _ in range(n):
            c = nd.pick(a, idx, axis=-1, keepdims=True)
        c.wait_to_read()
    act(1000), pick(1000)
    res[CASES[3]] = harness.best_us(act, 20000)
    res[CASES[4]] = harness.best_us(pick, 20000)
    return res


def worker_torch():
    import torch
    import torch.nn as tnn
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y = torch.randn(4, 8), torch.tensor([0, 1, 2, 3])
    net = tnn.Sequential(tnn.Linear(8, 16), tnn.ReLU(), tnn.Linear(16, 16), tnn.ReLU(),
                         tnn.Linear(16, 4))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = tnn.CrossEntropyLoss()

    def steps(n):
        for _ in range(n):
            opt.zero_grad()
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
    steps(200)
    step_us = harness.best_us(steps, STEPS, repeat=3)
    a, idx = torch.randn(4, 4), torch.tensor([[0], [1], [2], [3]])

    def act(n):
        for _ in range(n):
            torch.relu(a)

    def pick(n):
        for _ in range(n):
            torch.gather(a, -1, idx)
    act(1000), pick(1000)
    return {CASES[0]: step_us, CASES[1]: step_us, CASES[2]: step_us,
            CASES[3]: harness.best_us(act, 20000), CASES[4]: harness.best_us(pick, 20000)}


def main():
    harness.one_thread_comparison(
        __file__, "step_overhead.md", worker_mxnet, worker_torch,
        "Host time of a training step with negligible computation (µs, lower is better)",
        "Each run's figure is the best of 3 timings of 3000 steps (20000 calls for the "
        "call rows). PyTorch runs eagerly: its one step fills the three step rows.",
        CASES, "µs")


if __name__ == "__main__":
    main()

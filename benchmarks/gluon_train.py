"""Seed 003's SimpleCNN trained with Gluon (batch 64, SGD lr 0.01): samples/s,
imperative and hybridized, for pymxnet (with oneDNN and with its NumPy kernels), the
real MXNet 1.9.1 and PyTorch CPU (same model, same batch), 2 threads each, medians of
alternating runs; plus each process's peak RSS.

Data: random Fashion-MNIST-shaped batches (1x28x28, 10 classes) made in the worker,
so the data pipeline is not what is measured.

    python benchmarks/gluon_train.py [--steps 60] [--repeat 3]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

BATCH = 64
VARIANTS = dict([harness.NUMPY_VARIANT])


def worker_mxnet(steps, hybridize):
    import numpy as np
    import mxnet as mx
    from mxnet import autograd, gluon, nd

    sys.path.insert(0, os.path.join(harness.HERE, "..", "examples"))
    from train_fashion_mnist import SimpleCNN   # seed 003's network (a HybridBlock)

    net = SimpleCNN()
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    rng = np.random.RandomState(0)
    data = [nd.array(rng.rand(BATCH, 1, 28, 28)) for _ in range(4)]
    label = [nd.array(rng.randint(0, 10, BATCH)) for _ in range(4)]

    def step(i):
        with autograd.record():
            loss = loss_fn(net(data[i % 4]), label[i % 4])
        loss.backward()
        trainer.step(BATCH)
        return loss
    return harness.samples_per_s(step, steps, BATCH, warmup=5, sync=harness.mxnet_sync)


def worker_torch(steps):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(2)
    torch.manual_seed(0)

    net = harness.torch_simple_cnn()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    data = [torch.rand(BATCH, 1, 28, 28) for _ in range(4)]
    label = [torch.randint(0, 10, (BATCH,)) for _ in range(4)]

    def step(i):
        opt.zero_grad()
        loss = F.cross_entropy(net(data[i % 4]), label[i % 4])
        loss.backward()
        opt.step()
    return harness.samples_per_s(step, steps, BATCH, warmup=5)


def main():
    harness.training_benchmark(
        __file__, "Gluon SimpleCNN training (batch 64, SGD)",
        {"steps": 60, "frameworks": "pymxnet,pymxnet-numpy,mxnet-1.9.1,pytorch",
         "out": "gluon_train.md"}, VARIANTS, worker_mxnet, worker_torch,
        note="pymxnet-numpy is pymxnet with oneDNN off (MXNET_MKLDNN_ENABLED=0); ")


if __name__ == "__main__":
    main()

"""ResNet-18 v1 training on the CPU (Gluon model zoo's resnet18_v1, batch 16, 3x112x112,
10 classes, SGD lr 0.01 momentum 0.9): samples/s imperative and hybridized for pymxnet,
pymxnet with the executor's blocked layouts off (MXNET_ONEDNN_BLOCKED_LAYOUT=0:
every oneDNN call reorders from and to plain arrays), pymxnet with oneDNN off (its
NumPy kernels), the real MXNet 1.9.1 and the same network in PyTorch (eager), 2
threads each, medians of alternating runs; plus each process's peak RSS.

    python benchmarks/resnet_cpu.py [--steps 8] [--repeat 3]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

BATCH, SHAPE, CLASSES = 16, (3, 112, 112), 10
VARIANTS = dict([harness.NUMPY_VARIANT,
                 ("pymxnet-plain-layout", {"MXNET_ONEDNN_BLOCKED_LAYOUT": "0"})])


def worker_mxnet(steps, hybridize):
    import numpy as np
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    from mxnet.gluon.model_zoo import vision

    mx.random.seed(0)
    net = vision.resnet18_v1(classes=CLASSES)
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.01, "momentum": 0.9})
    rng = np.random.RandomState(0)
    data = nd.array(rng.rand(BATCH, *SHAPE))
    label = nd.array(rng.randint(0, CLASSES, BATCH))

    def step(i):
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(BATCH)
        return loss
    return harness.samples_per_s(step, steps, BATCH, sync=harness.mxnet_sync)


def worker_torch(steps):
    import torch
    import torch.nn.functional as F
    from gpu_train import _torch_net       # ResNet-18 v1 as Gluon's model zoo builds it
    torch.set_num_threads(2)
    torch.manual_seed(0)
    net = _torch_net("resnet18", CLASSES)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    data = torch.rand(BATCH, *SHAPE)
    label = torch.randint(0, CLASSES, (BATCH,))

    def step(i):
        opt.zero_grad()
        loss = F.cross_entropy(net(data), label)
        loss.backward()
        opt.step()
    return harness.samples_per_s(step, steps, BATCH)


def main():
    harness.training_benchmark(
        __file__, "ResNet-18 v1 training on the CPU (batch 16, 3x112x112, SGD momentum)",
        {"steps": 8, "out": "resnet_cpu.md",
         "frameworks": "pymxnet,pymxnet-plain-layout,pymxnet-numpy,mxnet-1.9.1,pytorch"},
        VARIANTS, worker_mxnet, worker_torch,
        note="pymxnet-plain-layout is pymxnet with the executor's blocked layouts off "
             "(MXNET_ONEDNN_BLOCKED_LAYOUT=0), pymxnet-numpy pymxnet with oneDNN off "
             "(MXNET_MKLDNN_ENABLED=0); ",
        # the NumPy kernels take seconds a step: fewer steps
        steps_of=lambda fw, steps: max(2, steps // 4) if fw == "pymxnet-numpy" else steps)


if __name__ == "__main__":
    main()

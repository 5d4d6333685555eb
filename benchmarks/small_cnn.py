"""A deep CNN on tiny inputs (ms per call): where per-layer host work, not arithmetic,
sets the pace, as in a GPU step that only queues kernels or a CPU model of small
feature maps.

ResNet-50 v1's layer structure (53 convolutions, 53 BatchNorms, bottleneck blocks)
with its channels cut 16-fold (4..128), batch 2, 3x32x32, so that the feature maps
are 16x16 down to 1x1: a hybridized inference call, a hybridized training step and an
imperative one (softmax cross-entropy, SGD with momentum). pymxnet, the real MXNet
1.9.1 and PyTorch (eager: its inference call and its one training step fill the rows),
1 thread each, alternating, in one run. ``--baseline-src`` adds another pymxnet
checkout's src/ as a column.

    python benchmarks/small_cnn.py [--out benchmarks/results/small_cnn.md]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CASES = ["hybridized inference call", "hybridized training step", "imperative training step"]
LAYERS, CHANNELS = [3, 4, 6, 3], [4, 16, 32, 64, 128]
BATCH, SHAPE, CLASSES = 2, (3, 32, 32), 10
# a small rate: the timed steps must not drive the weights to inf/NaN, whose
# arithmetic would be timed instead
LR = 1e-4


def _data(np):
    rs = np.random.RandomState(0)
    return rs.rand(BATCH, *SHAPE).astype("float32"), rs.randint(0, CLASSES, BATCH)


def worker_mxnet():
    import numpy as np
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    from mxnet.gluon.model_zoo import vision
    x_np, y_np = _data(np)
    x, y = nd.array(x_np), nd.array(y_np)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    res = {}
    for hybridize in (True, False):
        net = vision.ResNetV1(vision.BottleneckV1, LAYERS, CHANNELS, classes=CLASSES)
        net.initialize(mx.init.Xavier())
        if hybridize:
            net.hybridize(static_alloc=True, static_shape=True)
        trainer = gluon.Trainer(net.collect_params(), "sgd",
                                {"learning_rate": LR, "momentum": 0.9})

        def steps(n):
            for _ in range(n):
                with autograd.record():
                    loss = loss_fn(net(x), y)
                loss.backward()
                trainer.step(BATCH)
            loss.wait_to_read()

        def calls(n):
            for _ in range(n):
                out = net(x)
            out.wait_to_read()
        steps(5)
        calls(5)
        if hybridize:
            res[CASES[0]] = harness.best_us(calls, 20, repeat=10) / 1e3
            res[CASES[1]] = harness.best_us(steps, 10, repeat=10) / 1e3
        else:
            res[CASES[2]] = harness.best_us(steps, 10, repeat=10) / 1e3
    return res


def worker_torch():
    import numpy as np
    import torch
    import torch.nn as tnn
    torch.set_num_threads(1)
    torch.manual_seed(0)

    def conv_bn(cin, cout, k, stride=1, pad=0):
        return [tnn.Conv2d(cin, cout, k, stride, pad, bias=False), tnn.BatchNorm2d(cout)]

    class Bottleneck(tnn.Module):
        # MXNet's BottleneckV1: the stride on the first 1x1 convolution
        def __init__(self, cin, cout, stride):
            super().__init__()
            mid = cout // 4
            self.body = tnn.Sequential(*conv_bn(cin, mid, 1, stride), tnn.ReLU(),
                                       *conv_bn(mid, mid, 3, 1, 1), tnn.ReLU(),
                                       *conv_bn(mid, cout, 1))
            self.down = tnn.Sequential(*conv_bn(cin, cout, 1, stride)) \
                if stride != 1 or cin != cout else None

        def forward(self, x):
            r = x if self.down is None else self.down(x)
            return torch.relu(self.body(x) + r)

    layers = [*conv_bn(SHAPE[0], CHANNELS[0], 7, 2, 3), tnn.ReLU(), tnn.MaxPool2d(3, 2, 1)]
    cin = CHANNELS[0]
    for i, (n, cout) in enumerate(zip(LAYERS, CHANNELS[1:])):
        for j in range(n):
            layers.append(Bottleneck(cin, cout, 2 if (j == 0 and i > 0) else 1))
            cin = cout
    layers += [tnn.AdaptiveAvgPool2d(1), tnn.Flatten(), tnn.Linear(cin, CLASSES)]
    net = tnn.Sequential(*layers)
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=0.9)
    loss_fn = tnn.CrossEntropyLoss()
    x_np, y_np = _data(np)
    x, y = torch.tensor(x_np), torch.tensor(y_np)

    def steps(n):
        net.train()
        for _ in range(n):
            opt.zero_grad()
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()

    def calls(n):
        net.eval()
        with torch.no_grad():
            for _ in range(n):
                net(x)
    steps(5)
    calls(5)
    step_ms = harness.best_us(steps, 10, repeat=10) / 1e3
    return {CASES[0]: harness.best_us(calls, 20, repeat=10) / 1e3, CASES[1]: step_ms,
            CASES[2]: step_ms}


def main():
    harness.one_thread_comparison(
        __file__, "small_cnn.md", worker_mxnet, worker_torch,
        "A deep CNN on tiny inputs: ResNet-50's layers at 1/16 channels, batch 2, 32x32 "
        "(ms per call, lower is better)",
        "Each figure is the best of 10 timings of 20 calls (10 steps). PyTorch runs "
        "eagerly: its one training step fills both training rows.",
        CASES, "ms")


if __name__ == "__main__":
    main()

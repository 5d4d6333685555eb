"""An LSTM cell run over a sequence with ``F.contrib.foreach`` (MXNet's control-flow
operator), trained with Gluon: samples/s imperative (the loop in Python, mx.nd) and
hybridized (one ``_foreach`` graph node holding the cell's subgraph), for pymxnet, the
real MXNet 1.9.1 and PyTorch CPU (an ``nn.LSTMCell`` in a Python loop), 2 threads
each, medians of alternating runs; plus each process's peak RSS.

Sequence 20, batch 32, input 64, hidden 128, a dense layer to 10 classes on the last
output, softmax cross-entropy, SGD; random data made in the worker.

    python benchmarks/control_flow.py [--steps 30] [--repeat 3]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SEQ, BATCH, INPUT, HIDDEN, CLASSES = 20, 32, 64, 128, 10


def worker_mxnet(steps, hybridize):
    import numpy as np
    import mxnet as mx
    from mxnet import autograd, gluon, nd

    class ScanLSTM(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.cell = gluon.rnn.LSTMCell(HIDDEN, input_size=INPUT)
                self.out = gluon.nn.Dense(CLASSES, in_units=HIDDEN)

        def hybrid_forward(self, F, seq, h, c):
            outs, _ = F.contrib.foreach(self.cell, seq, [h, c])
            return self.out(F.squeeze(F.slice_axis(outs, axis=0, begin=-1, end=None),
                                      axis=0))

    net = ScanLSTM()
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    rng = np.random.RandomState(0)
    data = [nd.array(rng.randn(SEQ, BATCH, INPUT)) for _ in range(4)]
    label = [nd.array(rng.randint(0, CLASSES, BATCH)) for _ in range(4)]
    h0, c0 = nd.zeros((BATCH, HIDDEN)), nd.zeros((BATCH, HIDDEN))

    def step(i):
        with autograd.record():
            loss = loss_fn(net(data[i % 4], h0, c0), label[i % 4])
        loss.backward()
        trainer.step(BATCH)
        return loss
    return harness.samples_per_s(step, steps, BATCH, warmup=3, sync=harness.mxnet_sync)


def worker_torch(steps):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(2)
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(INPUT, HIDDEN)
    out = torch.nn.Linear(HIDDEN, CLASSES)
    opt = torch.optim.SGD(list(cell.parameters()) + list(out.parameters()), lr=0.01)
    data = [torch.randn(SEQ, BATCH, INPUT) for _ in range(4)]
    label = [torch.randint(0, CLASSES, (BATCH,)) for _ in range(4)]
    h0, c0 = torch.zeros(BATCH, HIDDEN), torch.zeros(BATCH, HIDDEN)

    def step(i):
        opt.zero_grad()
        h, c = h0, c0
        for x in data[i % 4]:
            h, c = cell(x, (h, c))
        loss = F.cross_entropy(out(h), label[i % 4])
        loss.backward()
        opt.step()
    return harness.samples_per_s(step, steps, BATCH, warmup=3)


def main():
    harness.training_benchmark(
        __file__, "LSTM cell over foreach (sequence 20, batch 32, hidden 128, SGD)",
        {"steps": 30, "frameworks": "pymxnet,mxnet-1.9.1,pytorch",
         "out": "control_flow.md"}, {}, worker_mxnet, worker_torch)


if __name__ == "__main__":
    main()

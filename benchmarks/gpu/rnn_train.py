"""Recurrent language-model training steps on one GPU, pymxnet beside PyTorch, one
worker per process:

    python benchmarks/gpu/rnn_train.py --framework pymxnet --cell lstm [--hybridize]
    python benchmarks/gpu/rnn_train.py --framework pytorch --cell lstm

The d2l book's concise RNN chapter model: one-hot characters (vocabulary 28) through
one recurrent layer of 256 units (Gluon ``rnn.LSTM`` / ``rnn.GRU``, the ``RNN``
operator; PyTorch ``nn.LSTM`` / ``nn.GRU``, cuDNN), a dense layer to the vocabulary,
softmax cross-entropy, SGD; batch 32, 35 steps, fp32, synthetic tokens on the GPU.
pymxnet's fused cells (backend/rnn_cells.py) are on unless MXNET_GPU_RNN_FUSED_CELLS=0;
MXNET_CUDNN_RNN=1 runs the layer on cuDNN instead (backend/cudnn/rnn.py).
Timing: warm-up steps, then N steps closed by a real device synchronisation. Prints one
JSON line: sequences/s, ms/step and the final loss (train_summary.py reads it)."""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from harness import samples_per_s  # noqa: E402
VOCAB, HIDDEN, BATCH, STEPS = 28, 256, 32, 35


def _timed(step, synchronize, warmup, iters):
    """(samples/s over ``iters`` steps after ``warmup`` ones, closed by a device
    synchronisation; the last step's loss)."""
    losses = []

    def one(_):
        losses[:] = [step()]
        return losses[0]
    rate = samples_per_s(one, iters, BATCH, warmup, sync=lambda loss: synchronize())
    return rate, float(losses[0].item())


def _pymxnet(cell, hybridize, layers, dropout, warmup, iters, on_cpu):
    sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))
    import mxnet as mx
    from mxnet import autograd, gluon
    from mxnet.gluon import nn, rnn

    ctx = mx.cpu() if on_cpu else mx.gpu(0)

    def synchronize():
        mx.nd.waitall()
        if not on_cpu:
            import cupy
            cupy.cuda.Device().synchronize()

    class Model(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.rnn = (rnn.LSTM if cell == "lstm" else rnn.GRU)(
                HIDDEN, num_layers=layers, dropout=dropout)
            self.dense = nn.Dense(VOCAB, flatten=False)

        def hybrid_forward(self, F, x, *state):
            y, _ = self.rnn(x, list(state))
            return self.dense(y)

    net = Model()
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    tokens = mx.nd.random.randint(0, VOCAB, (STEPS, BATCH), ctx=ctx)
    x = mx.nd.one_hot(tokens, VOCAB)
    y = mx.nd.random.randint(0, VOCAB, (STEPS, BATCH), ctx=ctx).astype("float32")
    states = [mx.nd.zeros((layers, BATCH, HIDDEN), ctx=ctx)
              for _ in range(2 if cell == "lstm" else 1)]
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})

    def step():
        with autograd.record():
            loss = loss_fn(net(x, *states), y).mean()
        loss.backward()
        trainer.step(1)
        return loss

    return _timed(step, synchronize, warmup, iters)


def _pytorch(cell, layers, dropout, warmup, iters, on_cpu):
    import torch
    dev = torch.device("cpu" if on_cpu else "cuda")

    def synchronize():
        if not on_cpu:
            torch.cuda.synchronize()

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = (torch.nn.LSTM if cell == "lstm" else torch.nn.GRU)(
                VOCAB, HIDDEN, num_layers=layers, dropout=dropout)
            self.dense = torch.nn.Linear(HIDDEN, VOCAB)

        def forward(self, x, state):
            y, _ = self.rnn(x, state)
            return self.dense(y)

    net = Model().to(dev)
    tokens = torch.randint(0, VOCAB, (STEPS, BATCH), device=dev)
    x = torch.nn.functional.one_hot(tokens, VOCAB).float()
    y = torch.randint(0, VOCAB, (STEPS, BATCH), device=dev)
    h = torch.zeros(layers, BATCH, HIDDEN, device=dev)
    state = (h, h.clone()) if cell == "lstm" else h
    opt = torch.optim.SGD(net.parameters(), lr=1.0)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(x, state).reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    return _timed(step, synchronize, warmup, iters)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--framework", choices=["pymxnet", "pytorch"], required=True)
    ap.add_argument("--cell", choices=["lstm", "gru"], default="lstm")
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--dropout", type=float, default=0.0, help="between stacked layers")
    ap.add_argument("--hybridize", action="store_true",
                    help="hybridize(static_alloc, static_shape); with "
                         "MXNET_ENABLE_CUDA_GRAPHS=1 the step replays CUDA graphs")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (a smoke test)")
    a = ap.parse_args()
    try:
        if a.framework == "pymxnet":
            rate, loss = _pymxnet(a.cell, a.hybridize, a.layers, a.dropout, a.warmup,
                                  a.iters, a.cpu)
        else:
            rate, loss = _pytorch(a.cell, a.layers, a.dropout, a.warmup, a.iters, a.cpu)
        res = {"samples/s": rate, "ms/step": 1e3 * BATCH / rate,
               "final loss": loss}
    except Exception as err:            # the row says why it has no figure
        res = {"error": f"{type(err).__name__}: {err}"}
    res.update(framework=a.framework, device="cpu" if a.cpu else "gpu", cell=a.cell,
               layers=a.layers, dropout=a.dropout, hybridized=a.hybridize,
               cuda_graphs=os.environ.get("MXNET_ENABLE_CUDA_GRAPHS", "0") == "1",
               fused_cells=(a.framework == "pymxnet" and not a.cpu and
                            os.environ.get("MXNET_GPU_RNN_FUSED_CELLS", "1") != "0"),
               cudnn_rnn=(a.framework == "pymxnet" and not a.cpu and
                          os.environ.get("MXNET_CUDNN_RNN", "0") == "1"))
    print(json.dumps(res))


if __name__ == "__main__":
    main()

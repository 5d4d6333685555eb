"""A hybridized decoder called with a new input shape at every call (ms per call): the
pattern of step-by-step decoding (Sockeye's and GluonNLP's beam search, GluonTS's
forecasts), where every step's sequence is one longer, so every call binds the graph
for a shape it has not seen.

A 6-layer self-attention decoder (d=64, vocabulary 1000, batch 5: embedding, fused
QKV projection, batch_dot attention, LayerNorm, ReLU feed-forward, log_softmax), fed
lengths 1..40: once (every shape new) and once more (every shape seen before), and
imperatively. pymxnet, the real MXNet 1.9.1 and PyTorch (eager: its one figure fills
the three rows), 1 thread each, alternating, in one run. ``--baseline-src`` adds
another pymxnet checkout's src/ as a column (e.g. a git worktree of an earlier commit).

    python benchmarks/new_shapes.py [--out benchmarks/results/new_shapes.md]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CASES = ["hybridized, every length new", "hybridized, lengths seen before", "imperative"]
D, LAYERS, VOCAB, BATCH, LENGTHS = 64, 6, 1000, 5, 40


def _tokens(np, t):
    return np.random.RandomState(t).randint(0, VOCAB, (BATCH, t))


def worker_mxnet():
    import time
    import numpy as np
    import mxnet as mx
    from mxnet import gluon, nd
    from mxnet.gluon import nn

    class Layer(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.qkv = nn.Dense(3 * D, flatten=False)
                self.proj = nn.Dense(D, flatten=False)
                self.ln1, self.ln2 = nn.LayerNorm(), nn.LayerNorm()
                self.ff1 = nn.Dense(4 * D, flatten=False, activation="relu")
                self.ff2 = nn.Dense(D, flatten=False)

        def hybrid_forward(self, F, x):
            q, k, v = F.split(self.qkv(x), num_outputs=3, axis=-1)
            att = F.softmax(F.batch_dot(q, k, transpose_b=True) / 8.0, axis=-1)
            x = self.ln1(x + self.proj(F.batch_dot(att, v)))
            return self.ln2(x + self.ff2(self.ff1(x)))

    class Decoder(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.emb = nn.Embedding(VOCAB, D)
                self.layers = nn.HybridSequential()
                for _ in range(LAYERS):
                    self.layers.add(Layer())
                self.out = nn.Dense(VOCAB, flatten=False)

        def hybrid_forward(self, F, tokens):
            return F.log_softmax(self.out(self.layers(self.emb(tokens))), axis=-1)

    inputs = [nd.array(_tokens(np, t)) for t in range(1, LENGTHS + 1)]

    def decode(net):
        t0 = time.perf_counter()
        for x in inputs:
            net(x).wait_to_read()
        return (time.perf_counter() - t0) / len(inputs) * 1e3

    res = {}
    net = Decoder()
    net.initialize(mx.init.Xavier())
    net(nd.ones((BATCH, 1))).wait_to_read()
    decode(net)
    res[CASES[2]] = min(decode(net) for _ in range(3))
    net.hybridize()
    net(nd.ones((BATCH, 1))).wait_to_read()     # traced with length 1: all of 2..40 new
    res[CASES[0]] = decode(net)
    res[CASES[1]] = min(decode(net) for _ in range(3))
    res["peak RSS (MB)"] = harness.peak_rss_mb()
    return res


def worker_torch():
    import time
    import numpy as np
    import torch
    import torch.nn as tnn
    torch.set_num_threads(1)
    torch.manual_seed(0)

    class Layer(tnn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj = tnn.Linear(D, 3 * D), tnn.Linear(D, D)
            self.ln1, self.ln2 = tnn.LayerNorm(D), tnn.LayerNorm(D)
            self.ff1, self.ff2 = tnn.Linear(D, 4 * D), tnn.Linear(4 * D, D)

        def forward(self, x):
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            att = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / 8.0, dim=-1)
            x = self.ln1(x + self.proj(torch.bmm(att, v)))
            return self.ln2(x + self.ff2(torch.relu(self.ff1(x))))

    emb = tnn.Embedding(VOCAB, D)
    layers = tnn.Sequential(*[Layer() for _ in range(LAYERS)])
    out = tnn.Linear(D, VOCAB)
    inputs = [torch.tensor(_tokens(np, t)) for t in range(1, LENGTHS + 1)]

    def decode():
        t0 = time.perf_counter()
        with torch.no_grad():
            for x in inputs:
                torch.log_softmax(out(layers(emb(x))), dim=-1)
        return (time.perf_counter() - t0) / len(inputs) * 1e3
    decode()
    ms = min(decode() for _ in range(3))
    return {CASES[0]: ms, CASES[1]: ms, CASES[2]: ms, "peak RSS (MB)": harness.peak_rss_mb()}


def main():
    harness.one_thread_comparison(
        __file__, "new_shapes.md", worker_mxnet, worker_torch,
        "A hybridized decoder fed a new sequence length at every call (ms per call, "
        "lower is better)",
        "Lengths 1..40, batch 5, 6 layers, d=64, vocabulary 1000. The first row binds a "
        "graph per call; the second and third are the best of 3 passes. PyTorch runs "
        "eagerly: its one figure fills the three rows.",
        CASES + ["peak RSS (MB)"], "ms")


if __name__ == "__main__":
    main()

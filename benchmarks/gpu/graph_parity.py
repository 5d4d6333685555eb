"""CUDA graphs on vs off: the same training steps give the same losses and parameters.

    MXNET_CUDA_GRAPHS_VERBOSE=1 python3 benchmarks/gpu/graph_parity.py --model resnet18

Builds the model twice from one seed (gpu_train.py's networks, data and SGD with
momentum), trains ``--steps`` steps hybridized with static_alloc/static_shape, once with
MXNET_ENABLE_CUDA_GRAPHS=0 and once with 1, and prints per step the two losses, then the
largest relative parameter difference, what was captured (graphs per entry, replays,
keys left without a graph and why) and PASS/FAIL. The graphs-off run is repeated: a deep
net's two ordinary runs already drift apart (cuDNN's non-deterministic backward
algorithms, amplified by SGD), so PASS means graphs-on stays within max(rtol, 3x) that
off-vs-off drift. Exit status 0 only on PASS with at
least one replay. Runs on the CPU too (``--cpu``: graphs stay off there, so it only
checks the script).
"""
import argparse
import json
import logging
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))


def train(model, graphs, steps, ctx, batch):
    import numpy as np
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    from gpu_train import MODELS, LR, MOMENTUM, _mx_net

    os.environ["MXNET_ENABLE_CUDA_GRAPHS"] = "1" if graphs else "0"
    shape, classes, default_batch = MODELS[model]
    batch = batch or default_batch
    mx.random.seed(42)
    np.random.seed(42)
    net = _mx_net(model, classes)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": LR, "momentum": MOMENTUM})
    rng = np.random.RandomState(0)
    losses = []
    for i in range(steps):
        # a new batch every step (the data input is copied into the graph's buffer)
        data = nd.array(rng.rand(batch, *shape).astype(np.float32), ctx=ctx)
        label = nd.array(rng.randint(0, classes, batch).astype(np.float32), ctx=ctx)
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(batch)
        losses.append(float(loss.mean().asscalar()))
    params = [p.data().asnumpy() for p in net.collect_params().values()]
    info = []
    op = net._cached_op
    for pool in (op._pools.values() if op is not None else ()):
        for e in pool:
            g = e.graph
            if g is None:
                info.append({"graphs": "off"})
            else:
                info.append({"captured": [list(k) for k in g.graphs],
                             "replays": g.replays,
                             "without graph": {str(k): v for k, v in g.off.items()},
                             "copied inputs": sum(g.moved),
                             "aliased inputs": len(g.moved) - sum(g.moved)})
    return losses, params, info


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet18", choices=["resnet18", "resnet50", "cnn"])
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--rtol", type=float, default=2e-3)
    ap.add_argument("--cpu", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    import numpy as np
    import mxnet as mx
    ctx = mx.cpu() if args.cpu else mx.gpu(0)
    ref, ref_p, _ = train(args.model, False, args.steps, ctx, args.batch)
    # the ordinary path run twice: cuDNN's non-deterministic backward algorithms
    # (atomics) make two graphs-off runs of a deep net drift apart on their own, and
    # a few SGD steps amplify that; the graphs-on run is judged against this floor
    again, again_p, _ = train(args.model, False, args.steps, ctx, args.batch)
    got, got_p, info = train(args.model, True, args.steps, ctx, args.batch)

    def loss_diff(xs, ys):
        return [abs(a - b) / max(abs(a), 1e-12) for a, b in zip(xs, ys)]

    def param_diff(ps, qs):
        return max(float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-12))
                   for a, b in zip(ps, qs))
    noise, diff = loss_diff(ref, again), loss_diff(ref, got)
    for i, (a, b) in enumerate(zip(ref, got)):
        print(f"step {i}: loss graphs off {a:.6f}  on {b:.6f}  rel {diff[i]:.2e}  "
              f"(off vs off {noise[i]:.2e})")
    loss_rel, loss_noise = max(diff), max(noise)
    par_rel, par_noise = param_diff(ref_p, got_p), param_diff(ref_p, again_p)
    replays = sum(e.get("replays", 0) for e in info)
    ok = (loss_rel <= max(args.rtol, 3 * loss_noise) and
          par_rel <= max(args.rtol, 3 * par_noise) and all(np.isfinite(got)))
    print("graph info:", json.dumps(info))
    verdict = "PASS" if ok and (replays > 0 or args.cpu) else "FAIL"
    print(f"PARITY {args.model}: max loss rel diff {loss_rel:.2e} (off vs off "
          f"{loss_noise:.2e}), max param rel diff {par_rel:.2e} (off vs off "
          f"{par_noise:.2e}), replays {replays} -> {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())

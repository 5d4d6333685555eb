"""bfloat16 mixed precision on the CPU, against float32: ResNet-18 v1 (Gluon model zoo,
batch 16, 3x112x112, 10 classes) inference and training (SGD lr 0.01 momentum 0.9).

- pymxnet and the real MXNet 1.9.1 (oneDNN in both): inference through
  ``amp.convert_hybrid_block(net, target_dtype='bfloat16', cast_optional_params=True)``,
  training through ``amp.init(target_dtype='bfloat16')`` + ``amp.init_trainer`` +
  ``amp.scale_loss``; hybridized (static_alloc, static_shape) throughout.
- PyTorch (eager), the same network: ``torch.autocast('cpu', dtype=torch.bfloat16)``
  (inference under ``torch.inference_mode``).

Each (task, precision) runs in its own process (AMP patches operators process-wide), 2
threads each, medians of alternating runs; samples/s and each process's peak RSS.

    python benchmarks/amp_cpu.py [--steps 8] [--repeat 3]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

BATCH, SHAPE, CLASSES = 16, (3, 112, 112), 10
CASES = [("inference", "fp32"), ("inference", "bf16"), ("training", "fp32"),
         ("training", "bf16")]


def worker_mxnet(task, precision, steps):
    import numpy as np
    import mxnet as mx
    from mxnet import gluon, nd
    from mxnet.contrib import amp
    from mxnet.gluon.model_zoo import vision

    bf16 = precision == "bf16"
    if bf16 and task == "training":
        amp.init(target_dtype="bfloat16")
    mx.random.seed(0)
    net = vision.resnet18_v1(classes=CLASSES)
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    net.hybridize(static_alloc=True, static_shape=True)
    rng = np.random.RandomState(0)
    data = nd.array(rng.rand(BATCH, *SHAPE))
    label = nd.array(rng.randint(0, CLASSES, BATCH))
    if task == "inference":
        net(data).wait_to_read()
        if bf16:
            net = amp.convert_hybrid_block(net, target_dtype="bfloat16",
                                           cast_optional_params=True, ctx=mx.cpu())
            net.hybridize(static_alloc=True, static_shape=True)
        return harness.samples_per_s(lambda i: net(data), steps, BATCH,
                                     sync=harness.mxnet_sync)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.01, "momentum": 0.9})
    if bf16:
        amp.init_trainer(trainer)

    step = harness.gluon_train_step(net, loss_fn, trainer, data, label, BATCH,
                                    amp if bf16 else None)
    return harness.samples_per_s(step, steps, BATCH, sync=harness.mxnet_sync)


def worker_torch(task, precision, steps):
    import torch
    import torch.nn.functional as F
    from gpu_train import _torch_net       # ResNet-18 v1 as Gluon's model zoo builds it
    torch.set_num_threads(2)
    torch.manual_seed(0)
    net = _torch_net("resnet18", CLASSES)
    data = torch.rand(BATCH, *SHAPE)
    label = torch.randint(0, CLASSES, (BATCH,))
    bf16 = precision == "bf16"
    if task == "inference":
        net.eval()

        def infer(i):
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16,
                                                        enabled=bf16):
                return net(data)
        return harness.samples_per_s(infer, steps, BATCH)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    def step(i):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(net(data), label)
        loss.backward()
        opt.step()
    return harness.samples_per_s(step, steps, BATCH)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--task", default="inference")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--frameworks", default="pymxnet,mxnet-1.9.1,pytorch")
    ap.add_argument("--out", default=os.path.join(harness.HERE, "results", "amp_cpu.md"))
    args = ap.parse_args()
    key = f"{args.task} {args.precision}"
    if args.worker:
        fn = worker_torch if args.worker == "pytorch" else worker_mxnet
        sps = fn(args.task, args.precision, args.steps)
        print(json.dumps({f"{key} samples/s": sps,
                          f"{key} peak RSS MB": harness.peak_rss_mb()}))
        return
    frameworks = args.frameworks.split(",")
    runs = harness.run_alternating(
        os.path.abspath(__file__), frameworks,
        lambda fw: [["--task", t, "--precision", p, "--steps", str(args.steps)]
                    for t, p in CASES], repeat=args.repeat)
    for row in runs.values():       # what bfloat16 gains over float32, per framework
        for task in ("inference", "training"):
            a, b = row.get(f"{task} fp32 samples/s"), row.get(f"{task} bf16 samples/s")
            if isinstance(a, float) and isinstance(b, float):
                row[f"{task} bf16 / fp32"] = b / a
    metrics = [f"{t} {p} samples/s" for t, p in CASES]
    mem = [f"{t} {p} peak RSS MB" for t, p in CASES]
    loads = ", ".join(f"{fw} {runs[fw].get('load', float('nan')):.1f}" for fw in frameworks)
    gains = "; ".join(
        f"{fw}: " + ", ".join(f"{t} {runs[fw][f'{t} bf16 / fp32']:.2f}x"
                              for t in ("inference", "training")
                              if f"{t} bf16 / fp32" in runs[fw]) for fw in frameworks)
    text = ["# bfloat16 AMP on the CPU: ResNet-18 v1, batch 16, 3x112x112", "",
            harness.machine_note(), "",
            f"Medians of {args.repeat} runs per framework, alternating; median load average "
            f"at the start of each framework's runs: {loads}. pymxnet and MXNet 1.9.1: "
            "hybridized, AMP through mx.contrib.amp (convert_hybrid_block for inference, "
            "amp.init for training); PyTorch eager with torch.autocast(bfloat16).", "",
            *harness.section(harness.THROUGHPUT, runs, metrics, lower_is_better=False,
                             unit="samples/s"),
            f"bfloat16 vs float32 (samples/s ratio, per framework): {gains}", "",
            *harness.section(harness.PEAK_RSS, runs, mem, unit="MB")]
    harness.write_report(args.out, text, runs)


if __name__ == "__main__":
    main()

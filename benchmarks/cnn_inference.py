"""Hybridized CNN inference on the CPU (ms per call, lower is better): Gluon model zoo's
ResNet-50 v1 at batch 1, 3x224x224, and ResNet-18 v1 at batch 16, 3x112x112, both
hybridized with static_alloc/static_shape and called outside autograd; pymxnet, pymxnet
with its BatchNorm fold off (MXNET_CPU_BN_FOLD=0: every Convolution, BatchNorm,
addition and ReLU its own call), the real MXNet 1.9.1 and the same networks in PyTorch
(eval mode, no_grad, eager), 2 threads each, medians of alternating runs.

    python benchmarks/cnn_inference.py [--repeat 3] [--out results/cnn_inference.md]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CASES = {
    "resnet50_v1 b1 224x224 ms": ("resnet50", 1, (3, 224, 224)),
    "resnet18_v1 b16 112x112 ms": ("resnet18", 16, (3, 112, 112)),
}
CALLS = 5
CLASSES = 1000


def _moving_stats(rng, shape, var):
    # moving statistics that are not the initial 0/1, so that nothing is an identity
    return rng.uniform(0.5, 1.5, shape) if var else rng.standard_normal(shape) * 0.1


def worker_mxnet():
    import numpy as np
    import mxnet as mx
    from mxnet import nd
    from mxnet.gluon.model_zoo import vision
    res = {}
    for case, (model, batch, shape) in CASES.items():
        mx.random.seed(0)
        net = vision.get_model(model + "_v1", classes=CLASSES)
        net.initialize(mx.init.Xavier())
        net.hybridize(static_alloc=True, static_shape=True)
        rng = np.random.RandomState(0)
        x = nd.array(rng.rand(batch, *shape))
        net(x).wait_to_read()           # (the parameters' shapes are deferred until then)
        for name, p in net.collect_params().items():
            if "running_" in name:
                p.set_data(nd.array(_moving_stats(rng, p.shape, "var" in name)))

        def calls(n):
            for _ in range(n):
                out = net(x)
            out.wait_to_read()
        calls(2)
        res[case] = harness.best_us(calls, CALLS, repeat=3) / 1e3
    return res


def worker_torch():
    import numpy as np
    import torch
    from gpu_train import _torch_net       # ResNet v1 as Gluon's model zoo builds it
    torch.set_num_threads(2)
    res = {}
    for case, (model, batch, shape) in CASES.items():
        torch.manual_seed(0)
        net = _torch_net(model, CLASSES).eval()
        rng = np.random.RandomState(0)
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(torch.tensor(_moving_stats(rng, m.running_mean.shape,
                                                                False)))
                m.running_var.copy_(torch.tensor(_moving_stats(rng, m.running_var.shape,
                                                               True)))
        x = torch.tensor(rng.rand(batch, *shape), dtype=torch.float32)

        def calls(n):
            with torch.no_grad():
                for _ in range(n):
                    net(x)
        calls(2)
        res[case] = harness.best_us(calls, CALLS, repeat=3) / 1e3
    return res


def main():
    args = harness.command_line("cnn_inference.md", worker_mxnet, worker_torch,
                                [("--repeat", {"type": int, "default": 3})])
    if args is None:
        return
    frameworks = ["pymxnet", "pymxnet-unfolded", "mxnet-1.9.1", "pytorch"]
    env = {"pymxnet-unfolded": {"MXNET_CPU_BN_FOLD": "0"}}
    runs = harness.run_alternating(os.path.abspath(__file__), frameworks, lambda fw: [[]],
                                   repeat=args.repeat, env_of=lambda fw: env.get(fw))
    loads = ", ".join(f"{fw} {r.pop('load', float('nan')):.1f}" for fw, r in runs.items())
    text = ["# Hybridized CNN inference on the CPU (ms per call, lower is better)", "",
            harness.machine_note(), "",
            f"2 threads per framework; medians of {args.repeat} runs per framework, "
            f"alternating (median load average at the start: {loads}). Each figure is the "
            f"best of 3 timings of {CALLS} calls. pymxnet-unfolded: pymxnet with "
            "MXNET_CPU_BN_FOLD=0. PyTorch: eval mode, no_grad, eager.", "",
            harness.table(runs, list(CASES), unit="ms"), ""]
    harness.write_report(args.out, text, runs)


if __name__ == "__main__":
    main()

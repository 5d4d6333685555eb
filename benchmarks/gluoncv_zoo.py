"""GluonCV 0.10.5's model zoo on pymxnet: construct, hybridize and run forward for each
net (pretrained=False, BatchNorm moving statistics drawn at random), and, with
``--compare``, the same nets with identical parameters and input in the real MXNet
1.9.1. A tool, not a CI dependency.

Setup (a throwaway venv; pymxnet comes from the worktree through PYTHONPATH):

    python3 -m venv ~/venv-gcv
    ~/venv-gcv/bin/pip install --no-deps gluoncv==0.10.5.post0
    ~/venv-gcv/bin/pip install tqdm portalocker Pillow pyyaml yacs autocfg requests scipy
    # for --compare: gluoncv beside MXNet 1.9.1 (pure-Python packages into a folder)
    ~/mxref/bin/pip install --no-deps --target /tmp/gcv_mxref gluoncv==0.10.5.post0 \
        tqdm portalocker yacs autocfg pyyaml Pillow requests urllib3 idna \
        charset-normalizer certifi

    PYTHONPATH=src ~/venv-gcv/bin/python benchmarks/gluoncv_zoo.py [--compare] \
        [--mxnet-python ~/mxref/bin/python] [--mxnet-path /tmp/gcv_mxref] [NET ...]

Each net runs in its own process (a time limit per net); the report lists every net as
``works`` (with output shapes and, compared, the largest difference from MXNet relative
to the output's scale) or ``fails`` with the error's last line.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# name -> input shape (batch 1); kwargs for get_model beyond pretrained=False
NETS = {
    "resnet18_v1": ((1, 3, 224, 224), {}),
    "resnet50_v1b": ((1, 3, 224, 224), {}),
    "resnet18_v2": ((1, 3, 224, 224), {}),
    "resnext50_32x4d": ((1, 3, 224, 224), {}),
    "se_resnext50_32x4d": ((1, 3, 224, 224), {}),
    "mobilenet1.0": ((1, 3, 224, 224), {}),
    "mobilenetv2_1.0": ((1, 3, 224, 224), {}),
    "mobilenetv3_small": ((1, 3, 224, 224), {}),
    "vgg11": ((1, 3, 224, 224), {}),
    "vgg16_bn": ((1, 3, 224, 224), {}),
    "alexnet": ((1, 3, 224, 224), {}),
    "squeezenet1.0": ((1, 3, 224, 224), {}),
    "densenet121": ((1, 3, 224, 224), {}),
    "inceptionv3": ((1, 3, 299, 299), {}),
    "darknet53": ((1, 3, 224, 224), {}),
    "cifar_resnet20_v1": ((1, 3, 32, 32), {}),
    "cifar_wideresnet16_10": ((1, 3, 32, 32), {}),
    "ssd_300_vgg16_atrous_voc": ((1, 3, 300, 300), {"pretrained_base": False}),
    "ssd_512_resnet50_v1_voc": ((1, 3, 512, 512), {"pretrained_base": False}),
    "ssd_512_mobilenet1.0_voc": ((1, 3, 512, 512), {"pretrained_base": False}),
    "yolo3_darknet53_voc": ((1, 3, 320, 320), {"pretrained_base": False}),
    "yolo3_mobilenet1.0_voc": ((1, 3, 320, 320), {"pretrained_base": False}),
    "faster_rcnn_resnet50_v1b_voc": ((1, 3, 320, 320), {"pretrained_base": False}),
    "center_net_resnet18_v1b_voc": ((1, 3, 256, 256), {"pretrained_base": False}),
    "fcn_resnet50_voc": ((1, 3, 224, 224), {"pretrained_base": False}),
    "fcn_resnet50_ade": ((1, 3, 224, 224), {"pretrained_base": False}),
    "psp_resnet50_ade": ((1, 3, 240, 240), {"pretrained_base": False,
                                             "crop_size": 240, "base_size": 260}),
    "deeplab_resnet50_ade": ((1, 3, 224, 224), {"pretrained_base": False,
                                                 "crop_size": 224, "base_size": 256}),
    "mask_rcnn_resnet18_v1b_coco": ((1, 3, 320, 320), {"pretrained_base": False}),
    "simple_pose_resnet18_v1b": ((1, 3, 256, 192), {"pretrained_base": False}),
    "mobile_pose_mobilenetv3_small": ((1, 3, 256, 192), {"pretrained_base": False}),
}
COMPARE = ["resnet18_v1", "resnet50_v1b", "resnext50_32x4d", "mobilenet1.0",
           "mobilenetv2_1.0", "mobilenetv3_small", "vgg11", "vgg16_bn", "densenet121",
           "cifar_resnet20_v1", "ssd_300_vgg16_atrous_voc", "yolo3_mobilenet1.0_voc",
           "fcn_resnet50_voc", "psp_resnet50_ade", "deeplab_resnet50_ade",
           "simple_pose_resnet18_v1b"]


def run_one(name, workdir, side):
    """Child process: build, hybridize, forward; save/load params and outputs in
    ``workdir`` (pymxnet saves the parameters and input, MXNet loads them)."""
    import numpy as np
    import mxnet as mx
    from gluoncv import model_zoo
    shape, kwargs = NETS[name]
    net = model_zoo.get_model(name, pretrained=False, **kwargs)
    params = os.path.join(workdir, f"{name}.params")
    xfile = os.path.join(workdir, f"{name}.input.npy")
    if side == "pymxnet":
        mx.random.seed(0)
        net.initialize(mx.init.Xavier(magnitude=2), force_reinit=True)
        x = np.random.RandomState(0).uniform(0, 1, shape).astype(np.float32)
        np.save(xfile, x)
    else:
        x = np.load(xfile)
        net.load_parameters(params)
    net.hybridize()
    try:
        out = net(mx.nd.array(x))
    except ValueError as err:
        # SymbolBlock parts (SSD's feature expander) give Xavier their 1-d parameters
        # in MXNet too: those nets get the default initializer instead
        if side != "pymxnet" or "Xavier initializer cannot" not in str(err):
            raise
        net.initialize(mx.init.Uniform(), force_reinit=True)
        out = net(mx.nd.array(x))
    if side == "pymxnet":
        # moving statistics other than the initial 0/1 (so that an inference BatchNorm
        # is no near-identity), saved with the parameters for MXNet
        rng = np.random.RandomState(1)
        for pname, prm in net.collect_params().items():
            if pname.endswith(("running_mean", "running_var")):
                v = rng.uniform(0.5, 1.5, prm.shape) if pname.endswith("var") else \
                    rng.standard_normal(prm.shape) * 0.1
                prm.set_data(mx.nd.array(v.astype(np.float32)))
        net.save_parameters(params)
    # the second call with a signature runs the bound executor (the first replays the
    # graph's operators: gluon/_cached_op.py); both sides report that call
    for _ in range(2):
        out = net(mx.nd.array(x))
    outs = out if isinstance(out, (list, tuple)) else [out]
    flat = []
    for o in outs:
        flat.extend(o if isinstance(o, (list, tuple)) else [o])
    arrays = [o.asnumpy() for o in flat]
    np.savez(os.path.join(workdir, f"{name}.{side}.npz"), *arrays)
    print(json.dumps({"shapes": [list(a.shape) for a in arrays]}))


def _child(python, name, workdir, side, env, timeout):
    cmd = [python, os.path.abspath(__file__), "--child", side, "--workdir", workdir, name]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if res.returncode != 0:
        lines = [ln for ln in res.stderr.strip().splitlines() if ln.strip()]
        return None, lines[-1] if lines else f"exit code {res.returncode}"
    return json.loads(res.stdout.strip().splitlines()[-1]), None


def _diff(workdir, name):
    import numpy as np
    a = np.load(os.path.join(workdir, f"{name}.pymxnet.npz"))
    b = np.load(os.path.join(workdir, f"{name}.mxnet.npz"))
    worst = 0.0
    for k in a.files:
        x, y = a[k].astype(np.float64), b[k].astype(np.float64)
        if x.shape != y.shape:
            return f"shape {x.shape} vs MXNet {y.shape}"
        scale = max(np.abs(y).max(), 1e-6)
        worst = max(worst, float(np.abs(x - y).max() / scale))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("nets", nargs="*")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--mxnet-python", default=os.path.expanduser("~/mxref/bin/python"))
    ap.add_argument("--mxnet-path", default="/tmp/gcv_mxref")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--child", choices=["pymxnet", "mxnet"])
    ap.add_argument("--workdir")
    ap.add_argument("--out", help="write the report as JSON here")
    args = ap.parse_args()
    if args.child:
        run_one(args.nets[0], args.workdir, args.child)
        return
    names = args.nets or list(NETS)
    report = {}
    with tempfile.TemporaryDirectory() as workdir:
        for name in names:
            info, err = _child(sys.executable, name, workdir, "pymxnet", dict(os.environ),
                               args.timeout)
            entry = {"status": "works" if err is None else "fails"}
            if err is None:
                entry["shapes"] = info["shapes"]
                if args.compare and name in COMPARE:
                    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
                    env["PYTHONPATH"] = args.mxnet_path
                    _, merr = _child(args.mxnet_python, name, workdir, "mxnet", env,
                                     args.timeout)
                    entry["vs_mxnet"] = merr or _diff(workdir, name)
            else:
                entry["error"] = err
            report[name] = entry
            print(f"{name:32s} {entry['status']:6s} "
                  f"{entry.get('vs_mxnet', '') if 'vs_mxnet' in entry else ''} "
                  f"{entry.get('error', '')}", flush=True)
    if args.out and args.out.endswith(".md"):
        works = sum(e["status"] == "works" for e in report.values())
        lines = ["# GluonCV 0.10.5 model zoo on pymxnet", "",
                 "`PYTHONPATH=src python benchmarks/gluoncv_zoo.py --compare --out "
                 "benchmarks/results/gluoncv_zoo.md` (pretrained=False, random "
                 "BatchNorm moving statistics, hybridized, the second forward of batch 1 "
                 "(the bound executor's); `vs MXNet`: the largest |pymxnet - MXNet 1.9.1| "
                 "over all outputs relative to the output's scale, same parameters and "
                 "input).", "", f"{works} of {len(report)} nets work.", "",
                 "| net | input | status | vs MXNet 1.9.1 | outputs / error |",
                 "|---|---|---|---|---|"]
        for name, e in report.items():
            vs = e.get("vs_mxnet", "")
            vs = f"{vs:.1e}" if isinstance(vs, float) else vs
            detail = e.get("error") or " ".join(str(tuple(s)) for s in e["shapes"][:3])
            lines.append(f"| {name} | {NETS[name][0][2:]} | {e['status']} | {vs} | "
                         f"{detail} |")
        with open(args.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    elif args.out:
        with open(args.out, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()

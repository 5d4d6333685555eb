"""Distributed training over MPI on one machine, in one run:

1. Allreduce of 1-64 MB float32 tensors on 2 and 4 local ranks: raw mpi4py
   (blocking ``Allreduce``, ``Iallreduce`` + ``Wait``, ``Iallreduce`` + a ``Test``
   loop, all in place) against the KVStores (``dist_sync`` pushpull with and without
   the per-call consistency check, ``horovod`` pushpull, and ``dist_sync`` with SGD on
   the store as gluon.Trainer drives it). Reports bandwidth (MB/s: tensor size / time
   per allreduce of the slowest rank, median over interleaved repetitions) and each
   store's overhead over the fastest raw variant (from median and from best times).
2. Training a small CNN on Fashion-MNIST (conv 3x3x16, relu, max-pool, conv 3x3x32,
   relu, max-pool, fc 128, relu, fc 10; batch 32 per worker, SGD lr 0.05 momentum
   0.9) on 1, 2 and 4 local ranks: pymxnet gluon.Trainer with kvstore='dist_sync'
   (started by ``mxnet.tools.launch``; 'pymxnet' as Trainer is, one pushpull per
   parameter; 'pymxnet-fused' with one pushpull of every key per step) against
   PyTorch DistributedDataParallel (gloo, CPU, started by torchrun) where
   ``$TORCH_PYTHON`` (default ~/torchref/bin/python) exists. Reports samples/s over
   all workers (best of interleaved trials) and the scaling efficiency.

Every rank runs with 1 thread (OMP_NUM_THREADS=1, MXNET_CPU_WORKER_NTHREADS=1,
torch.set_num_threads(1)); on a machine with fewer cores than ranks the ranks share
cores, so compare frameworks at the same rank count rather than expecting scaling.

    python benchmarks/dist_scaling.py [--ranks 1,2,4] [--sizes 1,4,16,64] [--steps 30]
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

BATCH = 32
WARMUP = 3
THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "MXNET_CPU_WORKER_NTHREADS": "1"}


# --- workers (run under MPI or torchrun) ------------------------------------------------------
def allreduce_worker(sizes_mb, min_reps):
    import numpy as np
    import mxnet as mx
    kv = mx.kv.create("dist_sync")          # initialises MPI
    from mpi4py import MPI
    kv_nocheck = mx.kv.create("dist_sync")
    hvd = mx.kv.create("horovod")
    kv_sgd = mx.kv.create("dist_sync")
    kv_sgd.set_optimizer(mx.optimizer.SGD(learning_rate=1e-9))
    comm = MPI.COMM_WORLD.Dup()
    rank = comm.Get_rank()
    results = {}
    for mb in sizes_mb:
        n = int(mb * 2 ** 20) // 4
        raw = np.zeros(n, np.float32)     # zeros: repeated in-place sums stay finite
        nds = {name: mx.nd.zeros((n,)) for name in ("kv", "nocheck", "hvd", "sgd")}
        weight = mx.nd.zeros((n,))
        key = int(mb * 1000)
        kv.init(key, nds["kv"])
        kv_nocheck.init(key, nds["nocheck"])
        kv_sgd.init(key, weight)

        def nocheck():
            kv_nocheck._comm.check_every_call = False
            try:
                kv_nocheck.pushpull(key, nds["nocheck"])
            finally:
                kv_nocheck._comm.check_every_call = True

        variants = {
            "mpi4py Allreduce": lambda: comm.Allreduce(MPI.IN_PLACE, raw),
            "mpi4py Iallreduce+Wait": lambda: comm.Iallreduce(MPI.IN_PLACE, raw).Wait(),
            "mpi4py Iallreduce+Test loop": lambda: _poll(comm.Iallreduce(MPI.IN_PLACE,
                                                                          raw)),
            "kv dist_sync pushpull": lambda: (kv.pushpull(key, nds["kv"]),
                                              nds["kv"].wait_to_read()),
            "kv dist_sync pushpull (MXNET_KVSTORE_CHECK=0)": lambda: (
                nocheck(), nds["nocheck"].wait_to_read()),
            "kv horovod pushpull": lambda: (hvd.pushpull(key, nds["hvd"]),
                                            nds["hvd"].wait_to_read()),
            "kv dist_sync + SGD on the store": lambda: (
                kv_sgd.pushpull(key, nds["sgd"], out=weight), weight.wait_to_read()),
        }
        reps = max(min_reps, int(64 // mb))
        times = {name: [] for name in variants}
        for _ in range(reps + 1):              # the first round warms up
            for name, fn in variants.items():
                comm.Barrier()
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
        for name, ts in times.items():
            slowest = np.array(ts[1:])
            comm.Allreduce(MPI.IN_PLACE, slowest, op=MPI.MAX)
            results[f"{mb:g} MB {name}"] = float(np.median(slowest))
            results[f"{mb:g} MB {name} best"] = float(np.min(slowest))
        # let the stored copies and the engine finish before the next size
        mx.nd.waitall()
    mx.nd.waitall()
    if rank == 0:
        print(json.dumps(results), flush=True)


def _poll(req):
    while not req.Test():
        pass


def _shard(d, rank, size):
    n = len(d["train_y"]) // size
    return d["train_x"][rank * n:(rank + 1) * n], d["train_y"][rank * n:(rank + 1) * n]


def _fuse_trainer_pushpull(trainer):
    """Make trainer send all gradients in one pushpull call per step (what
    gluon.Trainer would gain by calling the store once with lists of keys)."""
    def allreduce_grads():
        keys, grads, datas = [], [], []
        for i, param in enumerate(trainer._params):
            if param.grad_req != "null":
                keys.append(i)
                grads.append(param.list_grad())
                datas.append(param.list_data())
        trainer._kvstore.pushpull(keys, grads, out=datas)
    trainer._allreduce_grads = allreduce_grads


def train_pymxnet_worker(data_file, steps, fused=False):
    import numpy as np
    import mxnet as mx
    from mxnet import autograd, gluon
    from mxnet.gluon import nn
    kv = mx.kv.create("dist_sync")
    rank, size = kv.rank, kv.num_workers
    x_all, y_all = _shard(np.load(data_file), rank, size)
    mx.random.seed(0)
    net = nn.HybridSequential()
    net.add(nn.Conv2D(16, 3, activation="relu"), nn.MaxPool2D(2),
            nn.Conv2D(32, 3, activation="relu"), nn.MaxPool2D(2), nn.Flatten(),
            nn.Dense(128, activation="relu"), nn.Dense(10))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.05, "momentum": 0.9}, kvstore=kv)
    if fused:
        _fuse_trainer_pushpull(trainer)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    batches = len(y_all) // BATCH
    step_time = 0.0
    for i in range(WARMUP + steps):
        if i == WARMUP:
            mx.nd.waitall()
            kv._barrier()
            t0 = time.perf_counter()
        j = i % batches
        x = mx.nd.array(x_all[j * BATCH:(j + 1) * BATCH])
        y = mx.nd.array(y_all[j * BATCH:(j + 1) * BATCH])
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        ts = time.perf_counter()
        trainer.step(BATCH)
        if i >= WARMUP:
            step_time += time.perf_counter() - ts
    mx.nd.waitall()
    kv._barrier()
    elapsed = time.perf_counter() - t0
    if rank == 0:
        print(json.dumps({"samples/s": steps * BATCH * size / elapsed,
                          "trainer.step share": step_time / elapsed,
                          "final loss": float(loss.mean().asscalar())}), flush=True)


def train_pytorch_worker(data_file, steps):
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch import nn
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    x_all, y_all = _shard(np.load(data_file), rank, size)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(16, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(32 * 5 * 5, 128), nn.ReLU(), nn.Linear(128, 10))
    model = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    batches = len(y_all) // BATCH
    step_time = 0.0
    for i in range(WARMUP + steps):
        if i == WARMUP:
            dist.barrier()
            t0 = time.perf_counter()
        j = i % batches
        x = torch.from_numpy(x_all[j * BATCH:(j + 1) * BATCH])
        y = torch.from_numpy(y_all[j * BATCH:(j + 1) * BATCH]).long()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        ts = time.perf_counter()
        loss.backward()          # DDP allreduces the gradients inside backward
        opt.step()
        if i >= WARMUP:
            step_time += time.perf_counter() - ts
    dist.barrier()
    elapsed = time.perf_counter() - t0
    if rank == 0:
        print(json.dumps({"samples/s": steps * BATCH * size / elapsed,
                          "trainer.step share": step_time / elapsed,
                          "final loss": float(loss.item())}), flush=True)
    dist.destroy_process_group()


# --- the parent ---------------------------------------------------------------------------------
def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd, env_extra, timeout):
    env = dict(os.environ)
    env.update(THREAD_ENV)
    env.update(env_extra)
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr or proc.stdout)[-600:]}
    return json.loads(lines[-1])


def run_pymxnet(n, args, timeout=900):
    me = os.path.abspath(__file__)
    cmd = [sys.executable, "-m", "mxnet.tools.launch", "-n", str(n), "--launcher", "local",
           sys.executable, me, *args]
    return _run(cmd, {"PYTHONPATH": harness.SRC + os.pathsep +
                      os.environ.get("PYTHONPATH", "")}, timeout)


def run_pytorch(n, args, timeout=900):
    py = harness.interpreters()["pytorch"]
    if not os.path.exists(py):
        return {"error": f"interpreter {py} not found"}
    cmd = [py, "-m", "torch.distributed.run", "--nproc_per_node", str(n),
           "--master_addr", "127.0.0.1", "--master_port", str(_free_port()),
           os.path.abspath(__file__), *args]
    return _run(cmd, {"PYTHONPATH": ""}, timeout)


def make_data(path, n_train):
    sys.path.insert(0, harness.SRC)
    import numpy as np
    from mxnet.test_utils import get_mnist
    m = get_mnist()
    np.savez(path, train_x=m["train_data"][:n_train], train_y=m["train_label"][:n_train])


def fmt(v, spec=".3g"):
    return format(v, spec) if isinstance(v, (int, float)) else "n/a"


RAW = ["mpi4py Allreduce", "mpi4py Iallreduce+Wait", "mpi4py Iallreduce+Test loop"]
OURS = ["kv dist_sync pushpull", "kv dist_sync pushpull (MXNET_KVSTORE_CHECK=0)",
        "kv horovod pushpull"]
WITH_UPDATE = "kv dist_sync + SGD on the store"


def allreduce_report(sizes, ranks, results):
    names = RAW + OURS + [WITH_UPDATE]
    lines = []
    for n in ranks:
        res = results.get(n, {})
        if "error" in res:
            lines += [f"{n} ranks: error: {res['error']}", ""]
            continue
        head = ["size"] + [f"{nm} (MB/s)" for nm in names] + \
            [f"{nm}: overhead (median / best)" for nm in OURS]
        lines += [f"**{n} ranks** (MB/s from the median time; overhead over the fastest "
                  "raw mpi4py variant, from median and from best times)", "",
                  "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for mb in sizes:
            med = {nm: res.get(f"{mb:g} MB {nm}") for nm in names}
            best = {nm: res.get(f"{mb:g} MB {nm} best") for nm in names}
            cells = [f"{mb:g} MB"] + [fmt(mb / med[nm]) if med[nm] else "n/a"
                                       for nm in names]
            raw_med = min((med[nm] for nm in RAW if med[nm]), default=None)
            raw_best = min((best[nm] for nm in RAW if best[nm]), default=None)
            for nm in OURS:
                if med[nm] and best[nm] and raw_med and raw_best:
                    cells.append(f"{100 * (med[nm] / raw_med - 1):+.0f}% / "
                                 f"{100 * (best[nm] / raw_best - 1):+.0f}%")
                else:
                    cells.append("n/a")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def training_report(ranks, runs):
    fws = list(runs)
    ours = [fw for fw in fws if fw.startswith("pymxnet")]
    ratios = [fw for fw in ours if "pytorch" in runs]
    head = ["ranks"] + [f"{fw} samples/s" for fw in fws] + \
        [f"{fw} efficiency" for fw in fws] + [f"{fw} step+comm share" for fw in fws] + \
        [f"{fw} / pytorch" for fw in ratios]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n in ranks:
        cells = [str(n)]
        speed = {fw: runs[fw].get(n, {}).get("samples/s") for fw in fws}
        cells += [fmt(speed[fw]) for fw in fws]
        for fw in fws:
            one = runs[fw].get(1, {}).get("samples/s")
            cells.append(f"{speed[fw] / (n * one):.2f}" if speed[fw] and one else "n/a")
        cells += [fmt(runs[fw].get(n, {}).get("trainer.step share"), ".2f") for fw in fws]
        for fw in ratios:
            a, b = speed[fw], speed["pytorch"]
            cells.append(f"{a / b:.2f}x" if a and b else "n/a")
        lines.append("| " + " | ".join(cells) + " |")
    errors = [f"- {fw}, {n} ranks: {r['error']}" for fw in fws
              for n, r in runs[fw].items() if "error" in r]
    return lines + ([""] + ["Errors:"] + errors if errors else [])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", choices=["allreduce", "train-pymxnet",
                                         "train-pymxnet-fused", "train-pytorch"])
    ap.add_argument("--sizes", default="1,4,16,64")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--train", type=int, default=8192)
    ap.add_argument("--trials", type=int, default=3,
                    help="training runs per configuration (the best is reported)")
    ap.add_argument("--data")
    ap.add_argument("--frameworks", default="pymxnet,pymxnet-fused,pytorch",
                    help="pymxnet: gluon.Trainer as is (one pushpull per parameter); "
                         "pymxnet-fused: one pushpull with every key per step")
    ap.add_argument("--skip", default="", help="'allreduce' or 'train' to skip a part")
    ap.add_argument("--out", default=os.path.join(harness.HERE, "results",
                                                  "dist_scaling.md"))
    args = ap.parse_args()
    sizes = [float(s) for s in args.sizes.split(",")]
    if args.worker == "allreduce":
        return allreduce_worker(sizes, args.reps)
    if args.worker in ("train-pymxnet", "train-pymxnet-fused"):
        return train_pymxnet_worker(args.data, args.steps, args.worker.endswith("fused"))
    if args.worker == "train-pytorch":
        return train_pytorch_worker(args.data, args.steps)

    ranks = [int(r) for r in args.ranks.split(",")]
    text = ["# Distributed training over MPI on one machine", "", harness.machine_note(),
            ""]
    if "allreduce" not in args.skip:
        results = {}
        for n in [r for r in ranks if r > 1]:
            results[n] = run_pymxnet(n, ["--worker", "allreduce", "--sizes", args.sizes,
                                         "--reps", str(args.reps)])
        text += ["## Allreduce bandwidth (float32 sum; MB/s = tensor MB / seconds per "
                 "allreduce, higher is better; overhead < 0 means faster than raw "
                 "Allreduce)", ""] + allreduce_report(sizes, [r for r in ranks if r > 1],
                                                      results)
    if "train" not in args.skip:
        runs = {}
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "fashion_mnist.npz")
            make_data(data, args.train)
            common = ["--data", data, "--steps", str(args.steps)]
            fws = args.frameworks.split(",")
            runs = {fw: {} for fw in fws}
            # Trials interleave frameworks and rank counts; the best of them is kept,
            # which is the least disturbed by other load on the machine.
            for _ in range(args.trials):
                for n in ranks:
                    for fw in fws:
                        runner = run_pytorch if fw == "pytorch" else run_pymxnet
                        res = runner(n, ["--worker", f"train-{fw}", *common])
                        old = runs[fw].get(n)
                        if old is None or "error" in old or (
                                "error" not in res and res["samples/s"] > old["samples/s"]):
                            runs[fw][n] = res
        text += ["## Fashion-MNIST CNN training throughput (all workers, batch "
                 f"{BATCH} per worker, {args.steps} timed steps after {WARMUP} warm-up, "
                 f"best of {args.trials} interleaved trials; "
                 "efficiency = samples/s / (ranks x samples/s at 1 rank); step+comm "
                 "share = fraction of the time in trainer.step (pymxnet: allreduce + "
                 "update) or backward+step (PyTorch DDP: backward overlaps the "
                 "allreduce))", ""] + training_report(ranks, runs)
    out = "\n".join(text)
    print(out)
    with open(args.out, "w") as f:
        f.write(out + "\n")


if __name__ == "__main__":
    main()

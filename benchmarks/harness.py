"""Run one benchmark under several frameworks in one go, each in its own process with
the same thread settings, and print a side-by-side table with ratios.

Interpreters: this one for pymxnet (src/ on the path); ``$MXNET_REF_PYTHON`` (default
~/mxref/bin/python, a venv with ``mxnet==1.9.1 "numpy<1.24"``) for the real MXNet;
``$TORCH_PYTHON`` (default ~/torchref/bin/python, ``torch==2.13.0`` CPU) for PyTorch.
A framework whose interpreter is missing is reported as unavailable, not skipped
silently.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")


def interpreters():
    return {
        "pymxnet": sys.executable,
        "mxnet-1.9.1": os.path.expanduser(os.environ.get("MXNET_REF_PYTHON",
                                                         "~/mxref/bin/python")),
        "pytorch": os.path.expanduser(os.environ.get("TORCH_PYTHON", "~/torchref/bin/python")),
    }


def benchmark_env():
    """The environment every framework's worker runs in.

    Some machines here set OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE (old OpenBLAS builds
    misbehave on their CPUs); they pin current OpenBLAS builds to slower kernels. The
    benchmarks drop both for every framework alike, in the workers only (tests and CI
    keep them), and report which BLAS kernel pymxnet's NumPy then runs.
    """
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    return env


def blas_kernel():
    """The BLAS library and kernel NumPy uses in a worker's environment."""
    code = ("import json, numpy, threadpoolctl; print(json.dumps([(i.get('internal_api'), "
            "i.get('architecture'), i.get('version')) for i in threadpoolctl.threadpool_info() "
            "if i.get('user_api') == 'blas']))")
    try:
        out = subprocess.run([sys.executable, "-c", code], env=benchmark_env(),
                             capture_output=True, text=True, timeout=60).stdout
        return ", ".join("/".join(str(x) for x in lib) for lib in json.loads(out))
    except Exception as err:  # threadpoolctl missing: say so rather than guess
        return f"unknown ({type(err).__name__})"


def run_worker(script, framework, args=(), env_extra=None, threads=2, timeout=1800):
    """Run ``script --worker framework`` under that framework's interpreter; return the
    JSON object it prints on its last line (or {'error': ...})."""
    py = interpreters()["pymxnet" if framework.startswith("pymxnet") else
                        "pytorch" if framework == "pytorch" else "mxnet-1.9.1"]
    if not os.path.exists(py):
        return {"error": f"interpreter {py} not found"}
    env = benchmark_env()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "MXNET_CPU_WORKER_NTHREADS"):
        env[var] = str(threads)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "") \
        if framework.startswith("pymxnet") else ""
    env.update(env_extra or {})
    proc = subprocess.run([py, script, "--worker", framework, *args], env=env,
                          capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr or proc.stdout)[-800:]}
    return json.loads(lines[-1])


# pymxnet with oneDNN off (its NumPy kernels), for the oneDNN-vs-NumPy columns
NUMPY_VARIANT = ("pymxnet-numpy", {"MXNET_MKLDNN_ENABLED": "0"})


def _median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def run_alternating(script, frameworks, args_of, repeat=3, env_of=None, threads=2):
    """Run every framework's worker ``repeat`` times, round-robin (A, B, C, A, B, C...),
    so that a change in the machine's load hits every framework alike; returns
    ``{framework: {metric: median}}`` (plus ``'load'``: the median 1-minute load average
    at the start of its runs). ``args_of(fw)``: the worker's arguments (a list of
    argument lists: several workers whose results merge); ``env_of(fw)``: extra
    environment variables."""
    runs = {fw: [] for fw in frameworks}
    for _ in range(repeat):
        for fw in frameworks:
            merged = {"load": os.getloadavg()[0]}
            for i, a in enumerate(args_of(fw)):
                env = env_of(fw) if env_of else None
                add_result(merged, run_worker(script, fw, a, env, threads), str(i))
            runs[fw].append(merged)
    out = {}
    for fw, rs in runs.items():
        row = {}
        for key in {k for r in rs for k in r}:
            vals = [r[key] for r in rs if isinstance(r.get(key), (int, float))]
            if vals:
                row[key] = _median(vals)
            else:
                row[key] = next(r[key] for r in rs if key in r)
        out[fw] = row
    return out


def table(results, metrics, baseline="mxnet-1.9.1", lower_is_better=True, unit=""):
    """Markdown table: one row per metric, one column per framework, plus ratios of
    pymxnet to each other framework (>1 means pymxnet is better)."""
    fws = list(results)
    head = ["case"] + [f"{f} ({unit})" for f in fws]
    others = [f for f in fws if not f.startswith("pymxnet")]
    ours = [f for f in fws if f.startswith("pymxnet")]
    for o in ours:
        for f in others:
            head.append(f"{o} vs {f}")
    # pymxnet's own variants (e.g. pymxnet-numpy: oneDNN off) against its default
    variants = [(ours[0], o) for o in ours[1:]]
    pairs = [(o, f) for o in ours for f in others] + variants
    head += [f"{ours[0]} vs {o}" for _, o in variants]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in metrics:
        vals = [results[f].get(m) for f in fws]
        cells = [m] + [("%.3g" % v) if isinstance(v, (int, float)) else
                       ("n/a" if v is None else str(v)) for v in vals]
        for o, f in pairs:
            a, b = results[o].get(m), results[f].get(m)
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a and b:
                cells.append("%.2fx" % ((b / a) if lower_is_better else (a / b)))
            else:
                cells.append("n/a")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def machine_note():
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{os.cpu_count()} cores, load average {load:.2f} at the start of the run; "
            f"NumPy BLAS: {blas_kernel()}; pymxnet with its defaults (engine: "
            f"{os.environ.get('MXNET_ENGINE_TYPE', 'ThreadedEnginePerDevice')}, BLAS threads: "
            f"{os.environ.get('MXNET_BLAS_NUM_THREADS', '1')})")


def peak_rss_mb():
    """This process's peak resident memory in MB (for a worker's result): VmHWM, the
    high-water mark of its own address space. (getrusage's ru_maxrss survives exec on
    Linux, so a worker would report its parent's peak when that was larger.)"""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def add_result(row, result, label):
    """Merge a worker's result into a framework's row; a failed run is kept as
    ``'<label> error'`` so the report lists it."""
    row.update(result if "error" not in result else {f"{label} error": result["error"]})


THROUGHPUT = "Throughput (higher is better; ratio > 1: pymxnet faster):"
PEAK_RSS = "Peak resident memory of the process (lower is better):"


def section(heading, results, metrics, **table_args):
    """A heading and its table, as report lines."""
    return [heading, "", table(results, metrics, **table_args), ""]


def write_report(path, lines, results):
    """Add the errors any run reported to the report's lines, print the report and
    write it to ``path``."""
    errors = {f"{fw} {k}": v for fw, r in results.items() for k, v in r.items()
              if "error" in k}
    if errors:
        lines = lines + ["Errors:", *[f"- {k}: {v}" for k, v in errors.items()]]
    out = "\n".join(lines)
    print(out)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(out + "\n")
    with open(os.path.splitext(path)[0] + ".json", "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)


def samples_per_s(step, steps, batch, warmup=2, sync=None):
    """Samples/s over ``steps`` calls of ``step(i)`` after ``warmup`` untimed ones;
    ``sync(result)`` waits for a step's work (an asynchronous engine)."""
    for i in range(warmup):
        r = step(i)
        if sync is not None:
            sync(r)
    t0 = time.perf_counter()
    for i in range(steps):
        r = step(i)
    if sync is not None:
        sync(r)
    return steps * batch / (time.perf_counter() - t0)


def gluon_train_step(net, loss_fn, trainer, data, label, batch, amp=None):
    """One Gluon training step as a function: record the loss, backward, and
    ``trainer.step(batch)``; with ``amp`` (mx.contrib.amp, after
    ``amp.init_trainer(trainer)``) the loss is scaled by ``amp.scale_loss`` first. The
    step returns the loss and ignores its arguments (samples_per_s passes the index)."""
    from mxnet import autograd

    def step(*_):
        with autograd.record():
            loss = loss_fn(net(data), label)
            if amp is not None:
                with amp.scale_loss(loss, trainer) as scaled:
                    pass
            else:
                scaled = loss
        autograd.backward(scaled)
        trainer.step(batch)
        return loss
    return step


def mxnet_sync(loss):
    """Wait for an MXNet training step (its loss, then every pending operation)."""
    import mxnet as mx
    loss.wait_to_read()
    mx.nd.waitall()


def training_benchmark(script, title, defaults, variants, worker_mxnet, worker_torch,
                       note="", steps_of=None):
    """The driver of a training-throughput benchmark with an imperative and a hybridized
    mode (gluon_train.py, resnet_cpu.py): as a worker (``--worker FW``), run one mode and
    print its samples/s and peak RSS; as the parent, run every framework's workers in
    alternation and write the report (throughput, hybridized / imperative per
    framework, peak RSS). ``defaults``: {'steps', 'frameworks', 'out'};
    ``variants``: {framework: extra environment}; ``worker_mxnet(steps, hybridize)`` /
    ``worker_torch(steps)``: samples/s; ``note``: what the variants are;
    ``steps_of(fw, steps)``: a framework's step count (default: ``steps``)."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--mode", default="imperative")
    ap.add_argument("--steps", type=int, default=defaults["steps"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--frameworks", default=defaults["frameworks"])
    ap.add_argument("--out", default=os.path.join(HERE, "results", defaults["out"]))
    args = ap.parse_args()
    if args.worker:
        if args.worker == "pytorch":
            sps = worker_torch(args.steps)
        else:
            sps = worker_mxnet(args.steps, args.mode == "hybridized")
        print(json.dumps({f"{args.mode} samples/s": sps,
                          f"{args.mode} peak RSS MB": peak_rss_mb()}))
        return
    frameworks = args.frameworks.split(",")

    def modes(fw):
        ms = ("imperative",) if fw == "pytorch" else ("imperative", "hybridized")
        steps = args.steps if steps_of is None else steps_of(fw, args.steps)
        return [["--mode", m, "--steps", str(steps)] for m in ms]
    runs = run_alternating(os.path.abspath(script), frameworks, modes, repeat=args.repeat,
                           env_of=lambda fw: dict(variants.get(fw, {})))
    for row in runs.values():        # hybridize's gain, per framework
        imp, hyb = row.get("imperative samples/s"), row.get("hybridized samples/s")
        if isinstance(imp, float) and isinstance(hyb, float):
            row["hybridized / imperative"] = hyb / imp
    metrics = ["imperative samples/s", "hybridized samples/s"]
    mem = ["imperative peak RSS MB", "hybridized peak RSS MB"]
    loads = ", ".join(f"{fw} {runs[fw].get('load', float('nan')):.1f}" for fw in frameworks)
    text = [f"# {title}", "", machine_note(), "",
            f"Medians of {args.repeat} runs per framework, alternating; median load average "
            f"at the start of each framework's runs: {loads}. {note}PyTorch runs eagerly "
            "(no hybridized column).", "",
            *section(THROUGHPUT, runs, metrics, lower_is_better=False, unit="samples/s"),
            "Hybridized vs imperative (samples/s ratio, per framework): " + ", ".join(
                f"{fw} {runs[fw]['hybridized / imperative']:.2f}x" for fw in frameworks
                if "hybridized / imperative" in runs[fw]), "",
            *section(PEAK_RSS, runs, mem, unit="MB")]
    write_report(args.out, text, runs)


def command_line(report_name, worker_mxnet, worker_torch, extra=()):
    """The command line of a side-by-side benchmark script: with ``--worker FRAMEWORK``
    run that framework's worker (``worker_torch`` for PyTorch, ``worker_mxnet`` for
    pymxnet and MXNet 1.9.1), print its JSON result and return None; else return the
    parsed arguments: ``--out`` (default results/<report_name>) and ``extra``, pairs of
    (flag, add_argument keywords)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--out", default=os.path.join(HERE, "results", report_name))
    for flag, kwargs in extra:
        ap.add_argument(flag, **kwargs)
    args = ap.parse_args()
    if not args.worker:
        return args
    res = worker_torch() if args.worker == "pytorch" else worker_mxnet()
    print(json.dumps(res))
    return None


def one_thread_comparison(script, report_name, worker_mxnet, worker_torch, title,
                          describe, cases, unit):
    """The main() of a side-by-side benchmark run on one thread per framework: pymxnet,
    MXNet 1.9.1 and PyTorch, alternating, ``--repeat`` runs each (medians), and with
    ``--baseline-src`` another checkout's src/ as a pymxnet column (e.g. a git worktree
    of an earlier commit, named by ``--baseline-name``). Writes a report headed
    ``title`` whose method line ends with ``describe``, one row per case."""
    args = command_line(report_name, worker_mxnet, worker_torch,
                        [("--repeat", {"type": int, "default": 3}),
                         ("--baseline-src", {"help": "another checkout's src/ to time "
                                                     "as a column"}),
                         ("--baseline-name", {"default": "pymxnet-baseline"})])
    if args is None:
        return
    frameworks = ["pymxnet", "mxnet-1.9.1", "pytorch"]
    env = {}
    if args.baseline_src:
        frameworks.insert(1, args.baseline_name)
        env[args.baseline_name] = {"PYTHONPATH": os.path.abspath(args.baseline_src)}
    runs = run_alternating(os.path.abspath(script), frameworks, lambda fw: [[]],
                           repeat=args.repeat, env_of=lambda fw: env.get(fw), threads=1)
    loads = ", ".join(f"{fw} {r.pop('load', float('nan')):.1f}" for fw, r in runs.items())
    text = [f"# {title}", "", machine_note(), "",
            f"1 thread per framework; medians of {args.repeat} runs per framework, "
            f"alternating (median load average at the start: {loads}). {describe}", "",
            table(runs, cases, unit=unit), ""]
    write_report(args.out, text, runs)


def best_us(fn, n, repeat=5):
    """Per-call cost in µs of ``fn(n)`` (a loop of n calls): the best of ``repeat``
    timings, which is the least disturbed by the rest of the machine."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(n)
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


def source_tree_worker(script, args, src=None):
    """Run ``script --worker ARGS`` in a fresh 1-thread process that imports pymxnet from
    ``src`` (another checkout's src/; None: this tree) and return the JSON it prints last:
    the host-time tools' way of timing two trees in one run."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if src:
        env["PYTHONPATH"] = os.path.abspath(src) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, script, "--worker", *map(str, args)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def tree_comparison(trees, runs, repeat):
    """The lowest figure per tree and row: each of ``runs`` (``run(src) -> {row: value}``)
    is run ``repeat`` times per tree, the trees alternating; ``trees``: [(name, src)].
    Rows are tuples of their label cells."""
    best = {name: {} for name, _ in trees}
    for run in runs:
        for _ in range(repeat):
            for name, src in trees:
                for row, value in run(src).items():
                    best[name][row] = min(best[name].get(row, value), value)
    return best


def tree_table(labels, best, fmt="%.1f"):
    """Markdown lines: a column per label, one per tree (µs) and, with two trees, this
    tree's speed-up over the second; a row per row of the first tree's figures."""
    names = list(best)
    lines = ["| " + " | ".join(labels) + " | " + " | ".join(f"{n} (µs)" for n in names) +
             (f" | this tree vs {names[1]} |" if len(names) > 1 else " |"),
             "|" + "---|" * (len(labels) + len(names) + (len(names) > 1))]
    for row in best[names[0]]:
        cells = list(row) + [fmt % best[n][row] for n in names]
        if len(names) > 1:
            cells.append(f"{best[names[1]][row] / best[names[0]][row]:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def tree_arguments(ap, report):
    """The host-time tools' command line: --out (default benchmarks/results/REPORT),
    --baseline-src/--baseline-name (a second tree), --repeat."""
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "results", report))
    ap.add_argument("--baseline-src", help="another checkout's src/ to time beside this "
                    "one (e.g. a git worktree of an earlier commit)")
    ap.add_argument("--baseline-name", default="baseline")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tree, alternating")


def trees_of(args):
    """[(name, src)]: this tree, and the baseline when --baseline-src names one."""
    return [("this tree", None)] + ([(args.baseline_name, args.baseline_src)]
                                    if args.baseline_src else [])


def write_text(path, lines):
    """Print the report and write it to ``path``."""
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def torch_simple_cnn():
    """Seed 003's SimpleCNN (conv 3x3 32, pool, conv 3x3 64, pool, 3136-128-10) in
    PyTorch: the comparison network of gluon_train.py and gpu_train.py."""
    import torch.nn as tnn
    import torch.nn.functional as F

    class SimpleCNN(tnn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = tnn.Conv2d(1, 32, 3, 1, 1)
            self.conv2 = tnn.Conv2d(32, 64, 3, 1, 1)
            self.fc1 = tnn.Linear(3136, 128)
            self.fc2 = tnn.Linear(128, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2, 2)
            return self.fc2(F.relu(self.fc1(x.flatten(1))))
    return SimpleCNN()

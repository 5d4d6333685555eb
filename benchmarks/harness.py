"""Run one benchmark under several frameworks in one go, each in its own process with
the same thread settings, and print a side-by-side table with ratios.

Interpreters: this one for pymxnet (src/ on the path); ``$MXNET_REF_PYTHON`` (default
~/mxref/bin/python, a venv with ``mxnet==1.9.1 "numpy<1.24"``) for the real MXNet;
``$TORCH_PYTHON`` (default ~/torchref/bin/python, ``torch==2.13.0`` CPU) for PyTorch.
A framework whose interpreter is missing is reported as unavailable, not skipped
silently.
"""
import json
import os
import subprocess
import sys

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
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in metrics:
        vals = [results[f].get(m) for f in fws]
        cells = [m] + [("%.3g" % v) if isinstance(v, (int, float)) else
                       ("n/a" if v is None else str(v)) for v in vals]
        for o in ours:
            for f in others:
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
    """This process's peak resident memory in MB (for a worker's result)."""
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

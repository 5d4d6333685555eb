"""The summary.txt lines of one gpu_train.py worker run, for the device check scripts:

    python3 benchmarks/gpu/train_summary.py TRAIN_LOG NAME

reads the part of TRAIN_LOG from the line ``### NAME`` to the next ``### `` line (that
worker's output: its last JSON line is the result) and prints up to three distinct lines mentioning CUDA
graphs, then samples/s (and ms/step when given), the peak GPU memory (with the CUDA-graph pool when there is
one), the AMP dtype and the final loss, or why there is no result."""
import json
import sys


def main(log, name):
    text = open(log).read().split("### " + name + "\n")[-1].split("\n### ")[0]
    for line in sorted({ln.strip() for ln in text.splitlines() if "CUDA graph" in ln})[:3]:
        print("    " + line[:220])
    res = None
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                res = json.loads(line)
            except ValueError:
                pass
    if res is None:
        print(f"  {name}: no result (see {log})")
    elif "error" in res:
        print(f"  {name}: {res['error'][:200]}")
    else:
        mem = res.get("peak used GB") or res.get("peak allocated GB")
        pool = res.get("graph pool GB")
        print(f"  {name}: {res.get('samples/s', 0):.1f} samples/s"
              + (f", {res['ms/step']:.2f} ms/step" if "ms/step" in res else "")
              + (f", peak GB {mem}" if mem is not None else "")
              + (f" (graph pool {pool:.2f})" if pool else "")
              + (f", amp {res['amp dtype']}" if res.get("amp dtype") else "")
              + f", final loss {res.get('final loss')}")


if __name__ == "__main__":
    main(*sys.argv[1:3])

"""Measure KVStore push/pull bandwidth over array sizes: ``mxnet-bandwidth``.

Each round pushes one array per device for a key and pulls the merged value back to
every device (what data-parallel training does once per gradient), for every size in
``--sizes``. On one process it measures a ``local`` or ``device`` store over the
devices of ``--gpus`` (or ``--cpus N`` CPU contexts); started on several MPI ranks::

    mxnet-launch -n 4 mxnet-bandwidth --kv-store dist_sync
    mpiexec -n 4 python -m mxnet.tools.bandwidth --kv-store dist_device_sync

it measures the distributed store, and rank 0 prints the table. Columns: size (MB of
float32 per array), time per round (ms), ``algbw`` (GB/s: bytes pushed and pulled by
this worker per second) and ``busbw`` (GB/s: algbw scaled by 2(n-1)/n for n
participants, the ring-allreduce traffic each link carries — MXNet's "GB/sec per gpu";
0 for a single participant). With ``--test-results 1`` (default) every pulled value is
checked against the sum of what was pushed.
"""
import argparse
import sys
import time

import numpy as np

__all__ = ["main", "parse_args", "measure", "parse_size"]

_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "kb": 1e3, "mb": 1e6, "gb": 1e9}


def parse_size(text):
    """Bytes from ``4096``, ``64KB``, ``1MB``, ``0.5GB`` (decimal units)."""
    t = str(text).strip().lower()
    num = t.rstrip("kmgb")
    unit = t[len(num):]
    if unit not in _UNITS or not num:
        raise argparse.ArgumentTypeError(f"bad size {text!r}: use e.g. 4096, 64KB, 1MB")
    try:
        value = float(num) * _UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size {text!r}: use e.g. 4096, 64KB, 1MB") \
            from None
    if value < 4:
        raise argparse.ArgumentTypeError(f"size {text!r} is below one float32")
    return int(value)


def _contexts(args):
    import mxnet as mx
    if args.gpus:
        try:
            ids = [int(i) for i in args.gpus.split(",") if i.strip()]
        except ValueError:
            raise SystemExit(f"mxnet-bandwidth: --gpus takes ids like 0,1, got {args.gpus!r}")
        if ids and mx.context.num_gpus() == 0:
            raise SystemExit("mxnet-bandwidth: --gpus given but no GPU is usable (CuPy "
                             "missing or no device; see mxnet-diagnose)")
        return [mx.gpu(i) for i in ids]
    return [mx.cpu(i) for i in range(max(args.cpus, 1))]


def measure(kv, contexts, nbytes, rounds, check=True, key=0):
    """Seconds per push+pull round (mean over ``rounds`` after one warm-up) of a
    float32 array of ``nbytes`` bytes per context; raises AssertionError when
    ``check`` and a pulled value differs from the expected sum."""
    import mxnet as mx
    n = max(nbytes // 4, 1)
    rng = np.random.RandomState(key)
    host = [rng.uniform(-1, 1, n).astype(np.float32) for _ in contexts]
    grads = [mx.nd.array(h, ctx=c) for h, c in zip(host, contexts)]
    outs = [mx.nd.zeros((n,), ctx=c) for c in contexts]
    kv.init(key, mx.nd.zeros((n,), ctx=contexts[0]))
    elapsed = 0.0
    for r in range(rounds + 1):                 # round 0 warms up and is not timed
        tic = time.perf_counter()
        kv.push(key, grads if len(grads) > 1 else grads[0])
        kv.pull(key, out=outs if len(outs) > 1 else outs[0])
        for o in outs:
            o.wait_to_read()
        if r:
            elapsed += time.perf_counter() - tic
    if check:
        want = np.sum(host, axis=0, dtype=np.float64)
        got = outs[0].asnumpy()
        if kv.num_workers > 1:
            # every worker pushed the same (key-seeded) arrays
            want = want * kv.num_workers
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * len(host)
                                   * kv.num_workers)
        for o in outs[1:]:
            np.testing.assert_array_equal(o.asnumpy(), got)
    return elapsed / max(rounds, 1)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="mxnet-bandwidth", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Measure KVStore push/pull bandwidth over array sizes")
    parser.add_argument("--kv-store", default="device",
                        help="kvstore type: local, device, dist_sync, dist_device_sync, ...")
    parser.add_argument("--gpus", default="",
                        help="GPU ids to push from, e.g. 0,1 (empty: CPU contexts)")
    parser.add_argument("--cpus", type=int, default=1,
                        help="number of CPU contexts to push from when --gpus is empty")
    parser.add_argument("--sizes", nargs="+", type=parse_size,
                        default=[parse_size(s) for s in ("4KB", "64KB", "1MB", "16MB")],
                        help="array sizes in bytes (suffixes KB, MB, GB)")
    parser.add_argument("--num-batches", type=int, default=5,
                        help="timed rounds per size (after one warm-up round)")
    parser.add_argument("--test-results", type=int, default=1,
                        help="check the pulled values (1) or not (0)")
    parser.add_argument("--format", default="markdown", choices=["markdown", "csv"],
                        help="table format")
    return parser.parse_args(argv)


def main(argv=None):
    """Entry point of ``mxnet-bandwidth``; returns the exit status."""
    args = parse_args(argv)
    if args.num_batches < 1:
        raise SystemExit("mxnet-bandwidth: --num-batches must be at least 1")
    import mxnet as mx
    contexts = _contexts(args)
    kv = mx.kv.create(args.kv_store)
    parts = len(contexts) * kv.num_workers
    rows = []
    for i, nbytes in enumerate(args.sizes):
        seconds = measure(kv, contexts, nbytes, args.num_batches,
                          check=bool(args.test_results), key=i)
        moved = 2.0 * (nbytes // 4) * 4 * len(contexts)       # pushed + pulled
        algbw = moved / seconds / 1e9
        busbw = algbw * 2 * (parts - 1) / parts if parts > 1 else 0.0
        rows.append((nbytes / 1e6, seconds * 1e3, algbw, busbw))
    if kv.rank != 0:
        return 0
    devs = ",".join(str(c) for c in contexts)
    print(f"kvstore {kv.type}, {kv.num_workers} worker(s), devices per worker: {devs}, "
          f"{args.num_batches} timed rounds per size")
    header = ["size (MB)", "time (ms)", "algbw (GB/s)", "busbw (GB/s)"]
    if args.format == "csv":
        print(",".join(header))
        for r in rows:
            print("%.6f,%.4f,%.4f,%.4f" % r)
    else:
        print("| " + " | ".join(header) + " |")
        print("|" + " ---: |" * len(header))
        for r in rows:
            print("| %.3f | %.3f | %.3f | %.3f |" % r)
    return 0


if __name__ == "__main__":
    sys.exit(main())

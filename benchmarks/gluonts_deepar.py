"""GluonTS DeepAR (gluonts.mx, an MXNet Gluon model) trained and used for forecasting
on pymxnet and on the real MXNet 1.9.1, in one run with the same thread settings.

Data: 64 synthetic hourly series (daily and weekly seasonality, trend, noise) of 600
points, seeded. DeepAR with its defaults (2 LSTM layers of 40 cells, Student-t output),
prediction length 24, batch 32, 3 epochs of 50 batches, imperative and hybridized.
Reported: training samples/s (windows per second through ``estimator.train``),
forecasting series/s (``predictor.predict`` with 100 sample paths each) and the test
mean weighted quantile loss (lower is better; RNG streams differ, so only roughly
comparable). PyTorch is not in the table: GluonTS's PyTorch DeepAR is a different
implementation (Lightning), not the same model code.

Needs ``gluonts`` (0.16, installed ``--no-deps`` beside pandas) in both interpreters:
run this script with the pymxnet venv's Python; ``$MXNET_REF_PYTHON`` names MXNet's.

    python benchmarks/gluonts_deepar.py [--repeat 3] [--out benchmarks/results/gluonts_deepar.md]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PREDICTION_LENGTH = 24
BATCH = 32
EPOCHS = 3
BATCHES_PER_EPOCH = 50


def _series(n=64, length=600, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    out = []
    for _ in range(n):
        level = rng.uniform(5, 50)
        daily = rng.uniform(0.5, 5) * np.sin(2 * np.pi * (t / 24 + rng.uniform()))
        weekly = rng.uniform(0.5, 3) * np.sin(2 * np.pi * (t / 168 + rng.uniform()))
        trend = rng.uniform(-0.01, 0.01) * t
        out.append((level + daily + weekly + trend + rng.normal(0, 1, length))
                   .astype(np.float32))
    return out


def worker(mode):
    import logging
    import mxnet as mx
    import numpy as np
    from gluonts.dataset.common import ListDataset
    from gluonts.evaluation import Evaluator, make_evaluation_predictions
    from gluonts.mx import DeepAREstimator, Trainer
    logging.disable(logging.WARNING)
    mx.random.seed(0)
    np.random.seed(0)
    series = _series()
    start = "2024-01-01 00:00"
    train = ListDataset([{"start": start, "target": s[:-PREDICTION_LENGTH]} for s in series],
                        freq="h")
    test = ListDataset([{"start": start, "target": s} for s in series], freq="h")
    estimator = DeepAREstimator(
        freq="h", prediction_length=PREDICTION_LENGTH, batch_size=BATCH,
        trainer=Trainer(epochs=EPOCHS, num_batches_per_epoch=BATCHES_PER_EPOCH,
                        hybridize=mode == "hybridized", learning_rate=1e-3))
    t0 = time.perf_counter()
    predictor = estimator.train(train)
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    forecasts, truths = make_evaluation_predictions(test, predictor, num_samples=100)
    forecasts, truths = list(forecasts), list(truths)
    predict_s = time.perf_counter() - t0
    agg, _ = Evaluator(quantiles=(0.1, 0.5, 0.9), num_workers=0)(truths, forecasts)
    return {f"{mode} train samples/s": EPOCHS * BATCHES_PER_EPOCH * BATCH / train_s,
            f"{mode} forecast series/s": len(series) / predict_s,
            f"{mode} test mean wQuantileLoss": float(agg["mean_wQuantileLoss"]),
            f"{mode} peak RSS MB": harness.peak_rss_mb()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--mode", default="imperative")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(harness.HERE, "results",
                                                  "gluonts_deepar.md"))
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.mode)))
        return
    frameworks = ["pymxnet", "mxnet-1.9.1"]
    modes = [["--mode", m] for m in ("imperative", "hybridized")]
    runs = harness.run_alternating(os.path.abspath(__file__), frameworks,
                                   lambda fw: modes, repeat=args.repeat,
                                   threads=args.threads)
    speed = [f"{m} {k}" for m in ("imperative", "hybridized")
             for k in ("train samples/s", "forecast series/s")]
    quality = [f"{m} test mean wQuantileLoss" for m in ("imperative", "hybridized")]
    memory = [f"{m} peak RSS MB" for m in ("imperative", "hybridized")]
    loads = ", ".join(f"{fw} {runs[fw].get('load', float('nan')):.1f}" for fw in frameworks)
    text = [f"# GluonTS DeepAR (gluonts.mx 0.16): training and forecasting", "",
            harness.machine_note(), "",
            f"{args.threads} threads per framework (OMP_NUM_THREADS and the engine's "
            f"workers). Medians of {args.repeat} runs per framework, alternating; median "
            f"load average at the start of each framework's runs: {loads}. DeepAR "
            f"defaults, prediction length {PREDICTION_LENGTH}, batch {BATCH}, {EPOCHS} "
            f"epochs of {BATCHES_PER_EPOCH} batches on 64 synthetic hourly series; "
            "forecasts draw 100 sample paths per series.", "",
            *harness.section(harness.THROUGHPUT, runs, speed, lower_is_better=False,
                             unit="per s"),
            *harness.section("Test mean weighted quantile loss (lower is better; RNG "
                             "streams differ):", runs, quality, unit="wQL"),
            *harness.section(harness.PEAK_RSS, runs, memory, unit="MB")]
    harness.write_report(args.out, text, runs)


if __name__ == "__main__":
    main()

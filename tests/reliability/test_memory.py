"""A steady training loop does not grow (issue 19 point 4): 3000 steps of a small MLP,
imperative and hybridized, in a fresh process; RSS growth after a 500-step warm-up
stays under 0.5 MB (MXNet 1.9.1: +0.1 / +0.0 MB). A bound, not a timing."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "benchmarks", "memory_growth.py")


@pytest.mark.parametrize("mode", ["imperative", "hybridized", "module"])
def test_rss_growth_after_warmup_is_bounded(mode):
    out = subprocess.run([sys.executable, BENCH, "--mode", mode, "--steps", "3000",
                          "--every", "3000", "--warmup", "500"],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, MXNET_CPU_WORKER_NTHREADS="1"))
    assert out.returncode == 0, out.stderr[-2000:]
    line = [ln for ln in out.stdout.splitlines() if "growth after" in ln][-1]
    growth_mb = float(line.split(":")[-1].split()[0])
    print(line)
    assert growth_mb < 0.5, out.stdout

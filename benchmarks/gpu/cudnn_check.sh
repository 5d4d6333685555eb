#!/usr/bin/env bash
# cuDNN checks on the GPU machine (called by device_check.sh; runs alone too):
#   1. the cuDNN binding and kernel tests (tests/backend/cudnn),
#   2. benchmarks/gpu_ops.py --quick (cuDNN vs the CuPy bodies vs PyTorch).
# Logs: $OUT/cudnn_env.log, $OUT/cudnn_tests.log, $OUT/cudnn_bench.log and
# $OUT/gpu_ops.{json,md}. About 2.5 minutes at most; each step has its own timeout and a
# failing step does not stop the next.
set -u
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/cudnn_check}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
  python3 - <<'PY'
import mxnet as mx
from mxnet.backend import cudnn
print("num_gpus", mx.context.num_gpus())
print("cudnn available", cudnn.available(), "version", cudnn.version(),
      "path", cudnn.library_path(), "error", cudnn.load_error())
from mxnet.operator.kernels import registered_kernels
print("gpu kernels", sorted({k[0] for k in registered_kernels() if k[1] == "gpu"}))
PY
} > "$OUT/cudnn_env.log" 2>&1

timeout 75 python3 -m pytest -q --no-header -p no:cacheprovider tests/backend/cudnn \
  --maxfail=50 -rfEs > "$OUT/cudnn_tests.log" 2>&1
echo "exit $?" >> "$OUT/cudnn_tests.log"

timeout 75 python3 benchmarks/gpu_ops.py --quick --out "$OUT" > "$OUT/cudnn_bench.log" 2>&1
echo "exit $?" >> "$OUT/cudnn_bench.log"
tail -3 "$OUT/cudnn_tests.log"
cat "$OUT/gpu_ops.md" 2>/dev/null

#!/usr/bin/env bash
# CUDA graphs device check (at most ~6.5 minutes), from the repository root:
#   OUT=/tmp/out bash benchmarks/gpu/graph_check.sh
# Each step runs under its own timeout (cut to what is left of TOTAL_BUDGET); a failing
# or hanging step does not stop the next. Order = importance:
#   1. env: GPU, CuPy/CUDA/cuDNN/PyTorch versions, libcublas found for captures
#   2. tests: the CUDA-graph (per-layer parity included) and capturable-GEMM tests
#   3. parity ResNet-18 32x32 b128: 6 SGD steps graphs off vs on (losses, parameters)
#   4. gpu_train workers, ResNet-50 224x224 b64 hybridized fp32: graphs on, graphs off,
#      PyTorch eager fp32 (same machine, same process layout)
#   5. parity ResNet-50 b16, 4 steps
#   6. gpu_train workers, ResNet-18 32x32 b128: graphs on, off, PyTorch
#   7. profile_step.py ResNet-50 hybridized with graphs on (host cProfile + kernels)
#   8. what time is left: tests/backend/cudnn + tests/gpu, MXNet 1.9.1's own
#      test_cuda_graphs (only when .device/mxnet-1.9.1-tests is carried), tests/operator -k gpu
# Files back in $OUT (7): summary.txt (read this first), env.log, tests.log, parity.log,
# train.log, profile_resnet50_hybridized.txt, optests.log.
set -u -o pipefail
export PYTHONUNBUFFERED=1
STEP_WIDTH=30
. "$(dirname "$0")/steps.sh"     # steps_begin NAME BUDGET; step NAME TIMEOUT LOGFILE CMD...
steps_begin graph_check 400
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"

# --- 1. env --------------------------------------------------------------------------------
step env 30 "$OUT/env.log" bash -c '
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
'"$PY"' benchmarks/gpu/env_probe.py'
grep -E "^(cupy|torch|cudnn|cublas|mxnet)" "$OUT/env.log" | sed 's/^/  /' >> "$SUMMARY"

# --- 2. tests of this work -------------------------------------------------------------------
step tests-graph 110 "$OUT/tests.log" "$PY" -m pytest -q --no-header -p no:cacheprovider \
    -rfE --maxfail=40 tests/backend/test_cublas_graph.py tests/executor/test_cuda_graph.py
tail -n 3 "$OUT/tests.log" 2>/dev/null | sed 's/^/  /' >> "$SUMMARY"

# the last PARITY line of parity.log and why graphs were not used, if they were not
verdict() {
    local v
    v=$(grep -E "^PARITY" "$OUT/parity.log" 2>/dev/null | tail -n 1)
    echo "  ${v:-$1: no verdict (see parity.log)}" >> "$SUMMARY"
    grep -hoE "(capture failed|runs without a CUDA graph|turned off)[^\"]{0,160}" \
        "$OUT/parity.log" 2>/dev/null | sort -u | head -n 4 | sed 's/^/    /' >> "$SUMMARY"
}

# --- 3. parity ResNet-18 ------------------------------------------------------------------------
export MXNET_CUDA_GRAPHS_VERBOSE=1
step parity-cnn 40 "$OUT/parity.log" "$PY" benchmarks/gpu/graph_parity.py \
    --model cnn --steps 6
verdict parity-cnn
step parity-resnet18 70 "$OUT/parity.log" "$PY" benchmarks/gpu/graph_parity.py \
    --model resnet18 --steps 6
verdict parity-resnet18
unset MXNET_CUDA_GRAPHS_VERBOSE

# --- 4. throughput ResNet-50 b64 ------------------------------------------------------------------
# one gpu_train worker per case (each prints one JSON line last); graphs via the env var
train() {   # train NAME GRAPHS(0/1) FRAMEWORK MODEL LIMIT WARMUP ITERS
    local name=$1 graphs=$2 fw=$3 model=$4 limit=$5 warm=$6 iters=$7
    echo "### $name" >> "$OUT/train.log"
    step "$name" "$limit" "$OUT/train.log" env MXNET_ENABLE_CUDA_GRAPHS="$graphs" \
        "$PY" benchmarks/gpu_train.py --worker "$fw" --model "$model" \
        --mode hybridized --precision fp32 --warmup "$warm" --iters "$iters"
    "$PY" benchmarks/gpu/train_summary.py "$OUT/train.log" "$name" >> "$SUMMARY"
}
train r50-b64-graphs-on 1 pymxnet resnet50 75 4 15
train r50-b64-graphs-off 0 pymxnet resnet50 60 3 10
train r50-b64-pytorch 0 pytorch resnet50 45 3 15

# --- 5. parity ResNet-50 ----------------------------------------------------------------------------
export MXNET_CUDA_GRAPHS_VERBOSE=1
step parity-resnet50 80 "$OUT/parity.log" "$PY" benchmarks/gpu/graph_parity.py \
    --model resnet50 --steps 4 --batch 16
verdict parity-resnet50
unset MXNET_CUDA_GRAPHS_VERBOSE

# --- 6. throughput ResNet-18 32x32 b128 -----------------------------------------------------------
train r18-b128-graphs-on 1 pymxnet resnet18 35 4 30
train r18-b128-graphs-off 0 pymxnet resnet18 30 3 20
train r18-b128-pytorch 0 pytorch resnet18 30 3 30

# --- 7. profile with graphs ------------------------------------------------------------------------
step profile-r50-graphs 45 "$OUT/profile.log" env MXNET_ENABLE_CUDA_GRAPHS=1 \
    "$PY" benchmarks/gpu/profile_step.py --model resnet50 --mode hybridized --steps 2 \
    --out "$OUT"
grep -E "ms/step|GPU busy" "$OUT/profile_resnet50_hybridized.txt" 2>/dev/null \
    | sed 's/^/  /' >> "$SUMMARY"
cat "$OUT/profile.log" >> "$OUT/train.log" 2>/dev/null; rm -f "$OUT/profile.log"

# --- 8. cuDNN/GPU tests, MXNet's own CUDA-graph test when carried, operator tests ---------------
step tests-cudnn-gpu 50 "$OUT/optests.log" "$PY" -m pytest -q --no-header \
    -p no:cacheprovider -rfE --maxfail=40 tests/backend/cudnn tests/gpu
tail -n 2 "$OUT/optests.log" 2>/dev/null | sed 's/^/  /' >> "$SUMMARY"
MXT="$ROOT/.device/mxnet-1.9.1-tests/tests/python/gpu/test_gluon_gpu.py"
if [ -f "$MXT" ]; then
    step mxnet-test_cuda_graphs 45 "$OUT/optests.log" "$PY" -m pytest -q --no-header \
        -p no:cacheprovider -rfE "$MXT" -k test_cuda_graphs
    tail -n 2 "$OUT/optests.log" 2>/dev/null | sed 's/^/  /' >> "$SUMMARY"
fi
step optests-gpu 60 "$OUT/optests.log" "$PY" -m pytest -q --no-header -p no:cacheprovider \
    -rfE --maxfail=40 tests/operator -k gpu
tail -n 2 "$OUT/optests.log" 2>/dev/null | sed 's/^/  /' >> "$SUMMARY"

echo "total $(( $(date +%s) - T_START ))s of budget ${TOTAL_BUDGET}s" | tee -a "$SUMMARY"

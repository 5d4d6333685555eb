#!/usr/bin/env bash
# Device check for correctness (at most ~9 minutes): the project's whole test suite and
# MXNet 1.9.1's GPU test files in full, with pytest-xdist workers sharing the one GPU.
# From the repository root, with .device carried (bash benchmarks/gpu/prepare_device_dir.sh):
#   OUT=/tmp/out TOTAL_BUDGET=540 bash benchmarks/gpu/suite_check.sh
# Each step runs under its own timeout (cut to what is left of TOTAL_BUDGET). Steps:
#   1. env (as amp_memory_check.sh)
#   2. the project's tests, all of them (the GPU ones run here; the host-emulated
#      multi-GPU ones stand aside where a GPU is present)
#   3. test_operator_gpu: every test (it imports test_operator, the NumPy, sparse,
#      optimizer and random files and runs them on gpu(0)), WORKERS xdist workers
#   4. the other GPU files: test_gluon_gpu, test_kvstore_gpu, test_contrib_amp,
#      test_fusion, test_rtc, test_device, test_gluon_contrib_gpu, test_gluon_transforms,
#      test_gluon_model_zoo_gpu, test_predictor, test_forward, test_nccl
# Files back in $OUT: summary.txt (read this first), env.log, tests.log (both suites'
# output), project_tests.log, mxnet_operator_gpu.json, mxnet_gpu_files.json (per-test
# outcomes and failure messages; compare runs with run_mxnet_unittests.py --diff).
set -u -o pipefail
export PYTHONUNBUFFERED=1
STEP_WIDTH=30
. "$(dirname "$0")/steps.sh"
steps_begin suite_check 540
WORKERS=${WORKERS:-12}          # the device has 16 cores; kernels queue on one GPU

device_env

XDIST=()
if "$PY" -c "import xdist" 2>/dev/null; then
    XDIST=(-n "$WORKERS")
else
    echo "pytest-xdist missing: tests run in one process" | tee -a "$SUMMARY"
fi

# --- 2. the project's tests ------------------------------------------------------------------
step project-tests 150 "$OUT/project_tests.log" "$PY" -m pytest -q --no-header \
    -p no:cacheprovider -rfE --maxfail=60 "${XDIST[@]}" tests
tail -n 3 "$OUT/project_tests.log" | sed 's/^/  /' >> "$SUMMARY"

# --- 3. test_operator_gpu in full ------------------------------------------------------------
RUNNER_XDIST=()
[ ${#XDIST[@]} -gt 0 ] && RUNNER_XDIST=(--pytest-arg=-n --pytest-arg="$WORKERS")
mxnet_gpu_files mxnet-operator-gpu 330 test_operator_gpu mxnet_operator_gpu.json \
    --timeout-per-file 320 --timeout-per-test 120 "${RUNNER_XDIST[@]}"

# --- 4. the other GPU files ------------------------------------------------------------------
mxnet_gpu_files mxnet-gpu-files 200 \
    test_gluon_gpu,test_kvstore_gpu,test_contrib_amp,test_fusion,test_rtc,test_device,test_gluon_contrib_gpu,test_gluon_transforms,test_gluon_model_zoo_gpu,test_predictor,test_forward,test_nccl \
    mxnet_gpu_files.json --timeout-per-file 190 --timeout-per-test 120 --jobs 4

echo "total $(( $(date +%s) - T_START ))s of budget ${TOTAL_BUDGET}s" | tee -a "$SUMMARY"
exit 0

#!/usr/bin/env bash
# Device check for correctness (at most ~9.5 minutes): the project's whole test suite,
# a few training rows against PyTorch in the same run, and MXNet 1.9.1's GPU test files,
# with pytest-xdist workers sharing the one GPU.
# From the repository root, with .device carried (bash benchmarks/gpu/prepare_device_dir.sh):
#   OUT=/tmp/out TOTAL_BUDGET=560 bash benchmarks/gpu/suite_check.sh
# Each step runs under its own timeout (cut to what is left of TOTAL_BUDGET). Steps:
#   1. env (as amp_memory_check.sh)
#   2. the project's tests, all of them (the GPU ones run here; the host-emulated
#      multi-GPU ones stand aside where a GPU is present)
#   3. training rows (TRAIN=0 skips): ResNet-50 224² b64 hybridized with CUDA graphs, AMP
#      and fp32, and without graphs; the seed CNN b256 AMP; imperative ResNet-50 AMP; the
#      d2l LSTM with the fused cells; PyTorch eager beside each
#   4. the other GPU files: test_gluon_gpu, test_kvstore_gpu, test_contrib_amp,
#      test_fusion, test_rtc, test_device, test_gluon_contrib_gpu, test_gluon_transforms,
#      test_gluon_model_zoo_gpu, test_predictor, test_forward, test_nccl
#   5. test_operator_gpu with what is left: every test (it imports test_operator, the
#      NumPy, sparse, optimizer and random files and runs them on gpu(0)), WORKERS xdist
#      workers; the runner records each outcome as it comes, so a cut run still counts
# Files back in $OUT (7): summary.txt (read this first), env.log, tests.log (both
# suites' output), project_tests.log, train.log, mxnet_operator_gpu.json,
# mxnet_gpu_files.json (per-test outcomes and failure messages; compare runs with
# run_mxnet_unittests.py --diff).
set -u -o pipefail
export PYTHONUNBUFFERED=1
STEP_WIDTH=30
. "$(dirname "$0")/steps.sh"     # steps_begin, step, device_env, train, rnn, mxnet_gpu_files
steps_begin suite_check 560
WORKERS=${WORKERS:-12}          # the device has 16 cores; kernels queue on one GPU

device_env

XDIST=()
if "$PY" -c "import xdist" 2>/dev/null; then
    XDIST=(-n "$WORKERS")
else
    echo "pytest-xdist missing: tests run in one process" | tee -a "$SUMMARY"
fi

# --- 2. the project's tests ------------------------------------------------------------------
step project-tests 110 "$OUT/project_tests.log" "$PY" -m pytest -q --no-header \
    -p no:cacheprovider -rfE --maxfail=60 "${XDIST[@]}" tests
tail -n 3 "$OUT/project_tests.log" | sed 's/^/  /' >> "$SUMMARY"

# --- 3. training rows: samples/s and peak GB, PyTorch eager beside each ---------------------------
if [ "${TRAIN:-1}" = 1 ]; then
    train r50-amp-graphs 1 pymxnet resnet50 amp 40 4 30
    train r50-amp-pytorch 0 pytorch resnet50 amp 30 3 30
    train r50-fp32-graphs 1 pymxnet resnet50 fp32 40 4 30
    train r50-fp32-pytorch 0 pytorch resnet50 fp32 30 3 30
    train r50-amp-nographs 0 pymxnet resnet50 amp 40 3 8
    MODE=imperative train r50-amp-imperative 0 pymxnet resnet50 amp 40 3 8
    train cnn-amp-graphs 1 pymxnet cnn amp 25 4 20
    train cnn-amp-pytorch 0 pytorch cnn amp 20 3 20
    rnn lstm-fused 1 0 pymxnet lstm
    rnn lstm-pytorch 1 0 pytorch lstm
fi

# --- 4. the other GPU files ------------------------------------------------------------------
mxnet_gpu_files mxnet-gpu-files 130 \
    test_gluon_gpu,test_kvstore_gpu,test_contrib_amp,test_fusion,test_rtc,test_device,test_gluon_contrib_gpu,test_gluon_transforms,test_gluon_model_zoo_gpu,test_predictor,test_forward,test_nccl \
    mxnet_gpu_files.json --timeout-per-file 120 --timeout-per-test 60 --jobs 4 \
    --pytest-arg=-n --pytest-arg=3

# --- 5. test_operator_gpu with what is left-----------------------------------------------------
RUNNER_XDIST=()
[ ${#XDIST[@]} -gt 0 ] && RUNNER_XDIST=(--pytest-arg=-n --pytest-arg="$WORKERS")
mxnet_gpu_files mxnet-operator-gpu 400 test_operator_gpu mxnet_operator_gpu.json \
    --timeout-per-file "$(( TOTAL_BUDGET - ($(date +%s) - T_START) - 15 ))" --timeout-per-test 120 "${RUNNER_XDIST[@]}"

echo "total $(( $(date +%s) - T_START ))s of budget ${TOTAL_BUDGET}s" | tee -a "$SUMMARY"
exit 0

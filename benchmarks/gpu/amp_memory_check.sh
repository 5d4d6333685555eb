#!/usr/bin/env bash
# Device check for bfloat16 AMP and the one-arena memory plan (at most ~7 minutes), from
# the repository root, with .device carried (ml_dtypes for the device's Python, MXNet's
# suite; benchmarks/gpu/prepare_device_dir.sh fills it):
#   OUT=/tmp/out bash benchmarks/gpu/amp_memory_check.sh
# Each step runs under its own timeout (cut to what is left of TOTAL_BUDGET); a failing
# or hanging step does not stop the next. Order = importance:
#   1. env: GPU, versions; ml_dtypes installed from .device/wheels when missing; whether
#      CuPy makes bfloat16 arrays
#   2. tests: cuDNN (bfloat16 adapters included), tests/gpu, bfloat16 operators, AMP,
#      CUDA graphs
#   3. ResNet-50 224x224 b64 hybridized with CUDA graphs: pymxnet fp32 and AMP
#      (bfloat16), PyTorch eager fp32 and bf16 autocast: samples/s, peak GB (the
#      one-arena plan's memory against PyTorch's); pymxnet again with the channels-last
#      layout off (MXNET_CUDNN_CHANNELS_LAST=0, the "-nchw" rows): its A/B; and AMP
#      without the BatchNorm -> relu fusion (MXNET_GPU_BN_RELU_FUSION=0, "-nobnrelu"), and
#      with AMP's finite check waiting each step (MXNET_AMP_ASYNC_OVERFLOW_CHECK=0,
#      "-synccheck"; the default defers it to the device), and without the convolution
#      bias fold (MXNET_GPU_CONV_BIAS_FOLD=0, "-nobiasfold"), and with the relu backward
#      folded into BatchNorm's (MXNET_GPU_BN_RELU_BACKWARD_FUSION=1, "-bnrelubwd")
#   4. ResNet-18 32x32 b128 and the seed CNN b256, AMP, graphs on, against PyTorch
#   5. profile of one AMP ResNet-50 step with graphs (where the time goes), and of the
#      seed CNN's (host-bound)
#   6. ResNet-50 without CUDA graphs (pymxnet fp32 and AMP; with cuDNN graph-API plans,
#      "-graphapi"; without the bias fold), and a profile of its AMP step (host time; the
#      kernels each operator launches)
#   6b. the d2l LSTM / GRU language model with the fused recurrent cells on and off,
#      and two layers with dropout under CUDA graphs, against PyTorch's cuDNN layers;
#      imperative (not hybridized) seed CNN fp32 and ResNet-50 AMP
#   7. with what is left: MXNet 1.9.1's test_operator_gpu (a -k subset) and
#      test_gluon_contrib_gpu, when .device/mxnet-1.9.1-tests is carried (SUITE_FILES=
#      other files, or empty to skip; SUITE_K= another -k selection, empty for all)
# Files back in $OUT: summary.txt (read this first), env.log, tests.log, train.log,
# profile_resnet50_hybridized_amp.txt, profile_cnn_hybridized_amp.txt,
# profile_resnet50_hybridized_amp_nographs.txt,
# mxnet_gpu_files.json.
set -u -o pipefail
export PYTHONUNBUFFERED=1
STEP_WIDTH=30
. "$(dirname "$0")/steps.sh"     # steps_begin, step, device_env, train, rnn, mxnet_gpu_files
steps_begin amp_memory_check 420

# --- 1. env (ml_dtypes: a requirement of pymxnet, absent from the device's image) ---------------
device_env

# --- 2. tests ---------------------------------------------------------------------------------------
step tests 110 "$OUT/tests.log" "$PY" -m pytest -q --no-header -p no:cacheprovider -rfE \
    --maxfail=40 tests/backend/cudnn tests/gpu tests/operator/test_bfloat16.py \
    tests/operator/test_kernels_gpu_optim.py tests/operator/test_kernels_gpu_multi.py \
    tests/contrib/amp tests/executor/test_cuda_graph.py \
    tests/executor/test_layout_channels_last.py tests/operator/test_kernels_gpu_fused.py \
    tests/backend/test_channel_sum.py tests/backend/test_bn_channels_last.py \
    tests/gluon/test_cached_op_gradients.py tests/executor/test_bias_fold.py \
    tests/backend/cudnn/test_graph_api.py tests/executor/test_backward_fusion.py \
    tests/backend/cudnn/test_runtime.py tests/backend/test_rnn_cells.py \
    tests/operator/nn/test_rnn.py tests/gluon/rnn tests/operator/test_kernels_gpu_dropout.py
tail -n 3 "$OUT/tests.log" 2>/dev/null | sed 's/^/  /' >> "$SUMMARY"

# --- 3. ResNet-50 with graphs -----------------------------------------------------------------------
train r50-amp-graphs 1 pymxnet resnet50 amp 70 4 30
train r50-amp-pytorch 0 pytorch resnet50 amp 40 3 30
# A/B rows: each switch of the defaults off (the layout's "-nchw" and "-nobnrelu" rows,
# measured in session 12's first run, run when AB_ALL=1)
TRAIN_ENV=MXNET_GPU_CONV_BIAS_FOLD=0 train r50-amp-graphs-nobiasfold 1 pymxnet resnet50 amp 70 4 30
TRAIN_ENV=MXNET_AMP_ASYNC_OVERFLOW_CHECK=0 train r50-amp-graphs-synccheck 1 pymxnet resnet50 amp 70 4 30
# the relu backward folded into BatchNorm's (off by default until measured)
TRAIN_ENV=MXNET_GPU_BN_RELU_BACKWARD_FUSION=1 train r50-amp-graphs-bnrelubwd 1 pymxnet resnet50 amp 70 4 30
if [ "${AB_ALL:-0}" = 1 ]; then
    TRAIN_ENV=MXNET_CUDNN_CHANNELS_LAST=0 train r50-amp-graphs-nchw 1 pymxnet resnet50 amp 70 4 30
    TRAIN_ENV=MXNET_GPU_BN_RELU_FUSION=0 train r50-amp-graphs-nobnrelu 1 pymxnet resnet50 amp 70 4 30
fi
train r50-fp32-graphs 1 pymxnet resnet50 fp32 70 4 30
train r50-fp32-pytorch 0 pytorch resnet50 fp32 40 3 30
TRAIN_ENV=MXNET_GPU_CONV_BIAS_FOLD=0 train r50-fp32-graphs-nobiasfold 1 pymxnet resnet50 fp32 70 4 30
TRAIN_ENV=MXNET_GPU_BN_RELU_BACKWARD_FUSION=1 train r50-fp32-graphs-bnrelubwd 1 pymxnet resnet50 fp32 70 4 30
[ "${AB_ALL:-0}" = 1 ] && \
    TRAIN_ENV=MXNET_CUDNN_CHANNELS_LAST=0 train r50-fp32-graphs-nchw 1 pymxnet resnet50 fp32 70 4 30

# --- 4. smaller models, AMP with graphs ---------------------------------------------------------------
train r18-amp-graphs 1 pymxnet resnet18 amp 30 4 20
train r18-amp-pytorch 0 pytorch resnet18 amp 25 3 20
train cnn-amp-graphs 1 pymxnet cnn amp 25 4 20
TRAIN_ENV=MXNET_AMP_ASYNC_OVERFLOW_CHECK=0 train cnn-amp-graphs-synccheck 1 pymxnet cnn amp 25 4 20
train cnn-amp-pytorch 0 pytorch cnn amp 20 3 20

# --- 5. profile of an AMP ResNet-50 step with graphs --------------------------------------------------
step profile-r50-amp 45 "$OUT/train.log" env MXNET_ENABLE_CUDA_GRAPHS=1 \
    "$PY" benchmarks/gpu/profile_step.py --model resnet50 --mode hybridized --steps 2 \
    --precision amp --out "$OUT"
grep -E "ms/step|GPU busy|bfloat16 calls|launches," "$OUT/profile_resnet50_hybridized_amp.txt" 2>/dev/null \
    | sed 's/^/  /' >> "$SUMMARY"
# the seed CNN's AMP step with graphs (host-bound: where its time goes)
step profile-cnn-amp 40 "$OUT/train.log" env MXNET_ENABLE_CUDA_GRAPHS=1 \
    "$PY" benchmarks/gpu/profile_step.py --model cnn --mode hybridized --steps 4 \
    --precision amp --out "$OUT"
grep -E "ms/step|GPU busy" "$OUT/profile_cnn_hybridized_amp.txt" 2>/dev/null \
    | sed 's/^/  /' >> "$SUMMARY"

# --- 6. ResNet-50 without graphs --------------------------------------------------------------------
train r50-amp-nographs 0 pymxnet resnet50 amp 50 3 8
train r50-fp32-nographs 0 pymxnet resnet50 fp32 50 3 8
# convolutions through cached cuDNN graph-API plans (backend/cudnn/graph_api.py, off by
# default): the legacy calls cost ~0.19 ms of host time each; and the bias fold's A/B
# without graphs (its moving-mean steps are host time there)
TRAIN_ENV=MXNET_CUDNN_GRAPH_API=1 train r50-amp-nographs-graphapi 0 pymxnet resnet50 amp 50 3 8
TRAIN_ENV=MXNET_CUDNN_GRAPH_API=1 train r50-fp32-nographs-graphapi 0 pymxnet resnet50 fp32 50 3 8
TRAIN_ENV=MXNET_CUDNN_GRAPH_API=1 train r50-amp-graphs-graphapi 1 pymxnet resnet50 amp 70 4 30
TRAIN_ENV=MXNET_GPU_CONV_BIAS_FOLD=0 train r50-amp-nographs-nobiasfold 0 pymxnet resnet50 amp 50 3 8
# where the no-graph step's host time goes, and which operators launch which kernels
# (session 12's first run has it; NOGRAPH_PROFILE=0 skips it)
[ "${NOGRAPH_PROFILE:-1}" = 1 ] && step profile-r50-amp-nographs 60 "$OUT/train.log" env MXNET_ENABLE_CUDA_GRAPHS=0 \
    "$PY" benchmarks/gpu/profile_step.py --model resnet50 --mode hybridized --steps 2 \
    --precision amp --attribute --out "$OUT"
grep -E "ms/step|GPU busy|launches," "$OUT/profile_resnet50_hybridized_amp_nographs.txt" \
    2>/dev/null | sed 's/^/  /' >> "$SUMMARY"
# the same with cuDNN graph-API plans: the host time the legacy calls took
step profile-r50-amp-nographs-graphapi 60 "$OUT/train.log" env MXNET_ENABLE_CUDA_GRAPHS=0 \
    MXNET_CUDNN_GRAPH_API=1 "$PY" benchmarks/gpu/profile_step.py --model resnet50 \
    --mode hybridized --steps 2 --precision amp --attribute --out "$OUT"
grep -E "ms/step|GPU busy" "$OUT/profile_resnet50_hybridized_amp_nographs_graphapi.txt" \
    2>/dev/null | sed 's/^/  /' >> "$SUMMARY"

# --- 6b. the d2l language model (one LSTM / GRU layer of 256, batch 32, 35 steps), fused
# recurrent cells (backend/rnn_cells.py) on and off, against PyTorch's cuDNN LSTM / GRU;
# two layers with dropout between them (the Philox dropout kernel) hybridized with CUDA
# graphs (capturable now that the draw's position lives on the device)
rnn lstm-fused 1 0 pymxnet lstm
rnn lstm-unfused 0 0 pymxnet lstm
rnn lstm-pytorch 1 0 pytorch lstm
rnn gru-fused 1 0 pymxnet gru
rnn gru-pytorch 1 0 pytorch gru
rnn lstm2-drop-fused-graphs 1 1 pymxnet lstm --layers 2 --dropout 0.3 --hybridize
rnn lstm2-drop-fused 1 0 pymxnet lstm --layers 2 --dropout 0.3 --hybridize
rnn lstm2-drop-pytorch 1 0 pytorch lstm --layers 2 --dropout 0.3
# imperative Gluon (the d2l book's training loops), not measured since session 2
MODE=imperative train cnn-fp32-imperative 0 pymxnet cnn fp32 25 3 20
MODE=imperative train r50-amp-imperative 0 pymxnet resnet50 amp 50 3 8

# --- 7. what time is left: MXNet 1.9.1's GPU test files (a -k subset; suite_check.sh runs
# them all)
SUITE_FILES=${SUITE_FILES-test_gluon_contrib_gpu,test_operator_gpu}   # empty: skip
# a -k selection (empty: every test of the files)
SUITE_K=${SUITE_K-conv or pool or batchnorm or softmax or activation or deformable or fully_connected or dot}
[ -n "$SUITE_FILES" ] && mxnet_gpu_files mxnet-gpu-files "${SUITE_LIMIT:-120}" "$SUITE_FILES" \
    mxnet_gpu_files.json --timeout-per-file "${SUITE_FILE_LIMIT:-110}" --timeout-per-test 30 \
    --jobs 2 ${SUITE_K:+--pytest-arg=-k --pytest-arg="$SUITE_K"}

echo "total $(( $(date +%s) - T_START ))s of budget ${TOTAL_BUDGET}s" | tee -a "$SUMMARY"
exit 0

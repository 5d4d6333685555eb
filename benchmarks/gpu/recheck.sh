#!/usr/bin/env bash
# A short device re-check of chosen tests (at most 540 s by default): after fixes
# made from an earlier device run's failures, run just those tests on the GPU again. From the
# repository root, with .device carried (bash benchmarks/gpu/prepare_device_dir.sh):
#   OUT=/tmp/out TOTAL_BUDGET=240 PROJECT_TESTS="tests/a.py tests/b.py" \
#     MXNET_FILES=test_operator_gpu MXNET_K="test_init or test_crop" \
#     bash benchmarks/gpu/recheck.sh
# Steps: env; the project's tests named in PROJECT_TESTS (pytest-xdist, WORKERS);
# the training rows (ROWS); MXNet 1.9.1's GPU files MXNET_FILES with the -k selection
# MXNET_K (xdist as well); the slow tests (SLOW_K). Each step is cut to what is left of
# TOTAL_BUDGET, and skipped when nothing is.
# Unset, PROJECT_TESTS, MXNET_FILES and MXNET_K re-check what session 17 fixed from its
# H200 run's failures (benchmarks/results/gpu/README.md) and session 18's cuDNN RNN
# (tests/backend/cudnn/test_rnn.py), check_numeric_gradient's TF32 tolerance
# (test_reciprocal_op) and session 31's LayerNorm and session 32's GroupNorm/InstanceNorm
# kernels; ROWS=1 (default) then times what no device has
# measured yet: the d2l LSTM with CUDA graphs and on cuDNN (MXNET_CUDNN_RNN=1), and
# ResNet-50 without graphs through cuDNN's graph API (MXNET_CUDNN_GRAPH_API=1), each
# beside the row it would replace, ResNet-50 steps that copy their batch from host
# memory with and without the copy stream (MXNET_GPU_COPY_STREAM=1, pinned and pageable
# sources), AMP's gathered weight casts against one launch per cast
# (MXNET_GPU_AMP_CAST_GATHER=0), PyTorch's ResNet-50 and seed-CNN rows in the same run,
# an imperative ResNet-50 step and a graphed seed-CNN step with their profiles.
# Then the switches written without a device all on at once (FLAGS_ON):
# the project's GPU tests FLAGS_TESTS and MXNet's test_operator_gpu selection
# FLAGS_MXNET_K, so that a run finding them faster also shows them correct. SLOW_K
# (default: test_layer_norm, test_groupnorm and test_instance_normalization, MXNet's
# checks of those on the GPU against the CPU, which sessions 31-32's kernels now serve)
# runs alone at the end, on a warm kernel cache.
# Files back in $OUT: summary.txt, env.log, project_tests.log, train.log, and
# details.tar.gz (tests.log, host_call_cost.log, ln/gpu_ops.md, profile_*.txt, mxnet_recheck.json,
# mxnet_flags_on.json, mxnet_slow.json): at most 8 files come back.
set -u -o pipefail
export PYTHONUNBUFFERED=1
STEP_WIDTH=30
. "$(dirname "$0")/steps.sh"     # steps_begin, step, device_env, mxnet_gpu_files, rnn, train
steps_begin recheck 540
WORKERS=${WORKERS:-8}
PROJECT_TESTS=${PROJECT_TESTS-tests/operator/test_cupy_restrictions.py tests/backend/test_half_scan.py tests/operator/test_array_extra.py tests/operator/test_reduce.py tests/operator/test_np_tensordot.py tests/executor/test_test_utils_symbolic.py tests/operator/test_multi_tensor.py tests/backend/cudnn/test_rnn.py tests/backend/cudnn/test_graph_api.py tests/backend/test_copy_stream.py tests/backend/test_host_to_device.py tests/gpu/test_pinned_memory.py tests/operator/test_kernels_gpu_pick.py tests/operator/nn/test_pooling.py tests/operator/test_kernels_gpu_multi_cast.py tests/executor/test_cast_gather.py tests/symbol/test_control_flow.py tests/operator/test_kernels_gpu_layernorm.py tests/operator/test_kernels_gpu_groupnorm.py}
MXNET_FILES=${MXNET_FILES-test_operator_gpu}
MXNET_K=${MXNET_K-test_reciprocal_op or test_pooling_versions or test_np_array_split or test_np_array_ufunc_protocol or test_fp16_spmm or test_histogram or test_reduce or test_np_cumsum or test_np_inner or test_np_tensordot or test_convolution_large_c or test_deconvolution_large_c or test_conv_deconv_guards or test_all_finite}
SLOW_K=${SLOW_K-test_layer_norm or test_groupnorm or test_instance_normalization}
FLAGS_TESTS=${FLAGS_TESTS-tests/backend/cudnn tests/backend/test_copy_stream.py tests/gpu tests/executor/test_cuda_graph.py tests/gluon/test_cached_op_gradients.py tests/test_opcheck.py}
FLAGS_MXNET_K=${FLAGS_MXNET_K-convolution or deconvolution or rnn or lstm or gru}

device_env

if [ -n "$PROJECT_TESTS" ]; then
    # shellcheck disable=SC2086  (a list of paths)
    step project-tests 60 "$OUT/project_tests.log" "$PY" -m pytest -q --no-header \
        -p no:cacheprovider -rfE -n "$WORKERS" $PROJECT_TESTS
    tail -n 3 "$OUT/project_tests.log" | sed 's/^/  /' >> "$SUMMARY"
fi

if [ "${ROWS:-1}" = 1 ]; then
    # what each kind of call costs the host there (CuPy's, pymxnet's, PyTorch's): the
    # graphed seed-CNN step's ~2.5 ms a step that pymxnet's Python does not account for
    step host-call-cost 25 "$OUT/host_call_cost.log" "$PY" benchmarks/gpu/host_call_cost.py
    grep "us/call" "$OUT/host_call_cost.log" | sed 's/^/  /' >> "$SUMMARY"
    # session 31's LayerNorm kernels (operator/kernels_gpu_layernorm.py) and session 32's
    # GroupNorm / InstanceNorm ones (kernels_gpu_groupnorm.py), never timed: against the
    # CuPy bodies and PyTorch
    step layernorm-kernels 30 "$OUT/host_call_cost.log" "$PY" benchmarks/gpu_ops.py \
        --quick --only LayerNorm,GroupNorm,InstanceNorm --out "$OUT/ln"
    grep "Norm" "$OUT/ln/gpu_ops.md" 2>/dev/null | sed 's/^/  /' >> "$SUMMARY"
    rnn lstm-fused 1 0 pymxnet lstm
    rnn lstm-fused-graphs 1 1 pymxnet lstm --hybridize
    RNN_ENV=MXNET_CUDNN_RNN=1 rnn lstm-cudnn 1 0 pymxnet lstm
    RNN_ENV=MXNET_CUDNN_RNN=1 rnn lstm-cudnn-graphs 1 1 pymxnet lstm --hybridize
    rnn lstm-pytorch 1 0 pytorch lstm
    train r50-amp-nographs 0 pymxnet resnet50 amp 40 3 8
    TRAIN_ENV=MXNET_CUDNN_GRAPH_API=1 train r50-amp-nographs-graphapi 0 pymxnet resnet50 amp 40 3 8
    # AMP's weight casts one launch each way (executor/cast_gather.py, on by default):
    # the row above with them off, one launch per cast as before session 21
    TRAIN_ENV=MXNET_GPU_AMP_CAST_GATHER=0 train r50-amp-nographs-nogather 0 pymxnet \
        resnet50 amp 40 3 8
    # the copy stream (backend/copy_stream.py): each step first copies its batch from
    # host memory, without and with MXNET_GPU_COPY_STREAM=1, beside data already there
    train r50-amp-graphs 1 pymxnet resnet50 amp 40 3 20
    # session 12's relu backward folded into BatchNorm's (off by default: its GPU
    # test passed in session 17, its speed never measured)
    TRAIN_ENV=MXNET_GPU_BN_RELU_BACKWARD_FUSION=1 train r50-amp-graphs-bnrelubwd 1 \
        pymxnet resnet50 amp 40 3 20
    for src in pinned pageable; do
        TRAIN_ENV="GPU_TRAIN_HOST_DATA=$src" \
            train "r50-amp-graphs-$src" 1 pymxnet resnet50 amp 40 3 20
        TRAIN_ENV="GPU_TRAIN_HOST_DATA=$src MXNET_GPU_COPY_STREAM=1" \
            train "r50-amp-graphs-$src-copystream" 1 pymxnet resnet50 amp 40 3 20
    done
    # PyTorch in the same run, so that each row above has its ratio from one machine
    train r50-amp-pytorch 0 pytorch resnet50 amp 40 3 20
    MODE=imperative train r50-amp-imperative 0 pymxnet resnet50 amp 40 3 8
    train cnn-amp-graphs 1 pymxnet cnn amp 25 4 20
    train cnn-amp-pytorch 0 pytorch cnn amp 20 3 20
    # where an imperative step's host time goes (no device profile of it exists yet)
    step profile-r50-amp-imperative 45 "$OUT/train.log" "$PY" benchmarks/gpu/profile_step.py \
        --model resnet50 --mode imperative --steps 2 --precision amp --out "$OUT"
    grep -E "ms/step|GPU busy" "$OUT"/profile_resnet50_imperative_amp*.txt 2>/dev/null \
        | sed 's/^/  /' >> "$SUMMARY"
    # the seed CNN with graphs is host-bound (0.67x PyTorch in session 17): what the host
    # does per step outside the graph now (the last profile of it is session 12's)
    step profile-cnn-amp-graphs 30 "$OUT/train.log" env MXNET_ENABLE_CUDA_GRAPHS=1 \
        "$PY" benchmarks/gpu/profile_step.py --model cnn --mode hybridized --steps 8 \
        --precision amp --out "$OUT"
    grep -E "ms/step|GPU busy" "$OUT"/profile_cnn_hybridized_amp*.txt 2>/dev/null \
        | sed 's/^/  /' >> "$SUMMARY"
fi

# The switches written without a device, all on at once (the copy stream for every
# copy, not just large ones): the GPU tests that reach them and every operator case on
# gpu(0) against the CPU, so that a device run that finds them faster can also show
# them correct and turn them on by default
FLAGS_ON="MXNET_CUDNN_GRAPH_API=1 MXNET_CUDNN_RNN=1 MXNET_GPU_COPY_STREAM=1 MXNET_GPU_COPY_STREAM_MIN_BYTES=0"
if [ -n "$FLAGS_TESTS" ]; then
    # shellcheck disable=SC2086  (lists)
    step project-tests-flags-on 90 "$OUT/project_tests.log" env $FLAGS_ON "$PY" -m pytest \
        -q --no-header -p no:cacheprovider -rfE -n "$WORKERS" $FLAGS_TESTS
    tail -n 3 "$OUT/project_tests.log" | sed 's/^/  /' >> "$SUMMARY"
fi

if [ -n "$MXNET_FILES" ]; then
    mxnet_gpu_files mxnet-recheck 120 "$MXNET_FILES" mxnet_recheck.json \
        --timeout-per-test 100 --pytest-arg=-n --pytest-arg="$WORKERS" \
        ${MXNET_K:+--pytest-arg=-k --pytest-arg="$MXNET_K"}
fi

if [ -n "$FLAGS_MXNET_K" ]; then
    (   # a subshell: the switches for this step only
        # shellcheck disable=SC2086,SC2163  (VAR=value words)
        for kv in $FLAGS_ON; do export "$kv"; done
        mxnet_gpu_files mxnet-flags-on 75 test_operator_gpu mxnet_flags_on.json \
            --timeout-per-test 60 --pytest-arg=-n --pytest-arg="$WORKERS" \
            --pytest-arg=-k --pytest-arg="$FLAGS_MXNET_K"
    )
fi

# the slow ones alone, after the step above warmed CuPy's kernel cache
if [ -n "$SLOW_K" ]; then
    mxnet_gpu_files mxnet-slow "$(( TOTAL_BUDGET - ($(date +%s) - T_START) - 5 ))" \
        test_operator_gpu mxnet_slow.json --timeout-per-test 120 \
        --pytest-arg=-k --pytest-arg="$SLOW_K" --pytest-arg=--durations=0
fi

echo "total $(( $(date +%s) - T_START ))s of budget ${TOTAL_BUDGET}s" | tee -a "$SUMMARY"
# At most 8 files come back from $OUT: the summary and the three logs read first stay
# files, the rest (profiles, MXNet's JSON results, the test and probe logs) travel as
# one archive
( cd "$OUT" && shopt -s nullglob &&
  rest=(profile_*.txt ./*.json [t]ests.log [h]ost_call_cost.log [l]n) &&
  if [ ${#rest[@]} -gt 0 ]; then tar czf details.tar.gz --remove-files "${rest[@]}"; fi )
exit 0

#!/usr/bin/env bash
# A short device re-check of chosen tests (at most ~3 minutes): after fixes made from an
# earlier device run's failures, run just those tests on the GPU again. From the
# repository root, with .device carried (bash benchmarks/gpu/prepare_device_dir.sh):
#   OUT=/tmp/out TOTAL_BUDGET=150 PROJECT_TESTS="tests/a.py tests/b.py" \
#     MXNET_FILES=test_operator_gpu MXNET_K="test_init or test_crop" \
#     bash benchmarks/gpu/recheck.sh
# Steps: env; the project's tests named in PROJECT_TESTS (pytest-xdist, WORKERS);
# MXNet 1.9.1's GPU files MXNET_FILES with the -k selection MXNET_K (xdist as well).
# Files back in $OUT: summary.txt, env.log, project_tests.log, tests.log,
# mxnet_recheck.json.
set -u -o pipefail
export PYTHONUNBUFFERED=1
STEP_WIDTH=30
. "$(dirname "$0")/steps.sh"     # steps_begin, step, device_env, mxnet_gpu_files
steps_begin recheck 150
WORKERS=${WORKERS:-8}

device_env

if [ -n "${PROJECT_TESTS:-}" ]; then
    # shellcheck disable=SC2086  (a list of paths)
    step project-tests 60 "$OUT/project_tests.log" "$PY" -m pytest -q --no-header \
        -p no:cacheprovider -rfE -n "$WORKERS" $PROJECT_TESTS
    tail -n 3 "$OUT/project_tests.log" | sed 's/^/  /' >> "$SUMMARY"
fi

if [ -n "${MXNET_FILES:-}" ]; then
    mxnet_gpu_files mxnet-recheck "$(( TOTAL_BUDGET - ($(date +%s) - T_START) - 5 ))" \
        "$MXNET_FILES" mxnet_recheck.json --timeout-per-test 100 \
        --pytest-arg=-n --pytest-arg="$WORKERS" \
        ${MXNET_K:+--pytest-arg=-k --pytest-arg="$MXNET_K"}
fi

echo "total $(( $(date +%s) - T_START ))s of budget ${TOTAL_BUDGET}s" | tee -a "$SUMMARY"
exit 0

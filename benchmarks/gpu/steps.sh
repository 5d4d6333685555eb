# Sourced by the device check scripts: their common setup and the one `step` runner
# they share. STEP_MIN_LEFT (seconds below which a step is skipped), STEP_KILL_AFTER
# (grace after the timeout) and STEP_WIDTH (name column) may be set by the caller.
#
# steps_begin NAME BUDGET: OUT (default /tmp/NAME_out) made, ROOT (the repository root:
# the working directory), PY (default python3), TOTAL_BUDGET (default BUDGET seconds,
# for everything: later steps get what is left), SUMMARY ($OUT/summary.txt) emptied,
# T_START now
steps_begin() {
    OUT=${OUT:-/tmp/$1_out}
    mkdir -p "$OUT"
    ROOT=$(pwd)
    PY=${PY:-python3}
    TOTAL_BUDGET=${TOTAL_BUDGET:-$2}
    SUMMARY="$OUT/summary.txt"
    : > "$SUMMARY"
    T_START=$(date +%s)
}

# step NAME TIMEOUT LOGFILE CMD...: run under a timeout (cut to the budget left),
# append output to LOGFILE, note status and seconds in summary.txt
step() {
    local name=$1 limit=$2 log=$3; shift 3
    local width=${STEP_WIDTH:-24}
    local t0=$(date +%s)
    local left=$(( TOTAL_BUDGET - (t0 - T_START) ))
    if [ $left -lt "${STEP_MIN_LEFT:-10}" ]; then
        printf "%-${width}s %s\n" "$name" "SKIPPED (overall budget spent)" | tee -a "$SUMMARY"
        return 0
    fi
    [ $limit -gt $left ] && limit=$left
    echo "===== $name (limit ${limit}s) =====" >> "$log"
    timeout --kill-after="${STEP_KILL_AFTER:-5}" "$limit" "$@" >> "$log" 2>&1
    local rc=$?
    local dt=$(( $(date +%s) - t0 ))
    local what="rc=$rc"
    { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && what="TIMEOUT after ${limit}s"
    printf "%-${width}s %-22s %4ss  (total %ss)\n" "$name" "$what" "$dt" \
        "$(( $(date +%s) - T_START ))" | tee -a "$SUMMARY"
    return 0
}

# device_env: ml_dtypes (a requirement of pymxnet that the device's image lacks) from
# .device/wheels into .device/pylib when missing; PYTHONPATH (src, that folder) and
# EXTRA exported; the "env" step (GPU, versions, whether CuPy makes bfloat16 arrays)
# with its version lines copied into the summary
device_env() {
    EXTRA="$ROOT/.device/pylib"
    if ! "$PY" -c "import ml_dtypes" 2>/dev/null; then
        "$PY" -m pip install -q --no-index --no-deps --target "$EXTRA" \
            "$ROOT"/.device/wheels/ml_dtypes-*.whl >> "$OUT/env.log" 2>&1 \
            || echo "ml_dtypes install failed" | tee -a "$SUMMARY"
    fi
    export EXTRA PYTHONPATH="$ROOT/src:$EXTRA${PYTHONPATH:+:$PYTHONPATH}"
    step env 30 "$OUT/env.log" bash -c '
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
'"$PY"' benchmarks/gpu/env_probe.py
'"$PY"' -c "
import cupy, mxnet as mx
print(\"ml_dtypes for pymxnet:\", mx.base.HAVE_BFLOAT16)
try:
    a = cupy.arange(4, dtype=\"float32\").astype(mx.base.bfloat16)
    print(\"cupy bfloat16:\", a.dtype, (a + a).astype(\"float32\").get().tolist())
except Exception as e:
    print(\"cupy bfloat16: NO\", type(e).__name__, e)
"'
    grep -E "^(cupy|torch|cudnn|ml_dtypes|mxnet)" "$OUT/env.log" | sed 's/^/  /' >> "$SUMMARY"
}

# mxnet_gpu_files NAME LIMIT FILES JSON [RUNNER ARGS...]: MXNet 1.9.1's GPU test files
# (comma-separated FILES) by the hold-out runner, when .device carries the suite and the
# runner; results in $OUT/JSON, the table's last lines in the summary. The runner takes
# files from tests/python/unittest only, and the GPU files import their CPU
# counterparts: a merged copy puts both in one folder; nose comes from the runner's
# stand-in. Extra runner arguments follow (a -k selection, pytest-xdist workers ...).
mxnet_gpu_files() {
    local name=$1 limit=$2 files=$3 json=$4; shift 4
    local suite="$ROOT/.device/mxnet-1.9.1-tests" runner="$ROOT/.device/tools/run_mxnet_unittests.py"
    if [ ! -f "$runner" ] || [ ! -d "$suite/tests/python/gpu" ]; then
        echo "$name: skipped (.device carries no MXNet suite)" | tee -a "$SUMMARY"
        return 0
    fi
    local merged
    merged=$(mktemp -d /tmp/gpusuite.XXXX)
    cp -r "$suite/." "$merged/"
    chmod -R u+w "$merged"
    cp -n "$suite"/tests/python/gpu/test_*.py "$merged/tests/python/unittest/"
    step "$name" "$limit" "$OUT/tests.log" "$PY" "$runner" --suite-dir "$merged" \
        --python "$PY" --pythonpath "$ROOT/src" --pythonpath "$EXTRA" --nose-shim always \
        --files "$files" --junit --out "$OUT/$json" "$@"
    grep -E "^(test_|TOTAL|RESULT)" "$OUT/tests.log" | tail -n 4 | sed 's/^/  /' >> "$SUMMARY"
    rm -rf "$merged"
}

# train NAME GRAPHS(0/1) FRAMEWORK MODEL PRECISION LIMIT WARMUP ITERS: one gpu_train.py
# worker (samples/s, peak GB) appended to $OUT/train.log, its line copied into the summary.
# MODE=imperative: Gluon without hybridize; TRAIN_ENV: extra VAR=value settings for the row
train() {
    local name=$1 graphs=$2 fw=$3 model=$4 prec=$5 limit=$6 warm=$7 iters=$8
    local mode=${MODE:-hybridized}
    [ "$fw" = pytorch ] && mode=eager
    echo "### $name" >> "$OUT/train.log"
    step "$name" "$limit" "$OUT/train.log" env MXNET_ENABLE_CUDA_GRAPHS="$graphs" ${TRAIN_ENV:-} \
        "$PY" benchmarks/gpu_train.py --worker "$fw" --model "$model" \
        --mode "$mode" --precision "$prec" --warmup "$warm" --iters "$iters"
    "$PY" benchmarks/gpu/train_summary.py "$OUT/train.log" "$name" >> "$SUMMARY"
}

# rnn NAME FUSED(0/1) GRAPHS(0/1) FRAMEWORK CELL [rnn_train.py options]: the d2l language
# model's training throughput (benchmarks/gpu/rnn_train.py), as train above; RNN_ENV:
# extra VAR=value settings for the row (MXNET_CUDNN_RNN=1: the RNN operator on cuDNN)
rnn() {
    local name=$1 fused=$2 graphs=$3 fw=$4 cell=$5
    shift 5
    echo "### $name" >> "$OUT/train.log"
    step "$name" 30 "$OUT/train.log" env MXNET_GPU_RNN_FUSED_CELLS="$fused" \
        MXNET_ENABLE_CUDA_GRAPHS="$graphs" ${RNN_ENV:-} \
        "$PY" benchmarks/gpu/rnn_train.py --framework "$fw" --cell "$cell" "$@"
    "$PY" benchmarks/gpu/train_summary.py "$OUT/train.log" "$name" >> "$SUMMARY"
}

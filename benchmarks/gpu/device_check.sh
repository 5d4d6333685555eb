#!/usr/bin/env bash
# The GPU device check: run from the repository root with $OUT set to an output dir.
#   OUT=/tmp/out bash benchmarks/gpu/device_check.sh
# Expects MXNet 1.9.1's tests and the runner carried in .device/ (ignored by git):
#   .device/mxnet-1.9.1-tests/tests/python/{unittest,gpu}/...  and
#   .device/tools/run_mxnet_unittests.py
# Every step has its own timeout and log under $OUT; one failing or hanging step does
# not stop the others. Without a GPU it says 'no GPU', runs the CPU-safe parts and
# exits 0. At most 8 files come back: the logs are merged into a few files.
set -u -o pipefail
export PYTHONUNBUFFERED=1
STEP_MIN_LEFT=15 STEP_KILL_AFTER=10 STEP_WIDTH=28
. "$(dirname "$0")/steps.sh"     # steps_begin NAME BUDGET; step NAME TIMEOUT LOGFILE CMD...
steps_begin device_check 360
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
SUITE=${SUITE:-$ROOT/.device/mxnet-1.9.1-tests}
RUNNER=${RUNNER:-$ROOT/.device/tools/run_mxnet_unittests.py}

ENV_LOG="$OUT/env_smoke.log"
step nvidia-smi 20 "$ENV_LOG" nvidia-smi -L
step versions 60 "$ENV_LOG" "$PY" -c '
import sys, numpy
print("python", sys.version.split()[0], "numpy", numpy.__version__)
try:
    import cupy
    print("cupy", cupy.__version__, "cuda runtime", cupy.cuda.runtime.runtimeGetVersion(),
          "devices", cupy.cuda.runtime.getDeviceCount())
except Exception as e:
    print("cupy: unavailable:", type(e).__name__, e)
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
          "cudnn", torch.backends.cudnn.version() if torch.cuda.is_available() else None)
except Exception as e:
    print("torch: unavailable:", type(e).__name__, e)
import mxnet as mx
print("mxnet", mx.__version__, "num_gpus", mx.context.num_gpus())
print(mx.runtime.Features())
try:
    import mxnet.backend.cudnn as c
    print("mxnet.backend.cudnn.available():", c.available())
except Exception as e:
    print("mxnet.backend.cudnn:", type(e).__name__, e)
'
step smoke 90 "$ENV_LOG" "$PY" benchmarks/gpu/smoke.py

NGPU=${FORCE_NGPU:-$("$PY" -c 'import mxnet as mx; print(mx.context.num_gpus())' 2>/dev/null || echo 0)}
echo "GPUs seen by pymxnet: $NGPU" | tee -a "$SUMMARY"

# --- the project's own tests that use GPU contexts ------------------------------------
PT_LOG="$OUT/tests_seeds.log"
if [ "$NGPU" -gt 0 ]; then
    step pytest-gpu 60 "$PT_LOG" "$PY" -m pytest -q -x -p no:cacheprovider \
        tests/gpu tests/test_context.py tests/test_runtime.py tests/test_rtc.py \
        tests/ndarray/test_serialization.py
else
    step pytest-gpu-cpu-only 60 "$PT_LOG" "$PY" -m pytest -q -x -p no:cacheprovider tests/gpu
fi

# --- seed programs with their GPU option ------------------------------------------------
SEED_LOG="$OUT/tests_seeds.log"
GPUFLAG=""; [ "$NGPU" -gt 0 ] && GPUFLAG="--gpu"
(cd examples && step seed000-reorg-customop 40 "$SEED_LOG" "$PY" module_lenet_custom_op.py \
    $GPUFLAG --synthetic --epochs 2 --limit 2000 --test-limit 400 --init xavier)
(cd examples && step seed001-custom-softmax 25 "$SEED_LOG" "$PY" custom_softmax_mlp.py \
    $GPUFLAG --synthetic --epochs 2 --num-examples 2000)
(cd examples && step seed001-numpy-softmax 25 "$SEED_LOG" "$PY" numpy_softmax.py \
    $GPUFLAG --synthetic --epochs 2 --num-examples 2000)
(cd examples && step seed003-simplecnn-autograd 25 "$SEED_LOG" "$PY" simplecnn_autograd.py \
    $GPUFLAG --synthetic --limit 3200)

# --- benchmark ---------------------------------------------------------------------------
if [ "$NGPU" -gt 0 ]; then
    step gpu-train-quick 140 "$OUT/gpu_train.log" "$PY" benchmarks/gpu_train.py --quick \
        --models resnet50,resnet18,cnn --timeout 60 --out "$OUT/bench"
    # two of the at most 8 returned files: bring the table and JSON up to $OUT
    cp "$OUT/bench/gpu_train.md" "$OUT/gpu_train.md" 2>/dev/null
    cat "$OUT/bench/gpu_train.json" >> "$OUT/gpu_train.log" 2>/dev/null
    rm -rf "$OUT/bench"
else
    echo "no GPU: benchmark skipped" | tee -a "$SUMMARY"
fi

# --- MXNet 1.9.1's GPU test files through the hold-out runner ----------------------------
# The runner takes files from tests/python/unittest only, and the GPU files import
# their CPU counterparts from ../unittest: a merged copy puts both in one folder.
SUITE_LOG="$OUT/gpu_suite.log"
MERGED=""
if [ -f "$RUNNER" ] && [ -d "$SUITE/tests/python/gpu" ]; then
    MERGED=$(mktemp -d /tmp/gpusuite.XXXX)
    cp -r "$SUITE/." "$MERGED/"
    for f in "$SUITE"/tests/python/gpu/test_*.py; do
        b=$(basename "$f")
        [ -e "$MERGED/tests/python/unittest/$b" ] || cp "$f" "$MERGED/tests/python/unittest/"
    done
    # A pytest plugin making mx.gpu(0) the tests' default context: what
    # test_operator_gpu.py does before importing the CPU tests (that file itself does
    # not import yet: pymxnet lacks mxnet.numpy_dispatch_protocol, sparse storage, ...).
    PLUG=$(mktemp -d /tmp/gpuplug.XXXX)
    cat > "$PLUG/mx_gpu_default_ctx.py" <<'PYEOF'
def pytest_configure(config):
    import mxnet as mx
    from mxnet.test_utils import set_default_context
    set_default_context(mx.gpu(0))
PYEOF
    if [ "$NGPU" -gt 0 ]; then
        SMALL=test_device,test_kvstore_gpu,test_gluon_gpu,test_gluon_model_zoo_gpu,test_contrib_amp,test_gluon_transforms
        PER_FILE=28
    else
        SMALL=test_device,test_kvstore_gpu; PER_FILE=30
    fi
    step gpu-suite-gpu-files 95 "$SUITE_LOG" "$PY" "$RUNNER" --suite-dir "$MERGED" \
        --python "$PY" --pythonpath "$ROOT/src" --nose-shim always --files "$SMALL" \
        --timeout-per-file $PER_FILE --timeout-per-test 30 --jobs 2 --junit \
        --out "$OUT/gpu_suite.json"
else
    echo "MXNet 1.9.1 suite or runner missing ($SUITE, $RUNNER): suite steps skipped" \
        | tee -a "$SUMMARY"
fi

# --- MXNet 1.9.1's operator tests with mx.gpu(0) as their default context ---------------
if [ -n "$MERGED" ] && [ "$NGPU" -gt 0 ]; then
    step gpu-suite-operator-on-gpu 100 "$SUITE_LOG" "$PY" "$RUNNER" --suite-dir "$MERGED" \
        --python "$PY" --pythonpath "$ROOT/src" --pythonpath "$PLUG" --nose-shim always \
        --files test_operator,test_gluon --timeout-per-file 80 --timeout-per-test 20 \
        --jobs 2 --pytest-arg=-p --pytest-arg=mx_gpu_default_ctx \
        --pytest-arg=-k --pytest-arg="convolution or pooling or batchnorm or fully_connected or softmax or activation or dot or dropout or conv or dense or lstm" \
        --junit --out "$OUT/gpu_suite_operator.json"
fi
[ -n "$MERGED" ] && rm -rf "$MERGED" "$PLUG"

# --- last, with whatever time is left: every operator case on CPU and GPU -------------------
if [ "$NGPU" -gt 0 ]; then
    # tests/opcheck.py checks each case on every context, the GPU included
    step pytest-operator-gpu 120 "$PT_LOG" "$PY" -m pytest -q -p no:cacheprovider \
        -n 4 --maxfail=200 tests/operator
fi
echo "done in $(( $(date +%s) - T_START ))s" | tee -a "$SUMMARY"
exit 0

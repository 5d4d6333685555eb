#!/usr/bin/env bash
# The final GPU device check (about 4.5 minutes at most), from the repository root:
#   OUT=/tmp/out bash benchmarks/gpu/final_check.sh
# Steps, each under its own timeout, a failing or hanging one does not stop the next,
# and an overall budget (TOTAL_BUDGET seconds) cuts the later ones short:
#   1. env: GPU, versions, cuDNN, the GPU kernel table
#   2. tests: tests/backend/cudnn, tests/gpu, the fused optimizer kernels
#   3. gpu_ops --quick (cuDNN vs CuPy bodies vs PyTorch, per operator)
#   4. gpu_train --quick, ResNet-50 first (pymxnet default TF32 / strict fp32 vs PyTorch)
#   5. [AMP step, merged in by the coordinator]
#   6. profile_step.py resnet50 hybridized (host cProfile + CUDA kernels), 2 steps
# At most 7 files come back in $OUT: summary.txt, env.log, tests.log, gpu_ops.md,
# gpu_train.md, profile_resnet50_hybridized.txt and logs.tar.gz (every other log/JSON).
set -u -o pipefail
export PYTHONUNBUFFERED=1
. "$(dirname "$0")/steps.sh"     # steps_begin NAME BUDGET; step NAME TIMEOUT LOGFILE CMD...
steps_begin final_check 340
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
WORK=$(mktemp -d /tmp/final_check.XXXX)     # logs that go into logs.tar.gz

# --- 1. env -------------------------------------------------------------------------------
step env 40 "$OUT/env.log" bash -c '
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
'"$PY"' benchmarks/gpu/env_probe.py'

NGPU=$("$PY" -c 'import mxnet as mx; print(mx.context.num_gpus())' 2>/dev/null || echo 0)
echo "GPUs seen by pymxnet: $NGPU" | tee -a "$SUMMARY"

# --- 2. tests -------------------------------------------------------------------------------
step tests 55 "$OUT/tests.log" "$PY" -m pytest -q --no-header -p no:cacheprovider \
    -rfE --maxfail=60 tests/backend/cudnn tests/gpu tests/operator/test_kernels_gpu_optim.py

if [ "$NGPU" -gt 0 ]; then
    # --- 3. per-operator timings --------------------------------------------------------------
    step gpu-ops 50 "$WORK/gpu_ops.log" "$PY" benchmarks/gpu_ops.py --quick --out "$WORK"
    cp "$WORK/gpu_ops.md" "$OUT/gpu_ops.md" 2>/dev/null

    # --- 4. training throughput, ResNet-50 first ------------------------------------------------
    step gpu-train 170 "$WORK/gpu_train.log" "$PY" benchmarks/gpu_train.py --quick \
        --models resnet50,resnet18,cnn --timeout 45 --out "$WORK/train"
    cp "$WORK/train/gpu_train.md" "$OUT/gpu_train.md" 2>/dev/null
    cp "$WORK/train/gpu_train.json" "$WORK/gpu_train.json" 2>/dev/null

    # --- 5. AMP: the float16 rows are gpu_train's 'amp' cases (step 4) ------------------------
    # every operator case of tests/opcheck.py on the GPU (CPU vs GPU vs NumPy reference):
    # check_consistency for every registered operator; -v so a cut-off run still shows
    # each finished item
    step opcheck-gpu 45 "$OUT/tests.log" "$PY" -m pytest -v --no-header -p no:cacheprovider \
        -n 8 -k "gpu" tests/operator

    # --- 6. profile of one hybridized ResNet-50 step ------------------------------------------
    step profile 40 "$WORK/profile.log" "$PY" benchmarks/gpu/profile_step.py \
        --model resnet50 --mode hybridized --steps 2 --out "$OUT"
else
    echo "no GPU: benchmarks and profile skipped" | tee -a "$SUMMARY"
fi

echo "done in $(( $(date +%s) - T_START ))s" | tee -a "$SUMMARY"
tar -czf "$OUT/logs.tar.gz" -C "$WORK" . 2>/dev/null
rm -rf "$WORK"
exit 0

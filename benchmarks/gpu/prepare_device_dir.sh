#!/usr/bin/env bash
# Fill .device/ (git-ignored through .git/info/exclude) with what the device checks carry
# (run's carry: [".device"]), from the repository root of a checkout with ../shared:
#   bash benchmarks/gpu/prepare_device_dir.sh
# - wheels/: ml_dtypes for the device's Python (3.12 there; pymxnet needs it for
#   bfloat16 and the device image lacks it), downloaded for that Python's tag
# - mxnet-1.9.1-tests/ and tools/run_mxnet_unittests.py: MXNet's suite and its runner,
#   for the checks' MXNet GPU files step
set -euo pipefail
DEVICE_PY=${DEVICE_PY:-3.12}
mkdir -p .git/info
grep -qx "/.device/" .git/info/exclude 2>/dev/null || echo "/.device/" >> .git/info/exclude
mkdir -p .device/wheels .device/tools
python3 -m pip download -q ml_dtypes --no-deps --only-binary=:all: \
    --python-version "$DEVICE_PY" --platform manylinux_2_28_x86_64 -d .device/wheels
SHARED=${SHARED:-../shared}
if [ -d "$SHARED/mxnet-1.9.1-tests" ]; then
    rm -rf .device/mxnet-1.9.1-tests
    cp -r "$SHARED/mxnet-1.9.1-tests" .device/
    cp "$SHARED/tools/run_mxnet_unittests.py" .device/tools/
fi
du -sh .device

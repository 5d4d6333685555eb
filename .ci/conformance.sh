#!/usr/bin/env bash
# Conformance ratchet: the MXNet 1.9.1 unit tests listed in tests/conformance/passing.txt
# must all pass on this checkout. Runs only when MXNet's suite sits beside the clone
# (../shared/mxnet-1.9.1-tests, with its runner in ../shared/tools); says so otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
# MXNET_CONFORMANCE_SHARED points elsewhere (e.g. from a git worktree); default ../shared
SHARED="${MXNET_CONFORMANCE_SHARED:-$ROOT/../shared}"
SUITE="$SHARED/mxnet-1.9.1-tests"
RUNNER="$SHARED/tools/run_mxnet_unittests.py"
LIST="$ROOT/tests/conformance/passing.txt"
if [ ! -d "$SUITE" ]; then
  echo "conformance: $SUITE not present beside the clone: step not run"
  exit 0
fi
if [ ! -f "$RUNNER" ]; then
  echo "conformance: the suite is present but its runner $RUNNER is missing" >&2
  exit 1
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# A fresh venv holding this checkout and what MXNet's nose-style tests import.
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q "pytest<8" pytest-xdist nose scipy pillow requests "$ROOT"
FILES="$(python3 tests/conformance/update_passing.py --files)"
# Fixed seed: MXNet's with_seed() tests draw the same data as when the list was made.
CONFORMANCE_IDS="$LIST" python3 "$RUNNER" --suite-dir "$SUITE" --python "$WORK/venv/bin/python" \
  --files "$FILES" --jobs 2 --seed 42 --timeout-per-test 300 --timeout-per-file 540 \
  --pythonpath "$ROOT/tests/conformance" --pytest-arg=-p --pytest-arg=conformance_select \
  --junit --out "$WORK/result.json"
python3 tests/conformance/update_passing.py --check "$WORK/result.json"

# MXNet's GPU test files (tests/python/gpu) on one GPU emulated on the host
# (tests/multi_gpu_host.py, loaded by tests/conformance/emulated_gpu/sitecustomize.py):
# their tests run through pymxnet's GPU dispatch path with CuPy's array contract
# checked (the GPU kernels themselves run only on a device). The listed ones must pass.
GPU_LIST="passing_gpu_emulated.txt"
if [ -d "$SUITE/tests/python/gpu" ] && [ -s "$ROOT/tests/conformance/$GPU_LIST" ]; then
  MERGED="$WORK/gpu-suite"          # the runner takes files from tests/python/unittest
  cp -r "$SUITE/." "$MERGED"
  chmod -R u+w "$MERGED"
  cp -n "$SUITE"/tests/python/gpu/test_*.py "$MERGED/tests/python/unittest/"
  CONFORMANCE_IDS="$ROOT/tests/conformance/$GPU_LIST" python3 "$RUNNER" --suite-dir "$MERGED" \
    --python "$WORK/venv/bin/python" \
    --files "$(python3 tests/conformance/update_passing.py --list "$GPU_LIST" --files)" \
    --jobs 1 --seed 42 --timeout-per-test 300 --timeout-per-file 1200 \
    --pythonpath "$ROOT/tests/conformance" --pythonpath "$ROOT/tests/conformance/emulated_gpu" \
    --pytest-arg=-p --pytest-arg=conformance_select --pytest-arg=-n --pytest-arg=2 \
    --junit --out "$WORK/result_gpu.json"
  python3 tests/conformance/update_passing.py --list "$GPU_LIST" --check "$WORK/result_gpu.json"
fi

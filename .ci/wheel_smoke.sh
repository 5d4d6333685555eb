#!/usr/bin/env bash
# Builds pymxnet's wheel (python -m build), installs it in a fresh virtual environment
# with nothing else, and smoke-tests the installed package from outside the checkout:
# import, a Gluon forward/backward checked against NumPy, the console scripts and
# mxnet-diagnose. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
python3 -m pip install -q build
python3 -m build --wheel --outdir "$WORK/dist" . >"$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log"; exit 1; }
WHEEL="$(ls "$WORK"/dist/pymxnet-*.whl)"
echo "built $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB)"
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q "$WHEEL"
cd "$WORK"                      # nothing from the checkout is importable from here
"$WORK/venv/bin/python" - <<'PY'
import importlib.metadata as md
import os

import numpy as np

import mxnet as mx
from mxnet import autograd, gluon

assert "site-packages" in mx.__file__, mx.__file__
print("import mxnet: pymxnet", md.version("pymxnet"), "from", os.path.dirname(mx.__file__))
net = gluon.nn.Dense(3, in_units=4)
net.initialize(mx.init.Normal(0.5))
x = mx.nd.array(np.arange(8, dtype=np.float32).reshape(2, 4) / 8)
with autograd.record():
    y = net(x)
    loss = (y * y).sum()
loss.backward()
w, b = net.weight.data().asnumpy(), net.bias.data().asnumpy()
want = x.asnumpy() @ w.T + b
np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(net.weight.grad().asnumpy(), 2 * want.T @ x.asnumpy(),
                           rtol=1e-5, atol=1e-6)
print("gluon Dense forward/backward matches NumPy: loss %.6f" % loss.asscalar())
PY
for tool in mxnet-im2rec mxnet-parse-log mxnet-bandwidth mxnet-launch mxnet-kill; do
  "$WORK/venv/bin/$tool" --help >/dev/null
done
echo "console scripts answer --help: mxnet-im2rec mxnet-parse-log mxnet-bandwidth mxnet-launch mxnet-kill"
"$WORK/venv/bin/mxnet-diagnose" --hardware 0
echo "wheel smoke test passed"

"""Loaded at interpreter start by the conformance step's MXNet GPU-file run (its
PYTHONPATH holds this folder): pymxnet sees one GPU emulated on the host
(tests/multi_gpu_host.py), so MXNet's GPU test files run their tests through
pymxnet's GPU dispatch path with CuPy's array contract checked. Never on a machine
with a real GPU: the step is for CPU-only CI."""
import atexit
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import mxnet  # noqa: E402,F401
import multi_gpu_host  # noqa: E402

if mxnet.backend.cupy_or_none() is None:
    # entered for the whole process (kept referenced: a collected generator would
    # leave the emulation at once)
    _EMULATION = multi_gpu_host.emulated_gpus(1)
    _EMULATION.__enter__()
    atexit.register(_EMULATION.__exit__, None, None, None)   # before teardown

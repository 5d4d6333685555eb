"""What a GPU device run is running on, one line per component (read first in a
device check's env.log): Python/NumPy, CuPy and its CUDA runtime, PyTorch and its
cuDNN, pymxnet's view (GPUs, cuDNN library, convolution math types, registered GPU
kernels) and whether the cuBLAS that CUDA-graph captures use is loaded.

    python3 benchmarks/gpu/env_probe.py
"""
import os
import sys

import numpy as np


def main():
    print("python", sys.version.split()[0], "numpy", np.__version__)
    try:
        import cupy
        print("cupy", cupy.__version__, "cuda runtime",
              cupy.cuda.runtime.runtimeGetVersion())
    except Exception as e:  # noqa: BLE001  (a probe reports, never stops)
        print("cupy unavailable:", type(e).__name__, e)
    try:
        import torch
        print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(),
              "allow_tf32 default", torch.backends.cudnn.allow_tf32)
    except Exception as e:  # noqa: BLE001
        print("torch unavailable:", type(e).__name__, e)
    import mxnet as mx
    from mxnet.backend import cudnn, cublas_graph
    from mxnet.backend.cudnn import descriptors as D
    from mxnet.operator.kernels import registered_kernels
    print("mxnet", mx.__version__, "num_gpus", mx.context.num_gpus())
    print("cudnn", cudnn.available(), cudnn.version(), cudnn.library_path(),
          cudnn.load_error())
    try:
        print("conv math fp32", D.conv_math_type(np.float32), "fp16",
              D.conv_math_type(np.float16), "(0 DEFAULT, 1 TENSOR_OP, 2 ALLOW_CONVERSION, "
              "3 FMA)", "NVIDIA_TF32_OVERRIDE", os.environ.get("NVIDIA_TF32_OVERRIDE"))
    except Exception as e:  # noqa: BLE001
        print("conv math unavailable:", type(e).__name__, e)
    print("gpu kernels", sorted({k[0] for k in registered_kernels() if k[1] == "gpu"}))
    try:
        import cupy
        cupy.matmul(cupy.ones((2, 2)), cupy.ones((2, 2)))   # CuPy loads its libcublas
    except Exception as e:  # noqa: BLE001
        print("cupy matmul failed:", type(e).__name__, e)
    print("cublas for captures:", cublas_graph.available(), cublas_graph._state)


if __name__ == "__main__":
    main()

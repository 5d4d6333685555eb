"""Operators: the registry, parameter schemas, every built-in operator, and the
Python custom-operator interfaces (CustomOp/CustomOpProp/register, NumpyOp, NDArrayOp).
"""
from .registry import Op, OpContext, register as register_op, get_op, list_ops, apply_req
from . import ops as _ops  # noqa: F401  (registers the built-in operators)
from . import nn as _nn  # noqa: F401
from . import contrib as _contrib  # noqa: F401  (MXNet's _contrib_* operators)
from . import control_flow as _control_flow  # noqa: F401  (_foreach, _while_loop, _cond)
from . import subgraph_ops as _subgraph_ops  # noqa: F401  (_CachedOp, _sg_mkldnn_*)
from . import kernels_cpu as _kernels_cpu  # noqa: F401  (CPU kernels in the kernel table)
# oneDNN kernels first on CPU (the library loads on first use; MXNET_MKLDNN_ENABLED=0 or
# a missing library falls back to the kernels above and the NumPy bodies)
from .kernels_onednn import register_all as _onednn_register_all  # noqa: E402
from .kernels import lookup_kernel as _lookup_kernel, register_kernel as _register_kernel  # noqa: E402
_onednn_register_all(_register_kernel, _lookup_kernel)
# cuDNN kernels on GPU, registered only where CuPy is installed (libcudnn loads on the
# first GPU call; without it the CuPy bodies run)
import importlib.util as _ilu  # noqa: E402
if _ilu.find_spec("cupy") is not None:
    from .kernels_cudnn import register_all as _cudnn_register_all
    _cudnn_register_all(_register_kernel, _lookup_kernel)
    # RNN on cuDNN (MXNET_CUDNN_RNN=1; otherwise its fused-cell body)
    from .kernels_cudnn_rnn import register_all as _cudnn_rnn_register_all
    _cudnn_rnn_register_all(_register_kernel)
    # fused optimizer updates (one CuPy ElementwiseKernel per call)
    from .kernels_gpu_optim import register_all as _gpu_optim_register_all
    _gpu_optim_register_all(_register_kernel)
    # Dropout's forward as one kernel drawing from the device's Philox stream
    from .kernels_gpu_dropout import register_all as _gpu_dropout_register_all
    _gpu_dropout_register_all(_register_kernel)
    # pick (every classification loss) as one gather / one scatter kernel
    from .kernels_gpu_pick import register_all as _gpu_pick_register_all
    _gpu_pick_register_all(_register_kernel)
    # LayerNorm over the last axis: one kernel forward, two or three backward
    from .kernels_gpu_layernorm import register_all as _gpu_layernorm_register_all
    _gpu_layernorm_register_all(_register_kernel)
    # GroupNorm / InstanceNorm: the same row kernels with a scale and shift per row
    from .kernels_gpu_groupnorm import register_all as _gpu_groupnorm_register_all
    _gpu_groupnorm_register_all(_register_kernel)
    # fused pairs of GPU executors (add -> relu; BatchNorm -> relu)
    from .kernels_gpu_fused import register_all as _gpu_fused_register_all
    from .kernels import register_fusion as _register_fusion
    from .kernels import register_backward_fusion as _register_backward_fusion
    from .kernels_cudnn import register_fusions as _cudnn_register_fusions
    _gpu_fused_register_all(_register_fusion)
    _cudnn_register_fusions(_register_fusion, "gpu", _register_backward_fusion)

from .custom import (CustomOp, CustomOpProp, register, PythonOp, NumpyOp,  # noqa: F401
                     NDArrayOp, get_all_registered_operators)

# Names MXNet 1.9.1's mx.operator module exposes (its own imports included).
from ctypes import cast, pointer  # noqa: E402,F401
from ..util import is_np_array  # noqa: E402,F401
from .info import OperatorArguments, get_operator_arguments, ctypes2numpy_shared  # noqa: E402,F401
import ctypes  # noqa: E402,F401
from ..base import NDArrayHandle  # noqa: E402,F401

# MXNet's module also exposes NDArray: the front end installs it (operator.frontend; the
# operator layer imports no front end), and __all__ lets `import *` reach it too.
__all__ = sorted([n for n in globals() if not n.startswith("_")] + ["NDArray"])


def __getattr__(name):
    if name == "NDArray":
        from .frontend import need
        return need("ndarray_class")
    raise AttributeError(f"module 'mxnet.operator' has no attribute {name!r}")

"""pymxnet: Apache MXNet 1.x rebuilt in Python. ``import mxnet as mx``."""
__version__ = "1.9.1"

from ._compat import restore_numpy_aliases as _restore_numpy_aliases
from ._compat import silence_kernel_floating_point_warnings as _silence_fp_warnings
from .base import MXNetError  # noqa: F401

_restore_numpy_aliases()
_silence_fp_warnings()
from .backend.cpu_threads import configure_blas_threads as _configure_blas_threads  # noqa: E402

_configure_blas_threads()
from . import base, context, engine, storage, resource  # noqa: F401
from .context import Context, cpu, gpu, cpu_pinned, current_context, num_gpus  # noqa: F401
from . import operator  # noqa: F401
from . import ndarray  # noqa: F401
from . import ndarray as nd  # noqa: F401
from . import autograd  # noqa: F401
from . import random  # noqa: F401
from . import name, attribute  # noqa: F401
from .attribute import AttrScope  # noqa: F401
from . import symbol  # noqa: F401
from . import symbol as sym  # noqa: F401
from . import executor  # noqa: F401
from . import initializer  # noqa: F401
from . import initializer as init  # noqa: F401
from . import optimizer  # noqa: F401
from . import lr_scheduler  # noqa: F401
from . import metric  # noqa: F401
from . import callback  # noqa: F401
from . import kvstore  # noqa: F401
from . import kvstore as kv  # noqa: F401
from . import io  # noqa: F401
from . import image  # noqa: F401
from . import image as img  # noqa: F401,E402  (MXNet 1.x alias)
from . import recordio  # noqa: F401
from . import model  # noqa: F401
from . import monitor  # noqa: F401
from . import monitor as mon  # noqa: F401
from . import module  # noqa: F401
from . import module as mod  # noqa: F401
from . import rtc  # noqa: F401
from . import gluon  # noqa: F401
from . import profiler  # noqa: F401
from . import visualization  # noqa: F401
from . import visualization as viz  # noqa: F401
from . import test_utils  # noqa: F401
# MXNet 1.9.1's util/runtime/contrib/log/rnn modules, NumPy mode (mx.np, mx.npx) and
# the top-level np switches
from . import util, runtime, log, contrib, rnn  # noqa: F401,E402
from . import error, library, executor_manager  # noqa: F401,E402
from . import notebook  # noqa: F401,E402
from .util import is_np_shape, set_np_shape, np_shape, use_np_shape  # noqa: F401,E402
from .util import is_np_array, np_array, use_np_array, use_np  # noqa: F401,E402
from . import random as rnd  # noqa: F401,E402
from . import numpy, numpy_extension  # noqa: F401,E402
from . import numpy as np, numpy_extension as npx  # noqa: F401,E402
from .numpy import nd_namespace as _nd_np, sym_namespace as _sym_np  # noqa: E402
from .numpy_extension import nd_namespace as _nd_npx, sym_namespace as _sym_npx  # noqa: E402
# MXNet's mx.nd.np/npx and mx.sym.np/npx: made by the np layer, above nd and sym
import sys as _sys  # noqa: E402
_sys.modules.update({"mxnet.ndarray.numpy": _nd_np, "mxnet.ndarray.numpy_extension": _nd_npx,
                     "mxnet.symbol.numpy": _sym_np, "mxnet.symbol.numpy_extension": _sym_npx})
ndarray.np, ndarray.npx, symbol.np, symbol.npx = _nd_np, _nd_npx, _sym_np, _sym_npx
from . import onnx  # noqa: F401,E402

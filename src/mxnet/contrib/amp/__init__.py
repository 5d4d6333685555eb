"""mx.contrib.amp: automatic mixed precision (MXNet 1.9.1's names).

``amp.init()`` makes the ``mx.nd``/``mx.sym`` operators (and so Gluon) cast their
inputs per the operator lists in ``lists/``; ``init_trainer``/``scale_loss``/``unscale``
add dynamic loss scaling; ``convert_symbol``/``convert_model``/``convert_hybrid_block``/
``convert_bucketing_module`` convert float32 models offline. The target dtype is
float16 or bfloat16 (NumPy arrays on the CPU, CuPy arrays on the GPU; bfloat16 is
ml_dtypes' type).
"""
from . import amp  # noqa: F401
from . import lists  # noqa: F401
from . import loss_scaler  # noqa: F401
from .amp import *  # noqa: F401,F403

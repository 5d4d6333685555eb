"""mx.contrib.amp: automatic mixed precision (MXNet 1.9.1 names).

pymxnet does not implement AMP yet: the package imports (code that only imports it
keeps working) and every function raises NotImplementedError naming itself.
"""
from . import amp  # noqa: F401
from .amp import *  # noqa: F401,F403

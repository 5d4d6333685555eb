"""mx.mod / mx.module: the Module API (MXNet 1.9.1).

``Module`` trains and runs a Symbol on one or more devices; ``BucketingModule``
handles inputs of varying shapes with one Module per bucket sharing parameters;
``SequentialModule`` chains modules; ``PythonModule``/``PythonLossModule`` are
computed in Python. All share ``BaseModule``'s fit/score/predict.
"""
from .base_module import BaseModule  # noqa: F401
from .module import Module  # noqa: F401
from .bucketing_module import BucketingModule  # noqa: F401
from .sequential_module import SequentialModule  # noqa: F401
from .python_module import PythonModule, PythonLossModule  # noqa: F401
from .executor_group import DataParallelExecutorGroup  # noqa: F401
from .. import monitor as _monitor  # noqa: F401  (makes mx.monitor importable as an attribute)

__all__ = ["BaseModule", "Module", "BucketingModule", "SequentialModule", "PythonModule",
           "PythonLossModule"]

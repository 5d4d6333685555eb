"""SVRG optimization (MXNet 1.9.1's ``mx.contrib.svrg_optimization``): SVRGModule, a
Module trained with Stochastic Variance Reduced Gradient, and the optimizer wrapper
it installs (``svrg_module.SVRGModule``, ``svrg_optimizer._SVRGOptimizer``)."""
from . import svrg_module, svrg_optimizer  # noqa: F401

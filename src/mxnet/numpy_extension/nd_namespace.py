"""``mx.nd.npx`` (``mxnet.ndarray.numpy_extension``, installed by ``mxnet/__init__``): the imperative namespace behind ``mx.npx`` (MXNet 1.9.1's
``mxnet.ndarray.numpy_extension``): the same front ends over the operator registry."""
from .. import numpy_extension as _mnpx

__all__ = sorted(
    "activation arange_like batch_dot batch_flatten batch_norm cast constraint_check "
    "convolution deconvolution dropout embedding erf erfinv fully_connected gamma gammaln "
    "gather_nd layer_norm leaky_relu log_softmax multibox_detection multibox_prior "
    "multibox_target nonzero one_hot pick pooling relu reshape reshape_like rnn "
    "roi_pooling sequence_mask shape_array sigmoid slice smooth_l1 softmax topk".split())

globals().update({_n: getattr(_mnpx, _n) for _n in __all__})


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_mnpx, name)

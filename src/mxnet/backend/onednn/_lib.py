"""Finding and loading libdnnl (oneDNN 3.x, C API) through ctypes.

Only the C API's opaque-handle functions are used (memory descriptors are handles, not
structs), so no header is needed; the enum values below are those of oneDNN 3.x's
``dnnl_types.h`` / ``dnnl_common_types.h`` and the tests check several of them against
the library's own ``dnnl_*2str`` functions.
"""
import ctypes
import ctypes.util
import os
import sys
import sysconfig

__all__ = ["load", "check", "DnnlError"]

# --- enum values (oneDNN 3.x) --------------------------------------------------------
SUCCESS = 0
BF16 = 2                             # dnnl_bf16
F32 = 3
FORMAT_ANY = 1                       # dnnl_format_tag_any
CPU = 1                              # dnnl_cpu engine kind
STREAM_IN_ORDER = 1
SCRATCHPAD_USER = 1                  # dnnl_scratchpad_mode_user

FORWARD_TRAINING, FORWARD_INFERENCE = 64, 96
BACKWARD, BACKWARD_DATA, BACKWARD_WEIGHTS = 128, 160, 192

CONVOLUTION_DIRECT = 0x1
DECONVOLUTION_DIRECT = 0xa
ELTWISE_RELU, ELTWISE_TANH, ELTWISE_SOFT_RELU, ELTWISE_LOGISTIC = 0x20, 0x21, 0x27, 0x29
ELTWISE_RELU_DST, ELTWISE_TANH_DST, ELTWISE_LOGISTIC_DST = 0x100, 0x101, 0x104
POOLING_MAX, POOLING_AVG_INCLUDE, POOLING_AVG_EXCLUDE = 0x1FF, 0x2FF, 0x3FF
LRN_ACROSS_CHANNELS = 0xAFF
SOFTMAX_ACCURATE, SOFTMAX_LOG = 0x30000, 0x30001
BINARY_ADD, BINARY_MUL = 0x1fff0, 0x1fff1

USE_GLOBAL_STATS, USE_SCALE, USE_SHIFT = 0x1, 0x2, 0x4

QUERY_WORKSPACE_MD, QUERY_SCRATCHPAD_MD, QUERY_EXEC_ARG_MD = 135, 136, 255

ARG_SRC, ARG_DST, ARG_WEIGHTS, ARG_BIAS = 1, 17, 33, 41
ARG_MEAN, ARG_VARIANCE, ARG_SCALE, ARG_SHIFT = 49, 50, 51, 52
ARG_WORKSPACE, ARG_SCRATCHPAD = 64, 80
ARG_DIFF_SRC, ARG_DIFF_DST, ARG_DIFF_WEIGHTS, ARG_DIFF_BIAS = 129, 145, 161, 169
ARG_DIFF_SCALE, ARG_DIFF_SHIFT = 255, 256
ARG_FROM, ARG_TO = 1, 17             # reorder
ARG_SRC_1 = 2                        # a binary post-op's second operand ...
_ARG_POST_OP_BASE = 32768            # ... of post-op i: DNNL_ARG_ATTR_MULTIPLE_POST_OP(i)


def post_op_arg(i):
    """The argument id of the second operand of the binary post-op at position i."""
    return _ARG_POST_OP_BASE * (i + 1) | ARG_SRC_1

MAX_NDIMS = 12
Dims = ctypes.c_int64 * MAX_NDIMS
_p = ctypes.c_void_p
_i, _u, _f, _i64, _sz = ctypes.c_int, ctypes.c_uint, ctypes.c_float, ctypes.c_int64, \
    ctypes.c_size_t
_pp = ctypes.POINTER(ctypes.c_void_p)
_D = ctypes.POINTER(ctypes.c_int64)   # const dnnl_dims_t (NULL allowed)


class ExecArg(ctypes.Structure):
    """dnnl_exec_arg_t: {int arg; dnnl_memory_t memory;}"""
    _fields_ = [("arg", ctypes.c_int), ("memory", ctypes.c_void_p)]


class Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint),
                ("gpu_runtime", ctypes.c_uint)]


class DnnlError(RuntimeError):
    """A oneDNN call returned a status other than success."""

    def __init__(self, fn, status):
        super().__init__(f"oneDNN {fn} failed with status {status}")
        self.status = status


# name: (restype, argtypes); restype None means dnnl_status_t checked by the caller.
_SIGNATURES = {
    "dnnl_version": (ctypes.POINTER(Version), []),
    "dnnl_status2str": (ctypes.c_char_p, [_i]),
    "dnnl_alg_kind2str": (ctypes.c_char_p, [_i]),
    "dnnl_prop_kind2str": (ctypes.c_char_p, [_i]),
    "dnnl_engine_create": (_i, [_pp, _i, _sz]),
    "dnnl_set_primitive_cache_capacity": (_i, [_i]),
    "dnnl_stream_create": (_i, [_pp, _p, _u]),
    "dnnl_stream_wait": (_i, [_p]),
    "dnnl_memory_desc_create_with_strides": (_i, [_pp, _i, Dims, _i, Dims]),
    "dnnl_memory_desc_create_with_tag": (_i, [_pp, _i, Dims, _i, _i]),
    "dnnl_memory_desc_create_with_string_tag": (_i, [_pp, _i, Dims, _i, ctypes.c_char_p]),
    "dnnl_memory_desc_destroy": (_i, [_p]),
    "dnnl_memory_desc_clone": (_i, [_pp, _p]),
    "dnnl_memory_desc_equal": (_i, [_p, _p]),
    "dnnl_memory_desc_get_size": (_sz, [_p]),
    "dnnl_memory_create": (_i, [_pp, _p, _p, _p]),
    "dnnl_memory_set_data_handle": (_i, [_p, _p]),
    "dnnl_memory_destroy": (_i, [_p]),
    "dnnl_primitive_attr_create": (_i, [_pp]),
    "dnnl_primitive_attr_destroy": (_i, [_p]),
    "dnnl_primitive_attr_set_scratchpad_mode": (_i, [_p, _i]),
    "dnnl_primitive_attr_set_post_ops": (_i, [_p, _p]),
    "dnnl_post_ops_create": (_i, [_pp]),
    "dnnl_post_ops_destroy": (_i, [_p]),
    "dnnl_post_ops_append_eltwise": (_i, [_p, _i, _f, _f]),
    "dnnl_post_ops_append_binary": (_i, [_p, _i, _p]),
    "dnnl_primitive_desc_query_md": (_p, [_p, _i, _i]),
    "dnnl_primitive_desc_destroy": (_i, [_p]),
    "dnnl_primitive_create": (_i, [_pp, _p]),
    "dnnl_primitive_execute": (_i, [_p, _p, _i, ctypes.POINTER(ExecArg)]),
    "dnnl_primitive_destroy": (_i, [_p]),
    "dnnl_reorder_primitive_desc_create": (_i, [_pp, _p, _p, _p, _p, _p]),
    # src, weights, bias, dst; strides, dilates, padding_l, padding_r; attr
    "dnnl_convolution_forward_primitive_desc_create":
        (_i, [_pp, _p, _i, _i, _p, _p, _p, _p, _D, _D, _D, _D, _p]),
    "dnnl_convolution_backward_data_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _p, _D, _D, _D, _D, _p, _p]),
    "dnnl_convolution_backward_weights_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _p, _p, _D, _D, _D, _D, _p, _p]),
    "dnnl_deconvolution_forward_primitive_desc_create":
        (_i, [_pp, _p, _i, _i, _p, _p, _p, _p, _D, _D, _D, _D, _p]),
    "dnnl_deconvolution_backward_data_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _p, _D, _D, _D, _D, _p, _p]),
    "dnnl_deconvolution_backward_weights_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _p, _p, _D, _D, _D, _D, _p, _p]),
    # prop, alg, src, dst, strides, kernel, dilation, padding_l, padding_r, attr
    "dnnl_pooling_forward_primitive_desc_create":
        (_i, [_pp, _p, _i, _i, _p, _p, _D, _D, _D, _D, _D, _p]),
    "dnnl_pooling_backward_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _D, _D, _D, _D, _D, _p, _p]),
    "dnnl_batch_normalization_forward_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _f, _u, _p]),
    "dnnl_batch_normalization_backward_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _p, _f, _u, _p, _p]),
    # prop, src, dst, stat, epsilon, flags, attr
    "dnnl_layer_normalization_forward_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _p, _f, _u, _p]),
    # prop, diff_src, diff_dst, src, stat, epsilon, flags, hint, attr
    "dnnl_layer_normalization_backward_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _p, _p, _f, _u, _p, _p]),
    "dnnl_inner_product_forward_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _p, _p, _p]),
    "dnnl_inner_product_backward_data_primitive_desc_create":
        (_i, [_pp, _p, _p, _p, _p, _p, _p]),
    "dnnl_inner_product_backward_weights_primitive_desc_create":
        (_i, [_pp, _p, _p, _p, _p, _p, _p, _p]),
    "dnnl_softmax_forward_primitive_desc_create": (_i, [_pp, _p, _i, _i, _p, _p, _i, _p]),
    "dnnl_softmax_backward_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _p, _i, _p, _p]),
    "dnnl_eltwise_forward_primitive_desc_create":
        (_i, [_pp, _p, _i, _i, _p, _p, _f, _f, _p]),
    "dnnl_eltwise_backward_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _p, _f, _f, _p, _p]),
    "dnnl_lrn_forward_primitive_desc_create":
        (_i, [_pp, _p, _i, _i, _p, _p, _i64, _f, _f, _f, _p]),
    "dnnl_lrn_backward_primitive_desc_create":
        (_i, [_pp, _p, _i, _p, _p, _p, _i64, _f, _f, _f, _p, _p]),
}


def _candidates():
    """Where libdnnl may be, most specific first."""
    explicit = os.environ.get("MXNET_ONEDNN_LIBRARY")
    if explicit:
        yield explicit
    # The onednn-cpu-gomp wheel installs its libraries as data files into <prefix>/lib;
    # its RECORD knows the exact place (venv, --user or system install alike).
    try:
        from importlib import metadata
        for dist_name in ("onednn-cpu-gomp", "onednn"):
            try:
                dist = metadata.distribution(dist_name)
            except metadata.PackageNotFoundError:
                continue
            for f in dist.files or ():
                if f.name.startswith("libdnnl.so"):
                    yield os.path.realpath(str(dist.locate_file(f)))
    except Exception:   # a broken metadata store must not break import mxnet
        pass
    for base in (sys.prefix, sysconfig.get_paths().get("data"), sys.base_prefix,
                 getattr(__import__("site"), "USER_BASE", None)):
        if base:
            yield os.path.join(base, "lib", "libdnnl.so.3")
    found = ctypes.util.find_library("dnnl")
    if found:
        yield found
    yield "libdnnl.so.3"


def _bind(lib):
    for name, (res, args) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args


def load():
    """(CDLL, path) of the first libdnnl that loads and is version 3.x; raises OSError
    naming every place tried when none does."""
    tried = []
    seen = set()
    for path in _candidates():
        if path in seen:
            continue
        seen.add(path)
        if os.path.isabs(path) and not os.path.exists(path):
            tried.append(f"{path} (absent)")
            continue
        try:
            lib = ctypes.CDLL(path)
            _bind(lib)
        except (OSError, AttributeError) as e:
            tried.append(f"{path} ({e})")
            continue
        v = lib.dnnl_version().contents
        if v.major != 3:
            tried.append(f"{path} (version {v.major}.{v.minor}, need 3.x)")
            continue
        return lib, path
    raise OSError("libdnnl (oneDNN 3.x) not found; tried: " + "; ".join(tried))


def check(lib, fn, status):
    if status != SUCCESS:
        raise DnnlError(fn, status)

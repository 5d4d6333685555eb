"""Fused optimizer updates on the GPU: one CuPy ElementwiseKernel per update call.

The operators' xp bodies (``ops/optimizer_ops.py``) spell an update as five to ten
array expressions, each a CUDA launch and a pass over memory; a ResNet-50 step with
momentum SGD made ~1000 such launches. Here each rule is a few scalar statements, turned
into one ElementwiseKernel (weight, grad and states read once, the new weight and the
states written once), registered in the kernel table for device 'gpu'.

A rule is written once, in a small language that is both C and Python: statements
``name = expression`` over the arguments, the states, ``T(constant)`` casts, ``+ - * /``,
``sqrt`` and ``clip_grad(x, bound)`` (x clipped to [-bound, bound], unchanged when the
bound is negative: MXNet's "clip_gradient < 0 means off"). ``cuda_source`` makes the
kernel body from it; ``evaluate`` runs the same statements with NumPy, which is how the
rules are checked against the operators' bodies on machines without a GPU.

Covered: sgd_update, sgd_mom_update, adam_update, and multi_sgd_update /
multi_sgd_mom_update (one multi-tensor launch for the group, ``kernels_gpu_multi``),
for float32/float64 weights whose gradient and states have
the weight's shape and dtype. Anything else (float16 weights, the multi-precision and
preloaded variants, mismatched inputs, which the operator reports) returns
NotImplemented and the operator's body runs.

Also here, the other half of an AMP step: all_finite / multi_all_finite without a host
round trip per array: one multi-tensor launch over every array (kernels_gpu_multi) sets
the flag on the device. The operator's body asks the host (``bool(...)``) once per
array, which made AMP's loss scaler wait for the GPU ~190 times per ResNet-50 step.
"""
import re

import numpy as np

__all__ = ["RULES", "cuda_source", "evaluate", "register_all", "all_finite_gpu"]

# name: (scalar parameters (operator parameter names), states, statements)
# 'weight', 'grad' are the inputs; 'wout' is the new weight.
RULES = {
    "sgd_update": (
        ("lr", "wd", "rescale_grad", "clip_gradient"), (),
        ("g = clip_grad(rescale_grad * grad, clip_gradient)",
         "wout = (T(1) - lr * wd) * weight - lr * g")),
    "sgd_mom_update": (
        ("lr", "momentum", "wd", "rescale_grad", "clip_gradient"), ("mom",),
        # weight decay is added after clipping (MXNet's SGD rule)
        ("g = clip_grad(rescale_grad * grad, clip_gradient) + wd * weight",
         "mom = momentum * mom - lr * g",
         "wout = weight + mom")),
    "adam_update": (
        ("lr", "beta1", "beta2", "epsilon", "wd", "rescale_grad", "clip_gradient"),
        ("mean", "var"),
        # weight decay before clipping (MXNet's Adam rule)
        ("g = clip_grad(rescale_grad * grad + wd * weight, clip_gradient)",
         "mean = beta1 * mean + (T(1) - beta1) * g",
         "var = beta2 * var + (T(1) - beta2) * g * g",
         "wout = weight - lr * mean / (sqrt(var) + epsilon)")),
}

_PREAMBLE = """
template <typename T>
__device__ __forceinline__ T clip_grad(T x, T bound) {
    return bound < T(0) ? x : (x > bound ? bound : (x < -bound ? -bound : x));
}
"""
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(.+)$")


def _split(stmt):
    m = _ASSIGN.match(stmt)
    if m is None:
        raise ValueError(f"not an assignment: {stmt!r}")
    return m.group(1), m.group(2)


def cuda_source(name):
    """(in_params, out_params, operation) of ``name``'s ElementwiseKernel."""
    scalars, states, stmts = RULES[name]
    known = {"weight", "grad", "wout", *scalars, *states}
    lines = []
    for stmt in stmts:
        lhs, rhs = _split(stmt)
        decl = "" if lhs in known else "T "
        known.add(lhs)
        lines.append(f"{decl}{lhs} = {rhs};")
    in_params = ", ".join(f"T {n}" for n in ("weight", "grad") + tuple(scalars))
    out_params = ", ".join(f"T {n}" for n in tuple(states) + ("wout",))
    return in_params, out_params, "\n".join(lines)


def _np_clip(x, bound):
    return x if bound < 0 else np.clip(x, -bound, bound)


def evaluate(name, weight, grad, states, **scalars):
    """Run ``name``'s statements with NumPy, in the weight's dtype: returns the new
    weight; ``states`` (a list of arrays) are updated in place."""
    params, state_names, stmts = RULES[name]
    ty = weight.dtype.type
    env = {"T": ty, "sqrt": np.sqrt, "clip_grad": _np_clip, "weight": weight,
           "grad": grad}
    env.update({k: ty(scalars[k]) for k in params})
    env.update(zip(state_names, states))
    for stmt in stmts:
        lhs, rhs = _split(stmt)
        val = np.asarray(eval(rhs, {"__builtins__": {}}, env), dtype=weight.dtype)  # noqa: S307
        env[lhs] = val
    for s, n in zip(states, state_names):
        s[...] = env[n]
    return env["wout"]


_KERNELS = {}


def _kernel(cp, name):
    k = _KERNELS.get(name)
    if k is None:
        in_p, out_p, op = cuda_source(name)
        k = _KERNELS[name] = cp.ElementwiseKernel(in_p, out_p, op, f"mxnet_{name}",
                                                  preamble=_PREAMBLE)
    return k


def _fused(name):
    params, state_names, _ = RULES[name]

    def kernel(ctx, p, inputs, aux, out=None):
        arrays = list(inputs) + list(aux)
        w = inputs[0]
        if not type(w).__module__.startswith("cupy") or len(inputs) != 2 or \
                len(aux) != len(state_names):
            return NotImplemented
        import cupy as cp
        if w.dtype not in _FLOATS or any(
                not isinstance(a, cp.ndarray) or a.shape != w.shape or a.dtype != w.dtype
                or a.device != w.device for a in arrays):
            return NotImplemented
        dst = out[0] if out else None
        if not (isinstance(dst, cp.ndarray) and dst.shape == w.shape
                and dst.dtype == w.dtype and dst.device == w.device):
            dst = None
        ty = w.dtype.type
        vals = [ty(getattr(p, n)) for n in params]
        with w.device:
            if dst is None:
                dst = cp.empty_like(w)
            _kernel(cp, name)(w, inputs[1], *vals, *aux, dst)
        return [dst]
    kernel.__name__ = f"{name}_fused_gpu"
    return kernel


def _usable(cp, group):
    """The arrays of one weight's update are CuPy float32/64 arrays of one shape, dtype
    and device."""
    w = group[0]
    return isinstance(w, cp.ndarray) and w.dtype in _FLOATS and all(
        isinstance(a, cp.ndarray) and a.shape == w.shape and a.dtype == w.dtype
        and a.device == w.device for a in group)


def _multi_fused(momentum):
    """multi_sgd(_mom)_update: one multi-tensor launch for the group (kernels_gpu_multi)
    when its weights share one dtype, else the single-weight rule's kernel per weight."""
    name = "sgd_mom_update" if momentum else "sgd_update"
    params = RULES[name][0]
    per = 3 if momentum else 2

    def kernel(ctx, p, inputs, aux, out=None):
        n = p.num_weights
        if not inputs or not type(inputs[0]).__module__.startswith("cupy") or \
                len(inputs) != n * per or len(p.lrs) != n or len(p.wds) != n:
            return NotImplemented
        import cupy as cp
        from .kernels_gpu_multi import multi_update
        groups = [inputs[i * per:(i + 1) * per] for i in range(n)]
        if not all(_usable(cp, g) for g in groups):
            return NotImplemented
        dsts, scalars = [], []
        for i, group in enumerate(groups):
            w = group[0]
            dst = out[i] if out else None
            if not (isinstance(dst, cp.ndarray) and dst.shape == w.shape
                    and dst.dtype == w.dtype and dst.device == w.device):
                with w.device:
                    dst = cp.empty_like(w)
            dsts.append(dst)
            hp = {"lr": p.lrs[i], "wd": p.wds[i], "momentum": getattr(p, "momentum", 0.0),
                  "rescale_grad": p.rescale_grad, "clip_gradient": p.clip_gradient}
            scalars.append([hp[n_] for n_ in params])
        if multi_update(cp, name, [list(g) + [d] for g, d in zip(groups, dsts)], scalars):
            return dsts
        k = _kernel(cp, name)
        for group, dst, vals in zip(groups, dsts, scalars):
            ty = group[0].dtype.type
            with group[0].device:
                k(group[0], group[1], *[ty(v) for v in vals], *group[2:], dst)
        return dsts
    kernel.__name__ = f"multi_{name}_fused_gpu"
    return kernel


_FINITE_TYPES = (np.dtype(np.float16),) + _FLOATS


def _count_nonfinite(cp):
    k = _KERNELS.get("count_nonfinite")
    if k is None:
        k = _KERNELS["count_nonfinite"] = cp.ReductionKernel(
            "T x", "float32 y", "isfinite((float)x) ? 0.0f : 1.0f", "a + b", "y = a", "0",
            "mxnet_count_nonfinite")
    return k


def all_finite_gpu(ctx, p, inputs, aux, out=None):
    """all_finite / multi_all_finite on CuPy arrays of one device: 1.0 when no array
    holds an inf or NaN, else 0.0 (``init_output=False``: a given output's value is
    kept, multiplied by that), computed without waiting for the device: one
    multi-tensor launch (kernels_gpu_multi), or for non-contiguous arrays one
    reduction per array."""
    if not inputs or not type(inputs[0]).__module__.startswith("cupy"):
        return NotImplemented
    import cupy as cp
    dev = inputs[0].device
    if not all(isinstance(a, cp.ndarray) and a.dtype in _FINITE_TYPES and a.device == dev
               for a in inputs):
        return NotImplemented       # bfloat16, mixed devices: the operator's body
    dst = out[0] if out else None
    if not (isinstance(dst, cp.ndarray) and dst.shape == (1,) and dst.dtype == np.float32
            and dst.device == dev):
        dst = None
    from .kernels_gpu_multi import multi_nonfinite
    with dev:
        flag = cp.ones(1, np.float32) if dst is None else dst
        if dst is not None and p.init_output:
            dst.fill(1.0)
        if multi_nonfinite(cp, inputs, flag):
            return [flag]
        count = _count_nonfinite(cp)
        bad = cp.zeros(len(inputs), np.float32)
        for i, a in enumerate(inputs):
            if a.size:
                count(a, out=bad[i])
        clean = (bad.sum() == 0).astype(np.float32).reshape(1)
        if dst is None:
            return [clean]
        if p.init_output:
            dst[...] = clean
        else:
            dst *= clean
    return [dst]


def register_all(register_kernel, device="gpu"):
    """Register the fused updates and the finite checks for ``device``; returns the
    operator names."""
    for name in RULES:
        register_kernel(name, device, _fused(name))
    register_kernel("multi_sgd_update", device, _multi_fused(False))
    register_kernel("multi_sgd_mom_update", device, _multi_fused(True))
    register_kernel("all_finite", device, all_finite_gpu)
    register_kernel("multi_all_finite", device, all_finite_gpu)
    return list(RULES) + ["multi_sgd_update", "multi_sgd_mom_update", "all_finite",
                          "multi_all_finite"]

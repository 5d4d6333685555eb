"""Symbolic test helpers of ``mx.test_utils`` (MXNet 1.9.1 names and arguments):
check_symbolic_forward, check_symbolic_backward, check_numeric_gradient (for a
Symbol), check_consistency and simple_forward. Each binds the symbol with an
Executor and compares against expected NumPy values.
"""
import numpy as np

from . import symbol as sym_mod
from .base import MXNetError
from .context import Context, current_context
from .ndarray import array
from .ndarray.ndarray import NDArray
from .test_utils_compare import (_as_np, assert_almost_equal, default_context,
                                 default_numeric_eps, get_tolerance, get_tols)

__all__ = ["check_symbolic_forward", "check_symbolic_backward", "check_numeric_gradient",
           "check_consistency", "simple_forward", "executor_numeric_grad"]


def _ctx(ctx):
    if ctx is not None:
        return ctx
    return default_context()


def _nd(value, ctx, dtype):
    if dtype == "asnumpy":
        dtype = None
    if isinstance(value, NDArray):
        return value.as_in_context(ctx) if dtype is None else \
            value.as_in_context(ctx).astype(dtype, copy=False)
    value = np.asarray(value)
    return array(value, ctx=ctx, dtype=value.dtype if dtype is None else dtype)


def _parse_location(sym, location, ctx, dtype=np.float32):
    """{argument name: NDArray} from a list (list_arguments order) or a dict whose keys
    are exactly the arguments. NumPy values become NDArrays of dtype (their own dtype
    when dtype is "asnumpy"); NDArrays are used as given, as MXNet does."""
    names = sym.list_arguments()
    if isinstance(location, dict):
        if set(location) != set(names):
            raise ValueError(f"Symbol arguments and keys of the given location do not "
                             f"match. symbol args:{names}, location.keys():"
                             f"{list(location)}")
    elif isinstance(location, (list, tuple)):
        location = dict(zip(names, location))
    else:
        raise ValueError(f"location must be a dict, list or tuple, got "
                         f"{type(location).__name__}")
    return {k: _nd_from(v, ctx, dtype) for k, v in location.items()}


def _nd_from(value, ctx, dtype):
    if isinstance(value, NDArray):
        return value
    value = np.asarray(value)
    return array(value, ctx=ctx, dtype=value.dtype if dtype == "asnumpy" else dtype)


def _parse_aux_states(sym, aux_states, ctx, dtype=np.float32):
    """{auxiliary state name: NDArray} from a list or a dict (None stays None)."""
    if aux_states is not None and isinstance(aux_states, dict):
        unknown = set(aux_states) - set(sym.list_auxiliary_states())
        if unknown:
            raise ValueError(f"Symbol aux_states names and given aux_states do not match: "
                             f"symbol {sym.list_auxiliary_states()}, given "
                             f"{sorted(aux_states)}")
    return _parse_aux(sym, aux_states, ctx, dtype)


def _parse_aux(sym, aux_states, ctx, dtype):
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if not isinstance(aux_states, dict):
        aux_states = dict(zip(names, aux_states))
    return {k: _nd(v, ctx, dtype) for k, v in aux_states.items()}


def _by_output(sym, values):
    if isinstance(values, dict):
        return [values[n] for n in sym.list_outputs()]
    return list(values)


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32):
    """Bind sym to location (inputs as a list or dict of arrays), run forward
    (inference mode) and compare every output with expected (list or dict by output
    name). Returns the executor's outputs (NDArrays, in their inferred storage types)."""
    ctx = _ctx(ctx)
    args = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux(sym, aux_states, ctx, dtype)
    expected = _by_output(sym, expected)
    ex = sym.bind(ctx, args=args, grad_req="null", aux_states=aux)
    outputs = ex.forward(is_train=False)
    for name, exp, got in zip(sym.list_outputs(), expected, outputs):
        assert_almost_equal(exp, got.asnumpy(), rtol, atol, names=(f"EXPECTED_{name}",
                                                                   f"FORWARD_{name}"),
                            equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """Run forward (training mode) and backward with out_grads, and compare the
    gradients of the arguments named in expected (a dict, or a list in argument
    order). grad_req 'add' is checked against the random initial gradient plus the
    expected one; 'null' against the untouched initial gradient. Returns the
    gradient arrays (NDArrays, by argument name)."""
    ctx = _ctx(ctx)
    args = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux(sym, aux_states, ctx, dtype)
    if not isinstance(expected, dict):
        expected = dict(zip(sym.list_arguments(), expected))
    def grad_dtype(v):     # "asnumpy": each gradient in its expected value's dtype
        return np.asarray(v).dtype if dtype == "asnumpy" else (dtype or np.float32)
    init = {k: np.random.normal(size=np.shape(v)).astype(grad_dtype(v))
            for k, v in expected.items()}
    grads = {k: array(v, ctx=ctx, dtype=v.dtype) for k, v in init.items()}
    for k, st in (grad_stypes or {}).items():        # sparse gradient buffers
        if k in grads and st != "default":
            grads[k] = grads[k].tostype(st)
    if isinstance(grad_req, str):
        reqs = {k: grad_req for k in expected}
    elif isinstance(grad_req, (list, tuple)):
        reqs = dict(zip(sym.list_arguments(), grad_req))
    else:
        reqs = dict(grad_req)
    ex = sym.bind(ctx, args=args, args_grad=grads, grad_req=reqs, aux_states=aux)
    ex.forward(is_train=True)
    if out_grads is not None:
        if isinstance(out_grads, dict):
            out_grads = _by_output(sym, out_grads)
        elif not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        out_grads = [None if g is None else _nd(g, ctx, None) for g in out_grads]
    ex.backward(out_grads)
    got = {k: v.asnumpy() for k, v in grads.items()}
    for name, exp in expected.items():
        req = reqs.get(name, "null")
        if req == "write":
            want = exp
        elif req == "add":
            want = np.asarray(exp) + init[name]
        else:
            want = init[name]
        assert_almost_equal(want, got[name], rtol, atol, names=(f"EXPECTED_{name}",
                                                               f"BACKWARD_{name}"),
                            equal_nan=equal_nan)
    return grads


def executor_numeric_grad(executor, location, aux_states=None, eps=1e-4,
                          use_forward_train=True, dtype=np.float32):
    """MXNet's numeric_grad: central differences (step eps) of the sum of the executor's
    first output with respect to each float array of location {name: numpy array},
    computed in dtype. Returns {name: gradient}; location is left unchanged."""
    location = {k: np.array(v, dtype=dtype, order="C") for k, v in location.items()}
    grads = {k: np.zeros(v.shape, dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        executor.arg_dict[k][:] = array(v, dtype=dtype)

    def objective():
        if aux_states is not None:
            for name, value in aux_states.items():
                executor.aux_dict[name][:] = value
        executor.forward(is_train=use_forward_train)
        return executor.outputs[0].asnumpy().astype(np.float64).sum()

    for k, v in location.items():
        if v.dtype.kind != "f":
            continue
        flat = v.reshape(-1)
        gflat = grads[k].reshape(-1)
        for i in range(flat.size):
            old = flat[i].copy()
            flat[i] = old + eps / 2.0
            executor.arg_dict[k][:] = array(v, dtype=dtype)
            plus = objective()
            flat[i] = old - eps / 2.0
            executor.arg_dict[k][:] = array(v, dtype=dtype)
            minus = objective()
            flat[i] = old
            gflat[i] = (plus - minus) / eps
        executor.arg_dict[k][:] = array(v, dtype=dtype)
    return grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=np.float32):
    """MXNet's gradient check of a Symbol: the executor's gradients of
    sum(sym * P) (P a fixed random projection, through make_loss) against central
    finite differences, for grad_nodes (all arguments by default; a dict gives each
    one's grad_req: 'add' is checked as the added part, 'null' as untouched).
    numeric_eps defaults by dtype (default_numeric_eps), tolerances by dtype."""
    if np.dtype(dtype) not in (np.float16, np.float32, np.float64):
        raise ValueError(f"check_numeric_gradient: dtype must be float16/32/64, got {dtype}")
    ctx = _ctx(ctx)
    location = _parse_location(sym, location, ctx, dtype)
    location_npy = {k: v.asnumpy() for k, v in location.items()}
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_npy = None if aux is None else {k: v.asnumpy() for k, v in aux.items()}
    if grad_nodes is None:
        grad_nodes = sym.list_arguments()
        grad_req = {k: "write" for k in grad_nodes}
    elif isinstance(grad_nodes, (list, tuple)):
        grad_nodes = list(grad_nodes)
        grad_req = {k: "write" for k in grad_nodes}
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
        grad_nodes = list(grad_nodes)
    else:
        raise ValueError(f"check_numeric_gradient: grad_nodes must be a list, tuple or "
                         f"dict, got {type(grad_nodes).__name__}")
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    # a projection away from zero so no output's gradient is scaled towards nothing
    proj_value = np.random.rand(*out_shapes[0]) + 0.1
    proj = sym_mod.Variable("__random_proj")
    out = sym_mod.make_loss(sym * proj)
    location = dict(location)
    location["__random_proj"] = array(proj_value, ctx=ctx, dtype=dtype)
    grads_npy = {k: np.random.normal(0, 0.01, size=location[k].shape) for k in grad_nodes}
    grads_npy["__random_proj"] = np.random.normal(0, 0.01, size=out_shapes[0])
    args_grad = {k: array(v, ctx=ctx, dtype=dtype) for k, v in grads_npy.items()}
    for k, st in (grad_stype_dict or {}).items():       # sparse gradient buffers
        if k in args_grad and st != "default":
            args_grad[k] = args_grad[k].tostype(st)
            grads_npy[k] = args_grad[k].asnumpy()
    grad_req["__random_proj"] = "write"
    executor = out.bind(ctx, grad_req=grad_req, args=location, args_grad=args_grad,
                        aux_states=aux)
    executor.forward(is_train=True)
    eps = get_tolerance(executor.outputs[0], numeric_eps, default_numeric_eps())
    if np.dtype(dtype) in (np.float32, np.float16) and eps < 1e-5:
        raise ValueError(f"check_numeric_gradient: numeric_eps={eps} is too small for "
                         f"finite differences in {np.dtype(dtype).name}")
    executor.backward()
    # a 'null' argument keeps the array given for it untouched (the executor may not
    # list it among its gradients). The gradients stay NDArrays, so that their
    # tolerance follows their device, as in MXNet 1.9.1: float32 on a GPU that allows
    # TF32 is judged as float16 (effective_dtype), as is its numeric step above
    symbolic = {k: (executor.grad_dict.get(k) if executor.grad_dict.get(k) is not None
                    else args_grad[k]) for k in grad_nodes}
    location_npy["__random_proj"] = proj_value
    numeric = executor_numeric_grad(executor, location_npy, aux_npy, eps=eps,
                                    use_forward_train=use_forward_train, dtype=dtype)
    for name in grad_nodes:
        names = (f"NUMERICAL_{name}", f"BACKWARD_{name}")
        req = grad_req[name]
        if req == "write":
            assert_almost_equal(numeric[name], symbolic[name], rtol, atol, names)
        elif req == "add":
            assert_almost_equal(numeric[name], symbolic[name].asnumpy() - grads_npy[name],
                                rtol, atol, names)
        elif req == "null":
            assert_almost_equal(grads_npy[name], symbolic[name], rtol, atol, names)
        else:
            raise ValueError(f"Invalid grad_req {req} for argument {name}")


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None,
                      equal_nan=False, use_uniform=False, rand_type=np.float64):
    """Run sym (or one symbol per entry) on every context/dtype in ctx_list (dicts
    with 'ctx', input shapes and an optional 'type_dict') with the same random
    arguments, and compare outputs and gradients with the most precise run.
    Returns the ground-truth arrays {name: NumPy array}."""
    # one symbol, or one per entry: a list, or the object array np.repeat makes
    syms = list(sym) if isinstance(sym, (list, tuple, np.ndarray)) else \
        [sym] * len(ctx_list)
    if len(syms) != len(ctx_list):
        raise MXNetError("check_consistency: one symbol per context entry is required")
    exes = []
    for s, spec in zip(syms, ctx_list):
        spec = dict(spec)
        c = spec.pop("ctx", None) or current_context()
        if not isinstance(c, Context):
            raise TypeError("ctx_list entries need a Context under 'ctx'")
        type_dict = spec.pop("type_dict", None)
        exes.append(s.simple_bind(c, grad_req=grad_req, type_dict=type_dict, **spec))
    first = exes[0]
    # arguments (and auxiliary states) the caller leaves out get random values (zeros)
    arg_params = dict(arg_params or {})
    for n, arr in first.arg_dict.items():
        if n in arg_params:
            continue
        shape = arr.shape
        if use_uniform:
            arg_params[n] = np.random.uniform(-0.5 * scale, 0.5 * scale,
                                              size=shape).astype(rand_type)
        else:
            arg_params[n] = np.random.normal(size=shape, scale=scale).astype(rand_type)
    aux_params = dict(aux_params or {})
    for n, a in first.aux_dict.items():
        aux_params.setdefault(n, np.zeros(a.shape))
    for ex in exes:
        for n, arr in ex.arg_dict.items():
            arr[:] = np.asarray(arg_params[n]).astype(arr.dtype)
        for n, arr in ex.aux_dict.items():
            arr[:] = np.asarray(aux_params[n]).astype(arr.dtype)
    dtypes = [np.dtype(ex.outputs[0].dtype) for ex in exes]
    gt_idx = int(np.argmax([d.itemsize for d in dtypes]))
    names = syms[0].list_outputs()

    def compare(gt, what, i, ex, train):
        for n, got in what(ex).items():
            if got is None or gt.get(n) is None:
                continue
            # got stays an NDArray so that its tolerance follows its device: float32
            # on a GPU that allows TF32 is judged as float16 (effective_dtype), as
            # MXNet compares the executors' NDArrays themselves
            want = gt[n]
            rt, at = get_tols(got, want, rtol, atol)
            if train:
                # a float32 gradient (BatchNorm's gamma) of a float16 run is held to
                # float16's tolerances: judge each side at its run's precision
                mine = _smaller_dtype(got.dtype, dtypes[i])
                theirs = _smaller_dtype(want.dtype, dtypes[gt_idx])
                if mine != got.dtype or theirs != want.dtype:
                    rt, at = get_tols(got.astype(mine), want.astype(theirs), rtol, atol)
            try:
                assert_almost_equal(got, want, rtol=rt, atol=at, equal_nan=equal_nan,
                                    names=(f"ctx{i} {n}", f"ground truth {n}"))
            except AssertionError:
                if raise_on_err:
                    raise
                print(f"check_consistency: {n} on entry {i} differs")

    def compare_all(gt, what, train=False):
        for i, ex in enumerate(exes):
            if i != gt_idx:
                compare(gt, what, i, ex, train)

    for ex in exes:
        ex.forward(is_train=False)
    # NDArrays, not copies: each is compared before the next forward overwrites it
    outputs = lambda ex: dict(zip(names, ex.outputs))  # noqa: E731
    gt = ground_truth or outputs(exes[gt_idx])
    compare_all(gt, outputs)
    if grad_req != "null":
        for ex in exes:
            ex.forward(is_train=True)
        # every run backpropagates the same head gradients: the first run's outputs,
        # each rounded to the least precise dtype any run gives that output
        heads = []
        for k, o in enumerate(exes[0].outputs):
            low = o.dtype
            for ex in exes:
                low = _smaller_dtype(ex.outputs[k].dtype, low)
            heads.append(o.asnumpy().astype(low))
        for ex in exes:
            ex.backward([array(h, ctx=o.context, dtype=o.dtype).tostype(o.stype)
                         for h, o in zip(heads, ex.outputs)])
        grads = lambda ex: dict(ex.grad_dict)  # noqa: E731
        gt_full = dict(outputs(exes[gt_idx]))
        gt_full.update({n: g for n, g in grads(exes[gt_idx]).items() if g is not None})
        if ground_truth is not None:
            gt_full.update(ground_truth)
        compare_all(gt_full, lambda ex: {**outputs(ex), **grads(ex)}, train=True)
        gt = gt_full
    return {n: (None if v is None else _as_np(v)) for n, v in gt.items()}


def _smaller_dtype(a, b):
    """The less precise of two dtypes (a when b is None or a is narrower)."""
    return a if b is None or np.dtype(a).itemsize < np.dtype(b).itemsize else b


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Bind sym to the given NumPy inputs (by name), run forward and return the
    output as a NumPy array (a list when there are several)."""
    ctx = _ctx(ctx)
    args = {k: _nd(v, ctx, np.float32) for k, v in inputs.items()}
    ex = sym.bind(ctx, args=args, grad_req="null")
    outs = [o.asnumpy() for o in ex.forward(is_train=is_train)]
    return outs[0] if len(outs) == 1 else outs

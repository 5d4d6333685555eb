"""One node's shape inference when some shapes are only partly known.

MXNet 1.x writes an unknown dimension as 0 (``(0, 10)``: the batch size is not known
yet) and its operators' shape functions work on such partial shapes: a FullyConnected
fed ``(0, 10)`` says its output is ``(0, 21)`` and its weight ``(21, 10)``; an
elementwise ``+`` of ``(0, 10)`` and ``(12, 0)`` makes both ``(12, 10)``; a known
output dimension flows back into the inputs it came from.

pymxnet's operator rules (``Op.infer_shape``) only ever see complete shapes or None.
This module gets MXNet's partial answers from those same rules, without a second rule
per operator:

* elementwise operators (those keeping ``Op``'s default rule, or saying
  ``elemwise_shape = True``) merge the partial shapes
  of all their inputs and outputs dimension by dimension, as MXNet's ElemwiseShape;
* any other operator is *probed*: its unknown input dimensions are replaced by marker
  values no real dimension takes, and the rule is run twice with two different marker
  sets. A result dimension that comes out the same both times does not depend on the
  unknown ones, so it is known; one that changes is unknown (0). An output dimension
  that is exactly a marker tells which input dimension it passes through, so a known
  output dimension fills that input dimension (backward inference); with a single
  unknown input dimension, an output dimension affine in it (a flattening Reshape,
  a Concat's total) is solved for it.

Markers are first given one per unknown input dimension; when the rule rejects that
(it needs two inputs to agree, as Concat or batch_dot do), one per axis position,
shared by all inputs. An operator that must see complete inputs before it says
anything (MXNet's ``where``) sets ``infers_partial = False``; one that needs more (the
RNN's parameter concat) defines ``infer_shape_partial(p, arg_shapes, out_shapes)``
(written for 0 = unknown, unless it sets ``partial_rule_any_marker``); one whose output axes
are its first input's axes narrowed (``slice``) sets ``narrows_input_axes = True``: an
output axis over an input axis of unknown length is unknown, whatever the probes say;
one whose output holds exactly its data's elements (``Reshape``) sets ``keeps_size =
True``: a complete output shape then solves a single unknown data dimension, even where
the output does not depend on it (``reshape(shape=(6, 1, -2))``).

Under NumPy shape semantics (``mx.np_shape()``) 0 is a real zero-size dimension and -1
marks an unknown one: ``unknown_marker(-1)`` switches the marker for the duration of a
pass (``executor.infer`` does so when ``is_np_shape()``); everything here asks
``known(d)``.
"""
import contextlib
import math
import threading
from fractions import Fraction

from ..operator.registry import Op

__all__ = ["infer_node", "merge_dims", "unknown_marker", "known", "UNKNOWN"]

_mode = threading.local()


def UNKNOWN():  # noqa: N802  (reads as the constant it stands for)
    """The unknown-dimension marker of the running pass: 0, or -1 under np_shape."""
    return getattr(_mode, "unknown", 0)


def known(d):
    """Whether dimension d is known (0 is, under np_shape semantics)."""
    return d is not None and d > getattr(_mode, "unknown", 0)


@contextlib.contextmanager
def unknown_marker(value):
    """Shapes use ``value`` (0 or -1) for unknown dimensions inside the block."""
    prev = getattr(_mode, "unknown", 0)
    _mode.unknown = value
    try:
        yield
    finally:
        _mode.unknown = prev

# Multiples of lcm(1..16), so a rule's divisibility checks (reshape's -1, an axis split
# into equal parts) pass; the two sets use different primes so no value is in both.
_LCM = 720720
_MARKER_SETS = (
    tuple(_LCM * q for q in (1009, 1013, 1019, 1021, 1031, 1033, 1039, 1049, 1051, 1061,
                             1063, 1069, 1087, 1091, 1093, 1097)),
    tuple(_LCM * q for q in (1103, 1109, 1117, 1123, 1129, 1151, 1153, 1163, 1171, 1181,
                             1187, 1193, 1201, 1213, 1217, 1223)),
)


# The small probe: unknown dimensions of 1. Rules often reject it (a kernel larger
# than the input); when they accept it, a result that differs from the large probes'
# depends on the unknown size although the large values hide it (a slice ending at 5
# of an axis of unknown length is 5 long only if the axis has 5 elements), so it is
# unknown, as MXNet says.
_SMALL = (1,) * len(_MARKER_SETS[0])


def merge_dims(old, new):
    """Two partial shapes (None, or dimensions of UNKNOWN() = unknown) combined, or
    raise ValueError when they contradict."""
    if new is None:
        return old
    if old is None or old == new:
        return new
    if len(old) != len(new) or any(known(a) and known(b) and a != b
                                   for a, b in zip(old, new)):
        raise ValueError
    u = UNKNOWN()
    return tuple(a if known(a) else b if known(b) else u for a, b in zip(old, new))


def _complete(shape):
    return shape is not None and all(known(d) for d in shape)


def _elementwise(op, p, arg_shapes, out_shapes):
    """Every input and output gets the merge of all of them (MXNet's ElemwiseShape)."""
    merged = None
    try:
        for s in list(arg_shapes) + list(out_shapes):
            merged = merge_dims(merged, s)
    except ValueError:
        # A contradiction: the operator's own rule (or the pass's merge) names it.
        return op.infer_shape(p, [s if _complete(s) else None for s in arg_shapes])
    return ([merged] * len(arg_shapes), [merged] * len(out_shapes),
            [None] * len(op.aux_states(p)))


def _probe(op, p, arg_shapes, markers, shared):
    """The rule run with markers in the unknown dimensions of partial arguments:
    (results, {marker: [(argument, axis), ...]}), or None if the rule rejects it."""
    where, probe = {}, []
    for i, s in enumerate(arg_shapes):
        if s is None or _complete(s):
            probe.append(s)
            continue
        dims = list(s)
        for k, d in enumerate(dims):
            if known(d):
                continue
            slot = k if shared else len(where)
            if slot >= len(markers):
                return None
            dims[k] = markers[slot]
            where.setdefault(dims[k], []).append((i, k))
        probe.append(tuple(dims))
    try:
        return op.infer_shape(p, probe), where
    except Exception:           # noqa: BLE001 — the rule cannot say: nothing learnt
        return None


def _probe_all(op, p, arg_shapes):
    """The two marker probes (None if the rule rejects them) and the small probe
    (None if it rejects that)."""
    for shared in (False, True):
        first = _probe(op, p, arg_shapes, _MARKER_SETS[0], shared)
        if first is None:
            continue
        second = _probe(op, p, arg_shapes, _MARKER_SETS[1], shared)
        if second is not None:
            return first, second, _probe(op, p, arg_shapes, _SMALL, shared)
    return None


def _stable(a, b, c, markers):
    """The dimensions of one result shape that did not move between the probes."""
    if a is None or b is None or len(a) != len(b):
        return None
    if c is None or len(c) != len(a):
        c = a
    u = UNKNOWN()
    return tuple(x if x == y == z and known(x) and x not in markers else u
                 for x, y, z in zip(a, b, c))


def _solve_one(where, first, second, out_shapes):
    """With a single unknown input dimension u, an output dimension that moved between
    the probes is taken as affine in it, s + k*u (Reshape's -1 gives k*u, Concat's
    total s + u): a known value V of it gives u = (V - s) / k when that is a positive
    whole number. {(argument, axis): u} or {}."""
    (mark_a, pos), = where.items()
    mark_b = _MARKER_SETS[1][_MARKER_SETS[0].index(mark_a)]
    for a, b, kd in zip(first or [], second or [], out_shapes):
        if a is None or b is None or kd is None or not len(a) == len(b) == len(kd):
            continue
        for x, y, v in zip(a, b, kd):
            if not known(v) or x == y or x is None or y is None:
                continue
            k = Fraction(x - y, mark_a - mark_b)     # a reshape may give 30*u/4
            if not k:
                continue
            u = (v - (x - k * mark_a)) / k
            if u.denominator == 1 and u > 0:
                return {p: int(u) for p in pos}
    return {}


def _fill(results, learnt):
    """The rule's own results, with what the probes learnt where it said nothing."""
    return [r if r is not None else (learnt[i] if i < len(learnt) else None)
            for i, r in enumerate(results)]


def _size_solved(arg_shapes, out_shapes):
    """For an operator whose output holds exactly its data's elements (``keeps_size``):
    the data shape with its one unknown dimension solved from a complete output shape,
    or None when that cannot be done."""
    data = arg_shapes[0] if arg_shapes else None
    out = out_shapes[0] if out_shapes else None
    if data is None or not _complete(out) or sum(1 for d in data if not known(d)) != 1:
        return None
    size = math.prod(d for d in data if known(d))
    total = math.prod(out)
    if not size or total % size:
        return None
    return tuple(d if known(d) else total // size for d in data)


def infer_node(op, p, arg_shapes, out_shapes):
    """(argument, output, auxiliary) shapes of one node, each a tuple (UNKNOWN() =
    unknown dimension) or None, from what is known of its arguments and outputs."""
    rule = getattr(op, "infer_shape_partial", None)
    if rule is not None:            # an operator with its own rule for partial shapes
        # (one that reads the pass's marker itself, as the control-flow operators'
        # subgraph passes do, takes either)
        if UNKNOWN() == 0 or getattr(op, "partial_rule_any_marker", False):
            return rule(p, arg_shapes, out_shapes)
        return _legacy_rule(rule, p, arg_shapes, out_shapes)
    if getattr(op, "elemwise_shape", type(op).infer_shape is Op.infer_shape):
        return _elementwise(op, p, arg_shapes, out_shapes)
    visible = [s if _complete(s) else None for s in arg_shapes]
    args, outs, aux = (list(r) for r in op.infer_shape(p, visible))
    partial = any(s is not None and v is None for s, v in zip(arg_shapes, visible))
    if not partial or not getattr(op, "infers_partial", True):
        return args, outs, aux
    if getattr(op, "keeps_size", False):
        solved = _size_solved(arg_shapes, out_shapes)
        if solved is not None:
            return infer_node(op, p, [solved] + list(arg_shapes[1:]), out_shapes)
    probes = _probe_all(op, p, arg_shapes)
    if probes is None:
        return args, outs, aux
    (first, where), (second, _), small = probes
    small = small[0] if small is not None else ((), (), ())
    used = set(where) | set(_MARKER_SETS[1])
    learnt = [[_stable(a, b, c, used) for a, b, c in
               zip(ra or [], rb or [], list(rc or []) + [None] * len(ra or []))]
              for ra, rb, rc in zip(first, second, small)]
    args, outs, aux = (_fill(res, new) for res, new in zip((args, outs, aux), learnt))
    data = arg_shapes[0] if arg_shapes else None
    if getattr(op, "narrows_input_axes", False) and data is not None and visible[0] is None:
        u = UNKNOWN()
        outs = [o if o is None or len(o) != len(data) else
                tuple(d if known(k) else u for d, k in zip(o, data)) for o in outs]
    args += [None] * (len(arg_shapes) - len(args))
    # Backward: a known output dimension that is exactly a marker fills the input
    # dimensions that marker stood for.
    found = {}
    for got, kd in zip(first[1] or [], out_shapes):
        if got is not None and kd is not None and len(got) == len(kd):
            for g, k in zip(got, kd):
                if known(k) and g in where:
                    for pos in where[g]:
                        found[pos] = k
    if not found and len(where) == 1:
        found = _solve_one(where, first[1], second[1], out_shapes)

    for i, s in enumerate(arg_shapes):
        if s is None or visible[i] is not None:
            continue
        filled = tuple(found.get((i, k), d) for k, d in enumerate(s))
        try:
            args[i] = merge_dims(args[i], filled)
        except ValueError:      # the rule's own answer wins; the pass reports the clash
            pass
    return args, outs, aux


def _legacy_rule(rule, p, arg_shapes, out_shapes):
    """An operator's own partial rule, written for 0 = unknown, run under np_shape
    semantics: unknown (-1) dimensions go in as 0 and 0s come back as unknown (a real
    zero-size dimension next to unknown ones is not told apart there)."""
    def to_legacy(shapes):
        return [None if s is None else tuple(0 if d < 0 else d for d in s) for s in shapes]

    def from_legacy(shapes):
        return [None if s is None else tuple(-1 if d == 0 else d for d in s)
                for s in shapes]
    if all(_complete(s) for s in list(arg_shapes) + list(out_shapes) if s is not None):
        return rule(p, arg_shapes, out_shapes)
    return tuple(from_legacy(r) for r in rule(p, to_legacy(arg_shapes),
                                              to_legacy(out_shapes)))

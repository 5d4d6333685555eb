"""Calibration: measuring the float model's layer outputs on calibration data and
writing the resulting ranges into a quantized graph.

Collectors follow MXNet 1.9.1's protocol: ``collect(name, [op_name,] arr)`` for every
layer output a float run produces (an executor monitor callback fits), keeping only the
names in ``include_layer``. ``naive`` keeps each output's min and max; ``entropy`` keeps a
symmetric histogram per output (grown with ``combine_histogram``) and picks the
threshold with the least KL divergence (``optimal_threshold``).
"""
import logging

import numpy as np

from ...base import MXNetError, py_str
from ...operator.contrib.calibrate import optimal_threshold
from ...operator.registry import get_op
from ...symbol.graph import topo_order

__all__ = ["combine_histogram", "LayerOutputMinMaxCollector", "LayerHistogramCollector",
           "thresholds", "set_calibration", "calib_targets"]


def _as_numpy(arr):
    return arr.asnumpy() if hasattr(arr, "asnumpy") else np.asarray(arr)


def combine_histogram(old_hist, arr, new_min, new_max, new_th):
    """Add the values of ``arr`` to ``old_hist`` = (hist, edges, min, max, th), a
    symmetric histogram over [-th, th]; when ``new_th`` exceeds th the histogram grows by
    whole bins of the same width on both sides. Returns the new 5-tuple."""
    hist, edges, old_min, old_max, old_th = old_hist
    arr = _as_numpy(arr)
    lo, hi = min(old_min, new_min), max(old_max, new_max)
    if new_th <= old_th:
        add, _ = np.histogram(arr, bins=len(hist), range=(-old_th, old_th))
        return hist + add, edges, lo, hi, old_th
    width = 2 * old_th / len(hist)
    grow = int((new_th - old_th) // width + 1)
    th = grow * width + old_th
    bins = len(hist) + 2 * grow
    merged, merged_edges = np.histogram(arr, bins=bins, range=(-th, th))
    merged[grow:bins - grow] += hist
    return merged, merged_edges, lo, hi, th


class _Collector:
    def __init__(self, quantized_dtype="int8", include_layer=None, logger=None):
        self.quantized_dtype = quantized_dtype
        self.include_layer = include_layer
        self.logger = logger

    def _wanted(self, name):
        return self.include_layer is None or name in self.include_layer

    def collect(self, name, *args):
        """Record one output: ``collect(name, arr)`` or ``collect(name, op_name, arr)``."""
        if not args:
            raise TypeError("collect(name, [op_name,] arr) needs the array")
        name = py_str(name)     # an executor's monitor hands names as bytes
        if self._wanted(name):
            self._add(name, _as_numpy(args[-1]))


class LayerOutputMinMaxCollector(_Collector):
    """Keeps each included output's overall (min, max) in ``min_max_dict``."""

    def __init__(self, quantized_dtype="int8", include_layer=None, logger=None):
        super().__init__(quantized_dtype, include_layer, logger)
        self.min_max_dict = {}

    def _add(self, name, arr):
        lo, hi = float(arr.min()), float(arr.max())
        if name in self.min_max_dict:
            olo, ohi = self.min_max_dict[name]
            lo, hi = min(lo, olo), max(hi, ohi)
        self.min_max_dict[name] = (lo, hi)
        if self.logger:
            self.logger.debug("collected %s: min %s max %s", name, lo, hi)

    def post_collect(self):
        return self.min_max_dict


class LayerHistogramCollector(_Collector):
    """Keeps a symmetric histogram of ``num_bins`` bins per included output in
    ``hist_dict`` (hist, edges, min, max, threshold)."""

    def __init__(self, quantized_dtype="int8", num_bins=8001, include_layer=None,
                 logger=None):
        super().__init__(quantized_dtype, include_layer, logger)
        self.num_bins = num_bins
        self.hist_dict = {}

    def _add(self, name, arr):
        lo, hi = float(arr.min()), float(arr.max())
        th = max(abs(lo), abs(hi))
        if name in self.hist_dict:
            self.hist_dict[name] = combine_histogram(self.hist_dict[name], arr, lo, hi, th)
        else:
            hist, edges = np.histogram(arr, bins=self.num_bins, range=(-th, th))
            self.hist_dict[name] = (hist, edges, lo, hi, th)

    def post_collect(self):
        return self.hist_dict


def thresholds(collector, calib_mode, quantized_dtype, logger=None):
    """name -> (min, max) calibrated ranges from a filled collector."""
    if calib_mode == "naive":
        return dict(collector.min_max_dict)
    if calib_mode != "entropy":
        raise MXNetError(f"calibration: calib_mode must be 'naive' or 'entropy', got "
                         f"{calib_mode!r}")
    out = {}
    for name, (hist, edges, lo, hi, th) in collector.hist_dict.items():
        positive = lo >= 0 and quantized_dtype in ("auto", "uint8")
        # a non-negative output quantized to uint8 has twice the levels on its side
        t, div = optimal_threshold(hist, edges, 511 if positive else 255)
        out[name] = (0.0, t) if positive else (-t, t)
        if logger:
            logger.debug("layer %s: min %s max %s threshold %s divergence %s", name, lo,
                         hi, t, div)
    return out


def calib_targets(qsym):
    """(node, float output name) for every node of the quantized graph that takes a
    calibrated range: quantize_v2 (its input), requantize and quantized batch norm
    (the float node they replace)."""
    out = []
    for node in topo_order([n for n, _ in qsym._outputs]):
        if node.op is None:
            continue
        name = node.op.name
        if name == "_contrib_quantize_v2":
            src, i = node.inputs[0]
            out.append((node, src.output_names()[i]))
        elif name == "_contrib_requantize" and node.name.startswith("requantize_"):
            out.append((node, node.name[len("requantize_"):] + "_output"))
        elif name == "_contrib_quantized_batch_norm" and node.name.startswith("quantized_"):
            out.append((node, node.name[len("quantized_"):] + "_output"))
    return out


def set_calibration(qsym, th_dict, logger=None):
    """Write min_calib_range/max_calib_range into the quantized graph's nodes (in place:
    the nodes are the symbol's own) from ``th_dict``."""
    missing = []
    for node, name in calib_targets(qsym):
        if name not in th_dict:
            missing.append(name)
            continue
        lo, hi = th_dict[name]
        given = dict(node.given, min_calib_range=float(lo), max_calib_range=float(hi))
        node.given = given
        node.params = get_op(node.op.name).parse(given)
        (logger or logging).debug("set calibration of %s to (%s, %s)", node.name, lo, hi)
    if missing:
        raise MXNetError(f"calibration: no range collected for {sorted(set(missing))}")
    return qsym

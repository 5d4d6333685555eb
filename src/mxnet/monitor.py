"""Monitor: statistics of every operator output (and weights) during training, for
debugging (MXNet 1.9.1's ``mx.monitor.Monitor`` / ``mx.mon.Monitor``).

``install(executor)`` registers a callback on the executor; between ``tic()`` and
``toc()`` (every ``interval`` batches) each operator output — of forward nodes
(``<node>_output``) and of backward nodes (``<node>_backward_output<i>``) — whose
name matches ``pattern`` is reduced by ``stat_func`` (default:
``norm(x)/sqrt(x.size)``), and at ``toc`` the arguments and auxiliary states are added. ``toc_print`` logs one line
per entry: ``Batch: <step> <name> <value>``.
"""
import logging
import re
from math import sqrt

from .base import py_str
from . import ndarray
from .ndarray import NDArray
from .ndarray.ndarray import from_data

__all__ = ["Monitor", "report_backward"]


def report_backward(callback, monitor_all, node_name, inputs, grads, ctx, shapes=None):
    """Pass one backward node's results to an executor's monitor callback, named as
    MXNet names them: ``<node>_backward_output`` (``..._output<i>`` when the node has
    several inputs), and with monitor_all its inputs ``<node>_backward_input<i>``
    (the output gradients, then the forward inputs/outputs it reads).

    MXNet reports every input's gradient slot, also those nobody requested (a data or
    label input's), whose buffer backward leaves unwritten; given ``shapes`` (one per
    input), such a slot is reported as zeros of that shape."""
    if monitor_all:
        for i, x in enumerate(v for v in inputs if v is not None):
            callback(f"{node_name}_backward_input{i}", from_data(x.copy(), ctx))
    single = len(grads) == 1
    dtype = next((g.dtype for g in grads if g is not None), None)
    for i, g in enumerate(grads):
        suffix = "" if single else str(i)
        if g is not None:
            callback(f"{node_name}_backward_output{suffix}", from_data(g.copy(), ctx))
        elif shapes is not None and dtype is not None and shapes[i] is not None:
            callback(f"{node_name}_backward_output{suffix}",
                     ndarray.zeros(tuple(shapes[i]), ctx=ctx, dtype=dtype))


def _asum_stat(x):
    """norm(x) / sqrt(size): the root mean square of x (computed asynchronously)."""
    return ndarray.norm(x) / sqrt(x.size)


class Monitor:
    """Collect statistics of outputs, weights and auxiliary states.

    Parameters
    ----------
    interval : int
        Collect every ``interval`` batches (tic/toc pairs).
    stat_func : callable NDArray -> NDArray (or list of NDArrays), optional
        Default: root mean square, ``norm(x)/sqrt(x.size)``.
    pattern : str, default '.*'
        Regular expression (``re.match``) on the names to monitor.
    sort : bool, default False
        Sort the results by name.
    monitor_all : bool, default False
        Also monitor operator inputs, not only outputs.
    """

    def __init__(self, interval, stat_func=None, pattern=".*", sort=False, monitor_all=False):
        self.stat_func = stat_func if stat_func is not None else _asum_stat
        self.interval = interval
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

    def stat_helper(self, name, array):
        """The executor callback: queue stat_func(array) while collecting."""
        name = py_str(name)         # the executor hands names as bytes, as MXNet's does
        if not self.activated or not self.re_prog.match(name):
            return
        self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe):
        """Install on an executor (several may be installed)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def _wait_params(self):
        for exe in self.exes:
            for array in exe.arg_arrays + exe.aux_arrays:
                array.wait_to_read()

    def tic(self):
        """Start collecting for this batch (every interval batches); call before
        forward."""
        if self.step % self.interval == 0:
            self._wait_params()
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """Stop collecting; return [(step, name, 'value\\t...')] for this batch,
        arguments and auxiliary states included."""
        if not self.activated:
            return []
        self._wait_params()
        for exe in self.exes:
            symbol = exe._symbol
            for names, arrays in ((symbol.list_arguments(), exe.arg_arrays),
                                  (symbol.list_auxiliary_states(), exe.aux_arrays)):
                for name, array in zip(names, arrays):
                    if self.re_prog.match(name):
                        self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda x: x[1])
        res = []
        for step, name, values in self.queue:
            if isinstance(values, NDArray):
                values = [values]
            if not isinstance(values, list):
                raise TypeError("Monitor stat_func must return an NDArray or a list of them")
            text = ""
            for v in values:
                if not isinstance(v, NDArray):
                    raise TypeError("Monitor stat_func must return NDArrays")
                text += (str(v.asscalar()) if v.shape == (1,) else str(v.asnumpy())) + "\t"
            res.append((step, name, text))
        self.queue = []
        return res

    def toc_print(self):
        """toc() and log each entry."""
        for step, name, value in self.toc():
            logging.info("Batch: {:7d} {:30s} {:s}".format(step, name, value))

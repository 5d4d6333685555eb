"""oneDNN (the library MXNet 1.x called MKLDNN) kernels for CPU operators.

libdnnl comes from the ``onednn-cpu-gomp`` wheel (``pip install pymxnet[onednn]``) and is
called through ctypes (``_lib.py``); ``primitive.py`` turns NumPy arrays into oneDNN
memory and caches created primitives by (kind, shapes, strides, parameters, dtype);
``kernels.py`` holds plain functions over NumPy arrays that write into given outputs;
``mxnet.operator.kernels_onednn`` adapts them to the operator kernel table (``register_all``). Importing
this package loads nothing; libdnnl loads on the first kernel call or ``available()``.

Switches: ``MXNET_MKLDNN_ENABLED=0`` (MXNet's name) turns oneDNN off; a missing or
unloadable library turns it off with one RuntimeWarning. ``available()`` says whether
it loaded, ``version()`` gives its version. ``MXNET_ONEDNN_LIBRARY`` names a libdnnl.so
to use instead of the wheel's.

Threading policy (how oneDNN, NumPy's BLAS and backend/parallel.py share the cores):

* oneDNN runs on GNU OpenMP threads: ``OMP_NUM_THREADS`` of them, else one per core
  this process may use, capped by ``MXNET_OMP_MAX_THREADS`` as in MXNet. libgomp keeps
  the count per calling thread, so it is set in each thread (main, engine workers) on
  its first oneDNN call.
* One oneDNN execution at a time (a process-wide lock): every execution already uses
  all the OpenMP threads, and two engine workers running primitives side by side would
  start two thread teams on the same cores.
* An operator that runs on oneDNN does not also split its work over backend/parallel.py's
  pool, and NumPy's BLAS stays on one thread (backend/cpu_threads.py): only the NumPy
  operators that the engine's other worker runs meanwhile overlap with an execution.
* libgomp's idle threads spin before they sleep (300000 iterations by default). On a
  busy machine a spinning thread burns the time slice its partner needs to reach the
  barrier: measured on a 2-core machine at load average 18-20, conv fwd+bwd (64x32x14x14,
  3x3) took a median 8-63 ms with sleeping threads vs 112-126 ms with GOMP_SPINCOUNT=10000,
  FullyConnected (64x3136 -> 128) 0.8-5.8 ms vs 24-31 ms. On a quiet machine, though, a
  sleeping thread costs a wake-up (30-45 us) in each of the several parallel regions of
  a oneDNN call. Unless the user set ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``, pymxnet
  chooses when the library (and with it libgomp) loads, from the 1-minute load average
  (``_runtime.wait_policy``): below the core count, a short spin (``ACTIVE`` with
  ``GOMP_SPINCOUNT=1000``, about 10 us), else ``PASSIVE``. libgomp reads them only once,
  so a libgomp loaded earlier by another module keeps its own setting.
"""
from ._runtime import load_error, num_threads, try_runtime

__all__ = ["available", "enabled", "version", "library_path", "num_threads",
           "load_error"]


def available():
    """True when libdnnl loaded (and MXNET_MKLDNN_ENABLED is not 0)."""
    return try_runtime() is not None


enabled = available


def version():
    """oneDNN's version as 'major.minor.patch', or None when unavailable."""
    rt = try_runtime()
    return None if rt is None else "%d.%d.%d" % rt.version


def library_path():
    """The libdnnl file in use, or None."""
    rt = try_runtime()
    return None if rt is None else rt.path

"""The process-wide oneDNN runtime: the library, one CPU engine and stream, the lock that
serialises executions, and the OpenMP thread count (see the package docstring)."""
import ctypes
import os
import threading
import warnings

from ...base import env_int
from ..cpu_threads import omp_num_threads
from . import _lib as L

__all__ = ["runtime", "try_runtime", "num_threads", "load_error"]

_state = {"rt": None, "error": None, "tried": False}
_init_lock = threading.Lock()


def num_threads():
    """OpenMP threads for oneDNN: OMP_NUM_THREADS, else the cores this process may run
    on; capped by MXNET_OMP_MAX_THREADS (MXNet's variable) when set."""
    return omp_num_threads()


class Runtime:
    def __init__(self, lib, path):
        self.lib, self.path = lib, path
        self.threads = num_threads()
        eng = ctypes.c_void_p()
        L.check(lib, "engine_create", lib.dnnl_engine_create(ctypes.byref(eng), L.CPU, 0))
        self.engine = eng.value
        st = ctypes.c_void_p()
        L.check(lib, "stream_create",
                lib.dnnl_stream_create(ctypes.byref(st), self.engine, L.STREAM_IN_ORDER))
        self.stream = st.value
        # One execution at a time: each uses every OpenMP thread, so two side by side
        # (two engine workers) would oversubscribe the cores. Re-entrant because plan
        # building and execution nest.
        self.lock = threading.RLock()
        self._local = threading.local()
        try:
            self._omp_set = ctypes.CDLL("libgomp.so.1").omp_set_num_threads
            self._omp_set.argtypes = [ctypes.c_int]
        except (OSError, AttributeError):
            self._omp_set = None
        v = lib.dnnl_version().contents
        self.version = (v.major, v.minor, v.patch)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self):
        """A forked child (DataLoader workers) has no OpenMP pool threads and may have
        inherited the lock held: a fresh lock, and one thread (libgomp's teams do not
        survive fork; a one-thread region never uses them)."""
        self.lock = threading.RLock()
        self._local = threading.local()
        self.threads = 1
        # Primitives created in the parent split their work for its thread count: drop
        # them (without destroying: their state belongs to the parent's threads), ours
        # and those in oneDNN's own cache (capacity 0 empties it).
        from . import primitive
        primitive.forget_cache()
        self.lib.dnnl_set_primitive_cache_capacity(0)
        self.lib.dnnl_set_primitive_cache_capacity(1024)

    def enter_thread(self):
        """OpenMP's thread count is per calling thread in libgomp: set it the first time
        each thread (main, engine worker) creates or runs a primitive (a primitive
        splits its work for the count at its creation)."""
        if not getattr(self._local, "ready", False):
            if self._omp_set is not None:
                self._omp_set(self.threads)
            self._local.ready = True


def _prepare_environment():
    """Before libgomp starts (it reads its environment once, when libdnnl pulls it in):
    the thread count, and how idle threads wait (``wait_policy``), unless the user chose
    a wait policy (see the package docstring). Returns the names it set, which the
    caller removes again once the library is loaded (child processes do not inherit
    them)."""
    added = []
    if "OMP_NUM_THREADS" not in os.environ and env_int("MXNET_OMP_MAX_THREADS", 0) > 0:
        os.environ["OMP_NUM_THREADS"] = str(num_threads())
        added.append("OMP_NUM_THREADS")
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        for name, value in wait_policy(_load_average(), _cores()).items():
            os.environ[name] = value
            added.append(name)
    return added


# Spin iterations (libgomp: roughly 100 per microsecond) an idle OpenMP thread waits
# for the next parallel region before it sleeps, on a machine with idle cores. A oneDNN
# call runs several regions back to back (reorders, the primitive, the reorder back),
# a few microseconds apart: a thread that still spins joins the next one at once, a
# sleeping one must be woken (measured 30-45 us per region on a 2-core Zen 5).
SHORT_SPIN = 1000


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except (OSError, AttributeError):
        return os.cpu_count() or 1


def _load_average():
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def wait_policy(load, cores):
    """The libgomp variables pymxnet sets (unless the user set either): a short spin
    (OMP_WAIT_POLICY=ACTIVE with GOMP_SPINCOUNT=SHORT_SPIN, which also caps the spin
    libgomp allows when its threads outnumber the cores) when the machine has an idle
    core (1-minute load average below ``cores``), else threads that sleep at once
    (PASSIVE): on a busy machine a spinning thread burns the time slice its partner
    needs (see the package docstring). Measured with OMP_NUM_THREADS=2 on 2 cores:
    quiet, conv fwd+bwd 64x32x14x14 3.3 ms spinning vs 3.9 ms sleeping, FullyConnected
    64x3136->128 0.6 vs 0.83 ms; at load 8, 5-25% slower spinning."""
    if load is not None and load < cores:
        return {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": str(SHORT_SPIN)}
    return {"OMP_WAIT_POLICY": "PASSIVE"}


def try_runtime():
    """The runtime, or None when oneDNN is off or missing (warned about once)."""
    if _state["tried"]:
        return _state["rt"]
    with _init_lock:
        if _state["tried"]:
            return _state["rt"]
        if os.environ.get("MXNET_MKLDNN_ENABLED", "1").strip().lower() in ("0", "false",
                                                                          "off", "no"):
            _state["error"] = "disabled by MXNET_MKLDNN_ENABLED=0"
        else:
            added = _prepare_environment()
            try:
                lib, path = L.load()
                _state["rt"] = Runtime(lib, path)
            except Exception as e:   # missing library, wrong version, engine failure
                _state["error"] = str(e)
                warnings.warn(f"oneDNN is unavailable, CPU operators use their NumPy "
                              f"kernels: {e} (install pymxnet[onednn])", RuntimeWarning,
                              stacklevel=3)
            finally:
                for name in added:
                    os.environ.pop(name, None)
        _state["tried"] = True
    return _state["rt"]


def runtime():
    rt = try_runtime()
    if rt is None:
        raise RuntimeError(f"oneDNN is not available: {_state['error']}")
    return rt


def load_error():
    """Why oneDNN did not load (None when it did or was not tried yet)."""
    return _state["error"]

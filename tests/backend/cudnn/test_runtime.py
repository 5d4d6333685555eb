"""The per-thread cuDNN handles (backend/cudnn/_runtime.py), with a stand-in library
and CuPy: one handle per (thread, device), bound to CuPy's current stream, and rebound
only when that stream changes."""
import contextlib
import threading
import types

from mxnet.backend.cudnn import _lib as L
from mxnet.backend.cudnn._runtime import Runtime


class _Lib:
    def __init__(self):
        self.created, self.bound = 0, []

    def cudnnGetVersion(self):
        return 90000

    def cudnnCreate(self, ref):
        self.created += 1
        ref._obj.value = 1000 + self.created
        return L.STATUS_SUCCESS

    def cudnnSetStream(self, handle, stream):
        self.bound.append((handle, stream))
        return L.STATUS_SUCCESS


def _cupy(current):
    cuda = types.SimpleNamespace(
        Device=lambda i: contextlib.nullcontext(),
        get_current_stream=lambda: types.SimpleNamespace(ptr=current[0]))
    return types.SimpleNamespace(cuda=cuda)


def test_a_handle_is_rebound_only_when_the_stream_changes():
    lib, current = _Lib(), [0]
    rt = Runtime(lib, "stand-in", _cupy(current))
    h = rt.handle(0)
    assert rt.handle(0) == h and lib.created == 1
    assert lib.bound == [(h, None)]                 # the default stream, once
    current[0] = 77                                 # e.g. a CUDA graph's capture stream
    assert rt.handle(0) == h
    current[0] = 0
    rt.handle(0)
    assert lib.bound == [(h, None), (h, 77), (h, None)]


def test_each_thread_and_device_has_its_own_handle():
    lib, current = _Lib(), [0]
    rt = Runtime(lib, "stand-in", _cupy(current))
    mine = rt.handle(0)
    other = rt.handle(1)
    theirs = []
    t = threading.Thread(target=lambda: theirs.append(rt.handle(0)))
    t.start()
    t.join()
    assert len({mine, other, theirs[0]}) == 3
    assert (theirs[0], None) in lib.bound           # bound on its first use there too

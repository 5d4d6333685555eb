"""Placeholder of mx.util's NumPy-mode flags for the numpy branch (the conformance
branch's util.py replaces this file when merged)."""
import functools
import threading

_state = threading.local()


def is_np_array():
    return getattr(_state, "array", False)


def is_np_shape():
    return getattr(_state, "shape", False)


def set_np_array(active):
    prev, _state.array = is_np_array(), bool(active)
    return prev


def set_np_shape(active):
    prev, _state.shape = is_np_shape(), bool(active)
    return prev


def set_np(shape=True, array=True, dtype=False):
    set_np_shape(shape)
    set_np_array(array)


def reset_np():
    set_np(False, False)


def use_np(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        prev = (set_np_shape(True), set_np_array(True))
        try:
            return func(*args, **kwargs)
        finally:
            set_np_shape(prev[0])
            set_np_array(prev[1])
    return wrapper

"""A stand-in CUDA driver (libcuda.so.1) for a machine without one, so that cuDNN's
sub-libraries that link the driver load and descriptors that need no GPU can be
finalized (backend/cudnn/graph_api.py's tensor, convolution and operation descriptors).

Every driver function cuDNN's libraries import is defined and returns
CUDA_ERROR_NO_DEVICE (100): nothing can run on it. ``preload(cudnn_lib_dir)`` builds
the library with the C compiler (None when there is none) and loads it into the process
under the driver's soname before cuDNN looks for it; on a machine with a driver it
does nothing."""
import ctypes
import ctypes.util
import glob
import os
import shutil
import subprocess
import tempfile

_NO_DEVICE = 100
_loaded = {}


def _driver_functions(lib_dir):
    names = set()
    nm = shutil.which("nm")
    if nm is None:
        return names
    for path in glob.glob(os.path.join(lib_dir, "libcudnn*.so*")):
        out = subprocess.run([nm, "-D", "--undefined-only", path], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if parts and parts[-1].startswith("cu") and parts[-1][2:3].isupper():
                names.add(parts[-1].split("@")[0])
    return names


def preload(lib_dir):
    """Load the stand-in driver; returns its path, "system" when a real driver loads,
    or None when it cannot be built."""
    if "path" in _loaded:
        return _loaded["path"]
    try:
        ctypes.CDLL("libcuda.so.1")
        _loaded["path"] = "system"
        return "system"
    except OSError:
        pass
    cc = shutil.which("gcc") or shutil.which("cc")
    names = _driver_functions(lib_dir)
    if cc is None or not names:
        _loaded["path"] = None
        return None
    d = tempfile.mkdtemp(prefix="cudastub")
    src = os.path.join(d, "stub.c")
    with open(src, "w") as f:
        for n in sorted(names):
            f.write(f"int {n}(void) {{ return {_NO_DEVICE}; }}\n")
    so = os.path.join(d, "libcuda.so.1")
    subprocess.run([cc, "-shared", "-fPIC", "-o", so, "-Wl,-soname,libcuda.so.1", src],
                   check=True, capture_output=True)
    ctypes.CDLL(so, mode=ctypes.RTLD_GLOBAL)
    _loaded["path"] = so
    return so


def cudnn_for_descriptors():
    """(libcudnn, None) where cuDNN loads and has a CUDA driver to link (the machine's,
    or the stand-in above), for tests of calls that need no GPU; else (None, why not)."""
    from mxnet.backend.cudnn import _lib
    try:
        lib, path = _lib.load()
    except OSError as err:
        return None, f"libcudnn not loadable: {str(err)[:200]}"
    if preload(os.path.dirname(path)) is None:
        return None, "no CUDA driver and no C compiler for a stand-in"
    return lib, None

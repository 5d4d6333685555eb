"""Print the facts a bug report needs: ``mxnet-diagnose`` (or ``python -m mxnet.tools.diagnose``).

Sections, each switched by ``--NAME 0/1`` as in MXNet 1.9.1's diagnose script: python,
pip, mxnet (pymxnet's version and ``mx.runtime.Features()``), numpy (NumPy and its BLAS
through threadpoolctl), onednn, gpu (CuPy, CUDA driver/runtime, cuDNN, NCCL, devices),
os, hardware, network (off by default: it opens connections; ``--network 1`` checks
that PyPI is reachable), environment (``MXNET_*`` and threading variables), and
finally what the GPU path still needs and the command that installs it.

Every probe is guarded: a missing or broken optional package is reported, never raised.
"""
import argparse
import ctypes
import importlib
import importlib.metadata as metadata
import os
import platform
import shutil
import socket
import subprocess
import sys
import time

__all__ = ["main", "parse_args", "cuda_driver_version", "gpu_path_advice"]

_ENV_PREFIXES = ("MXNET_", "OMP_", "KMP_", "OPENBLAS_", "MKL_", "CUDA_", "CUPY_", "NCCL_",
                 "DNNL_", "ONEDNN_")
_NETWORK_URLS = {"PyPI": "https://pypi.org/simple/pip/"}


def _line(key, value):
    print(f"{key:<13}: {value}")


def _header(title):
    print(f"----------{title}----------")


def _dist_version(name):
    """Installed version of a distribution, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _import(name):
    """(module, None) or (None, reason)."""
    try:
        return importlib.import_module(name), None
    except Exception as err:       # ImportError, or a broken install raising anything
        return None, f"{type(err).__name__}: {err}"


def check_python():
    _header("Python Info")
    _line("Version", platform.python_version())
    _line("Compiler", platform.python_compiler())
    _line("Build", platform.python_build())
    _line("Arch", platform.architecture())
    _line("Executable", sys.executable)


def check_pip():
    _header("Pip Info")
    pip, _ = _import("pip")
    if pip is None:
        print("No pip installed for this Python.")
        return
    _line("Version", pip.__version__)
    _line("Directory", os.path.dirname(pip.__file__))


def check_mxnet():
    _header("MXNet Info")
    mx, err = _import("mxnet")
    if mx is None:
        print(f"import mxnet failed: {err}")
        return
    _line("pymxnet", _dist_version("pymxnet") or "not installed as a distribution "
          "(running from a source tree)")
    _line("API version", f"{mx.__version__} (MXNet's Python API it follows)")
    _line("Directory", os.path.dirname(mx.__file__))
    _line("Library", "none: pure Python on NumPy (CuPy for GPUs)")
    runtime, err = _import("mxnet.runtime")
    if runtime is None or not hasattr(runtime, "Features"):
        print(f"Build features: mx.runtime is not available ({err or 'no Features'})")
        return
    try:
        features = runtime.Features()
    except Exception as err:        # a broken probe must not end the report
        print(f"Build features: mx.runtime.Features() failed: {err}")
        return
    print("Build features:")
    for feature in features.values():
        print(f"  {feature}")


def check_numpy():
    _header("NumPy Info")
    np, err = _import("numpy")
    if np is None:
        print(f"import numpy failed: {err}")
        return
    _line("Version", np.__version__)
    _line("Directory", os.path.dirname(np.__file__))
    tpc, err = _import("threadpoolctl")
    if tpc is None:
        print(f"threadpoolctl not available ({err}): BLAS unknown")
        return
    pools = tpc.threadpool_info()
    if not pools:
        print("No BLAS/OpenMP thread pools loaded.")
    for pool in pools:
        name = pool.get("internal_api") or pool.get("user_api")
        _line(f"{pool.get('user_api')}",
              f"{name} {pool.get('version')}, {pool.get('num_threads')} threads"
              + (f", {pool.get('architecture')}" if pool.get("architecture") else ""))
        _line("  library", pool.get("filepath"))


def check_onednn():
    _header("oneDNN Info")
    for dist in ("onednn-cpu-gomp", "onednn", "onednn-cpu-iomp", "onednn-cpu-tbb"):
        version = _dist_version(dist)
        if version:
            _line("Wheel", f"{dist} {version}")
            break
    else:
        print("No oneDNN wheel installed (pip install 'pymxnet[onednn]').")
    backend, err = _import("mxnet.backend.onednn")
    if backend is None:
        _line("Backend", f"mxnet.backend.onednn not available ({err})")
        return
    for attr in ("available", "is_available", "enabled"):
        probe = getattr(backend, attr, None)
        if probe is not None:
            try:
                value = probe() if callable(probe) else probe
            except Exception as exc:
                value = f"probe failed: {exc}"
            _line("Backend", f"mxnet.backend.onednn, {attr}: {value}")
            break
    else:
        _line("Backend", "mxnet.backend.onednn imported")
    for attr in ("version", "__version__", "library_path"):
        value = getattr(backend, attr, None)
        if value is not None:
            try:
                _line(f"  {attr}", value() if callable(value) else value)
            except Exception as exc:
                _line(f"  {attr}", f"failed: {exc}")


def cuda_driver_version():
    """The NVIDIA driver's CUDA version as (major, minor), or None when there is no
    driver library (libcuda) on this machine."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll", "libcuda.dylib"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        try:
            if lib.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value:
                return version.value // 1000, (version.value % 1000) // 10
        except AttributeError:
            continue
    return None


def _cupy_facts(cp):
    """Lines about an imported CuPy: versions and devices (each probe guarded)."""
    facts = [("CuPy", cp.__version__)]
    rt = cp.cuda.runtime

    def probe(label, fn):
        try:
            facts.append((label, fn()))
        except Exception as err:
            facts.append((label, f"unavailable ({type(err).__name__}: {err})"))

    def fmt(v):
        return f"{v // 1000}.{(v % 1000) // 10}"
    probe("CUDA runtime", lambda: fmt(rt.runtimeGetVersion()))
    probe("CUDA driver", lambda: fmt(rt.driverGetVersion()))
    probe("cuDNN", lambda: importlib.import_module("cupy.cuda.cudnn").getVersion())
    probe("NCCL", lambda: importlib.import_module("cupy.cuda.nccl").get_version())
    try:
        count = rt.getDeviceCount()
    except Exception as err:
        facts.append(("Devices", f"none visible ({err})"))
        return facts, 0
    facts.append(("Devices", count))
    for i in range(count):
        try:
            prop = rt.getDeviceProperties(i)
            name = prop["name"].decode() if isinstance(prop["name"], bytes) else prop["name"]
            facts.append((f"  gpu({i})", f"{name}, {prop['totalGlobalMem'] / 2**30:.1f} GiB, "
                          f"compute {prop['major']}.{prop['minor']}"))
        except Exception as err:
            facts.append((f"  gpu({i})", f"properties unavailable ({err})"))
    return facts, count


def check_gpu():
    """Prints the GPU section; returns what it found (for the closing advice)."""
    _header("GPU Info")
    found = {"driver": cuda_driver_version(), "cupy": None, "devices": 0,
             "cupy_error": None, "wheels": {}}
    _line("NVIDIA driver", "CUDA %d.%d" % found["driver"] if found["driver"]
          else "not found (no libcuda on this machine)")
    for dist in ("cupy-cuda13x", "cupy-cuda12x", "cupy", "nvidia-cudnn-cu13",
                 "nvidia-cudnn-cu12", "nvidia-cudnn-frontend", "nvidia-nccl-cu13",
                 "nvidia-nccl-cu12"):
        version = _dist_version(dist)
        if version:
            found["wheels"][dist] = version
            _line("Wheel", f"{dist} {version}")
    cp, err = _import("cupy")
    if cp is None:
        found["cupy_error"] = err
        _line("CuPy", f"not importable ({err})")
        return found
    found["cupy"] = cp.__version__
    facts, found["devices"] = _cupy_facts(cp)
    for key, value in facts:
        _line(key, value)
    mx, _ = _import("mxnet")
    if mx is not None:
        try:
            _line("mx.num_gpus()", mx.context.num_gpus())
        except Exception as err:
            _line("mx.num_gpus()", f"failed: {err}")
    return found


def gpu_path_advice(found):
    """Lines saying what the GPU path lacks and how to install it, from check_gpu's
    findings (a dict with driver, cupy, devices, wheels)."""
    driver = found.get("driver")
    extra = "gpu-cu13" if driver is None or driver[0] >= 13 else "gpu-cu12"
    if driver is not None and driver[0] < 12:
        return [f"The NVIDIA driver supports CUDA {driver[0]}.{driver[1]}; pymxnet's GPU "
                "path needs CUDA 12 or 13: update the driver."]
    lines = []
    if driver is None:
        lines.append("No NVIDIA driver (libcuda) found: a GPU needs the NVIDIA driver "
                     "(CUDA 12 or 13 capable) installed from your OS or NVIDIA.")
    if found.get("cupy") is None:
        lines.append(f"CuPy is missing: pip install 'pymxnet[{extra}]' (CuPy, cuDNN, cuDNN "
                     "frontend and NCCL wheels for CUDA "
                     f"{extra[-2:]}; 'pymxnet[gpu]' is the newest CUDA).")
    else:
        wheels = found.get("wheels", {})
        cuda = "13" if "cupy-cuda13x" in wheels else "12" if "cupy-cuda12x" in wheels else None
        if cuda:
            for dist in (f"nvidia-cudnn-cu{cuda}", "nvidia-cudnn-frontend",
                         f"nvidia-nccl-cu{cuda}"):
                if dist not in wheels:
                    lines.append(f"{dist} is missing (convolutions/collectives fall back "
                                 f"or fail): pip install 'pymxnet[gpu-cu{cuda}]'")
        if found.get("devices", 0) == 0 and driver is not None:
            lines.append("CuPy is installed but sees no device: check CUDA_VISIBLE_DEVICES "
                         "and that the CuPy wheel's CUDA major matches the driver.")
    if not lines:
        lines.append(f"Nothing: {found.get('devices')} GPU(s) usable as mx.gpu(i).")
    return lines


def check_gpu_path(found):
    _header("GPU path: what is missing")
    for line in gpu_path_advice(found):
        print(line)


def check_os():
    _header("System Info")
    _line("Platform", platform.platform())
    _line("system", platform.system())
    _line("node", platform.node())
    _line("release", platform.release())
    _line("version", platform.version())


def check_hardware():
    _header("Hardware Info")
    _line("machine", platform.machine())
    _line("processor", platform.processor() or "unknown")
    _line("cpu count", os.cpu_count())
    if hasattr(os, "sched_getaffinity"):
        _line("usable cpus", len(os.sched_getaffinity(0)))
    if sys.platform.startswith("linux") and shutil.which("lscpu"):
        try:
            out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        for row in out.splitlines():
            key = row.split(":", 1)[0].strip()
            if key in ("Model name", "Architecture", "CPU(s)", "Thread(s) per core",
                       "Core(s) per socket", "Socket(s)", "L2 cache", "L3 cache", "Flags"):
                if key == "Flags":       # only the SIMD flags matter for the kernels
                    flags = row.split(":", 1)[1].split()
                    row = "Flags (SIMD): " + " ".join(
                        f for f in flags if f.startswith(("sse4", "avx", "fma", "amx")))
                print(row.strip())


def check_network(timeout):
    _header("Network Test")
    for name, url in _NETWORK_URLS.items():
        host = url.split("/")[2]
        start = time.time()
        try:
            socket.setdefaulttimeout(timeout)
            socket.gethostbyname(host)
            dns = time.time() - start
            from urllib.request import urlopen
            start = time.time()
            urlopen(url, timeout=timeout).close()
            print(f"Timing for {name}: {url}, DNS: {dns:.4f} sec, "
                  f"LOAD: {time.time() - start:.4f} sec.")
        except Exception as err:
            print(f"Error open {name}: {url}, {err}")


def check_environment():
    _header("Environment")
    shown = 0
    for key in sorted(os.environ):
        if key.startswith(_ENV_PREFIXES) or key in ("CC", "CXX"):
            print(f'{key}="{os.environ[key]}"')
            shown += 1
    if not shown:
        print("No MXNET_*, OMP_*, KMP_*, BLAS or CUDA variables set.")


_SECTIONS = ["python", "pip", "mxnet", "numpy", "onednn", "gpu", "os", "hardware",
             "network", "environment"]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="mxnet-diagnose", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Report this machine's Python, pymxnet, BLAS, oneDNN, GPU and "
                    "environment for bug reports.")
    for name in _SECTIONS:
        parser.add_argument("--" + name, default=0 if name == "network" else 1, type=int,
                            help=f"show the {name} section (1) or not (0)")
    parser.add_argument("--region", default="", type=str,
                        help="accepted for MXNet compatibility (no regional mirrors)")
    parser.add_argument("--timeout", default=10, type=int,
                        help="network test timeout in seconds")
    return parser.parse_args(argv)


def main(argv=None):
    """Entry point of ``mxnet-diagnose``; prints the report, returns 0."""
    args = parse_args(argv)
    found = None
    for name in _SECTIONS:
        if not getattr(args, name):
            continue
        if name == "gpu":
            found = check_gpu()
        elif name == "network":
            check_network(args.timeout)
        else:
            globals()["check_" + name]()
    if found is not None:
        check_gpu_path(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""mxnet.tools.diagnose: every section prints, a broken probe never raises, and the
closing GPU advice follows what was found."""
import os
import subprocess
import sys

import numpy as np

import mxnet as mx
from mxnet.tools import diagnose


def test_report_sections(capsys, monkeypatch):
    monkeypatch.setenv("MXNET_TEST_FLAG", "7")
    assert diagnose.main([]) == 0
    out = capsys.readouterr().out
    for title in ("Python Info", "Pip Info", "MXNet Info", "NumPy Info", "oneDNN Info",
                  "GPU Info", "System Info", "Hardware Info", "Environment",
                  "GPU path: what is missing"):
        assert f"----------{title}----------" in out, title
    assert "Network Test" not in out                   # off by default (no connections)
    assert f"Version      : {np.__version__}" in out
    assert 'MXNET_TEST_FLAG="7"' in out
    assert os.path.dirname(mx.__file__) in out


def test_sections_can_be_switched_off(capsys):
    diagnose.main(["--python", "0", "--pip", "0", "--mxnet", "0", "--numpy", "0",
                   "--onednn", "0", "--gpu", "0", "--hardware", "0", "--environment", "0"])
    out = capsys.readouterr().out
    assert "System Info" in out and "Python Info" not in out and "GPU path" not in out


def test_gpu_advice():
    none = {"driver": None, "cupy": None, "devices": 0, "wheels": {}}
    text = "\n".join(diagnose.gpu_path_advice(none))
    assert "No NVIDIA driver" in text and "pymxnet[gpu-cu13]" in text
    cu12 = dict(none, driver=(12, 4))
    assert "pymxnet[gpu-cu12]" in "\n".join(diagnose.gpu_path_advice(cu12))
    old = dict(none, driver=(11, 8))
    assert "update the driver" in diagnose.gpu_path_advice(old)[0]
    partial = {"driver": (13, 0), "cupy": "14.0", "devices": 1,
               "wheels": {"cupy-cuda13x": "14.0"}}
    text = "\n".join(diagnose.gpu_path_advice(partial))
    assert "nvidia-cudnn-cu13 is missing" in text and "nvidia-nccl-cu13 is missing" in text
    ready = dict(partial, wheels={"cupy-cuda13x": "14", "nvidia-cudnn-cu13": "9",
                                  "nvidia-cudnn-frontend": "1", "nvidia-nccl-cu13": "2"})
    assert diagnose.gpu_path_advice(ready) == ["Nothing: 1 GPU(s) usable as mx.gpu(i)."]


def test_broken_optional_module_is_reported(capsys, monkeypatch):
    real = diagnose.importlib.import_module

    def fake(name, *a):
        if name in ("mxnet.runtime", "mxnet.backend.onednn", "cupy"):
            raise RuntimeError(f"{name} is broken")
        return real(name, *a)
    monkeypatch.setattr(diagnose.importlib, "import_module", fake)
    diagnose.main(["--hardware", "0"])
    out = capsys.readouterr().out
    assert "mx.runtime is not available (RuntimeError: mxnet.runtime is broken)" in out
    assert "CuPy         : not importable (RuntimeError: cupy is broken)" in out


def test_runs_as_a_module():
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(mx.__file__), ".."))
    out = subprocess.run([sys.executable, "-m", "mxnet.tools.diagnose", "--hardware", "0"],
                         capture_output=True, text=True, env=env, check=True, timeout=120)
    assert "MXNet Info" in out.stdout

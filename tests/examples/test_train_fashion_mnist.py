"""The main job: seed 003's SimpleCNN trained with Gluon on Fashion-MNIST."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import train_fashion_mnist as job  # noqa: E402


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_trains_saves_and_evaluates(tmp_path, monkeypatch, capsys, hybridize,
                                    fashion_mnist):
    """A short run on a slice of the data learns, saves its parameters, and a second
    run with --evaluate reloads them and reports the same test accuracy."""
    from mxnet import gluon
    real = gluon.data.vision.datasets.FashionMNIST

    class Slice(real):                       # 2560 training / 1000 test images
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            n = 2560 if kw.get("train", True) else 1000
            self._data, self._label = self._data[:n], self._label[:n]
    monkeypatch.setattr(gluon.data.vision.datasets, "FashionMNIST", Slice)
    params = str(tmp_path / "net.params")
    args = ["--epochs", "1", "--params", params] + (["--hybridize"] if hybridize else [])
    acc = job.main(args)
    assert acc > 0.5 and os.path.exists(params)     # chance is 0.1
    out = capsys.readouterr().out
    # not a terminal: plain progress lines, no carriage-return redraws
    assert "\r" not in out and "epoch 1/1: 40/40 (100%)" in out
    assert "test accuracy" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "pip install 'pymxnet[plot]'" in out
    else:
        curves = tmp_path / "training_curves.png"
        assert f"wrote training curves to {curves}" in out
        assert curves.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert job.main(args + ["--evaluate"]) == pytest.approx(acc, abs=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_reaches_88_percent_in_two_epochs(tmp_path, hybridize):
    args = ["--epochs", "2", "--params", str(tmp_path / "net.params")]
    assert job.main(args + (["--hybridize"] if hybridize else [])) >= 0.88

"""The custom-operator examples (seed 001) run end to end on small data: Module.fit
with a CustomOp softmax and a NumpyOp softmax must learn (accuracy well above chance)
on the examples' synthetic stand-in for Fashion-MNIST (real Fashion-MNIST: the slow
test), and the TileLayer program binds as written."""
import logging
import os
import runpy
import sys
import warnings

import pytest

EXAMPLES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
sys.path.insert(0, EXAMPLES)           # the softmax examples import mlp_harness


@pytest.fixture
def examples_path():
    return EXAMPLES


SMALL = ["--epochs", "2", "--num-examples", "600", "--batch-size", "50"]


def _run_main(path, args):
    namespace = runpy.run_path(path, run_name="example")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return namespace["main"](args)


def test_custom_softmax_mlp_learns(examples_path):
    acc = _run_main(os.path.join(examples_path, "custom_softmax_mlp.py"),
                    SMALL + ["--synthetic"])
    assert acc > 0.8


def test_numpy_softmax_mlp_learns(examples_path):
    acc = _run_main(os.path.join(examples_path, "numpy_softmax.py"), SMALL + ["--synthetic"])
    assert acc > 0.8


@pytest.mark.slow
def test_custom_softmax_mlp_on_fashion_mnist(examples_path, fashion_mnist):
    acc = _run_main(os.path.join(examples_path, "custom_softmax_mlp.py"),
                    ["--epochs", "2", "--num-examples", "2000"])
    assert acc > 0.5


def test_tile_layer_program_runs_as_written(examples_path, caplog):
    with caplog.at_level(logging.INFO), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runpy.run_path(os.path.join(examples_path, "tile_layer.py"), run_name="__main__")
    text = caplog.text
    assert "arg_shape:[(2, 3)]" in text and "out_shape:[(2, 3, 10)]" in text
    assert "output_blob:['tileop_output']" in text

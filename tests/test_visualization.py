"""mx.viz against real MXNet 1.9.1: print_summary's table and plot_network's DOT
source for LeNet and an MLP equal the text MXNet wrote (tests/fixtures/viz,
make_fixtures.py)."""
import contextlib
import io
import os
import shutil
import sys
import warnings

import pytest

import mxnet as mx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "viz")
sys.path.insert(0, HERE)
from nets import CASES  # noqa: E402


def _fixture(name):
    with open(os.path.join(HERE, name)) as f:
        return f.read()


@pytest.mark.parametrize("stem,make,kwargs", CASES, ids=[c[0] for c in CASES])
def test_print_summary_matches_mxnet(stem, make, kwargs):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        mx.viz.print_summary(make(mx), **kwargs)
    assert buf.getvalue() == _fixture(stem + ".summary.txt")


@pytest.mark.parametrize("stem,make,kwargs", CASES, ids=[c[0] for c in CASES])
def test_plot_network_source_matches_mxnet(stem, make, kwargs):
    pytest.importorskip("graphviz")
    dot = mx.viz.plot_network(make(mx), hide_weights=stem != "mlp_shape", **kwargs)
    assert dot.source.strip().splitlines() == \
        _fixture(stem + ".gv").strip().splitlines()


def test_plot_network_warns_on_repeated_names():
    pytest.importorskip("graphviz")
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(net, name="fc", num_hidden=8)
    net = mx.sym.FullyConnected(net, name="fc", num_hidden=2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mx.viz.plot_network(net, shape={"data": (4, 5)})
    assert len(w) == 1
    message = str(w[0].message)
    assert "multiple variables with the same name" in message
    assert set(message.split("Repeated names: ")[1].split(",")) == {"fc", "fc_weight",
                                                                     "fc_bias"}


def test_hybridized_block():
    pytest.importorskip("graphviz")
    net = mx.gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(16, activation="relu"), mx.gluon.nn.Dense(4))
    net.initialize()
    with pytest.raises(mx.base.MXNetError, match="hybridize"):
        mx.viz.plot_network(net)
    net.hybridize()
    net(mx.nd.ones((2, 8)))
    src = mx.viz.plot_network(net, shape={"data": (2, 8)}).source
    assert "FullyConnected" in src and "16" in src
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        mx.viz.print_summary(net, shape={"data": (2, 8)})
    # 8*16+16 + 16*4+4 parameters
    assert "Total params: 212" in buf.getvalue()


def test_rejects_other_objects():
    with pytest.raises(TypeError):
        mx.viz.print_summary("not a symbol")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_render_png(tmp_path):
    pytest.importorskip("graphviz")
    from nets import lenet
    dot = mx.viz.plot_network(lenet(mx), shape={"data": (1, 1, 28, 28)}, save_format="png")
    out = dot.render(filename="lenet", directory=str(tmp_path), cleanup=True)
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"

"""gluon.model_zoo.vision: every 1.9.1 model builds with MXNet's parameter names, counts
and output shapes; pretrained files load from the local store or fail clearly.

ORACLE holds numbers taken once from the real MXNet 1.9.1 (get_model(name),
initialize(), forward on ones((1, 3, size, size))): input size, block prefix (without
its counter), number of parameters, total number of elements, and the first 12 hex
digits of the SHA-1 of the parameter names (block prefix removed) joined by newlines.
"""
import hashlib
import os
import re
import shutil

import numpy as np
import pytest

import mxnet as mx
from mxnet.base import MXNetError
from mxnet.gluon.model_zoo import model_store, vision
from mxnet.test_utils import assert_almost_equal

ORACLE = {
    "resnet18_v1": (32, "resnetv", 102, 11699112, "ea56a1221d5a"),
    "resnet34_v1": (32, "resnetv", 182, 21814696, "40d611318e3d"),
    "resnet50_v1": (32, "resnetv", 299, 25629032, "f078802e9328"),
    "resnet101_v1": (32, "resnetv", 588, 44695144, "33f29e534b68"),
    "resnet152_v1": (32, "resnetv", 877, 60404072, "80a5f159f432"),
    "resnet18_v2": (32, "resnetv", 98, 11695796, "989f0f0187d6"),
    "resnet34_v2": (32, "resnetv", 178, 21811380, "a621dc588b46"),
    "resnet50_v2": (32, "resnetv", 259, 25595060, "aff1f0e8e4b9"),
    "resnet101_v2": (32, "resnetv", 514, 44639412, "9e6fa1300b36"),
    "resnet152_v2": (32, "resnetv", 769, 60329140, "b5635a9aed90"),
    "vgg11": (32, "vgg", 22, 32200040, "4f76db618dae"),
    "vgg13": (32, "vgg", 26, 32384552, "91690b4bea23"),
    "vgg16": (32, "vgg", 32, 37694248, "c842ef33eff8"),
    "vgg19": (32, "vgg", 38, 43003944, "1e9584d44423"),
    "vgg11_bn": (32, "vgg", 54, 32211048, "50636259e762"),
    "vgg13_bn": (32, "vgg", 66, 32396328, "0e55cc0677ce"),
    "vgg16_bn": (32, "vgg", 84, 37711144, "a543c262d224"),
    "vgg19_bn": (32, "vgg", 102, 43025960, "d5153bf3950d"),
    "alexnet": (64, "alexnet", 16, 24400680, "d3f1b1ffa494"),
    "densenet121": (224, "densenet", 606, 8062504, "0060f377a151"),
    "densenet161": (224, "densenet", 806, 28900936, "9bea210bffea"),
    "densenet169": (224, "densenet", 846, 14307880, "7700967178e3"),
    "densenet201": (224, "densenet", 1006, 20242984, "9ba87f7739b0"),
    "squeezenet1.0": (224, "squeezenet", 52, 1248424, "4d564558d611"),
    "squeezenet1.1": (224, "squeezenet", 52, 1235496, "4d564558d611"),
    "inceptionv3": (299, "inception", 472, 23869000, "108b3033e346"),
    "mobilenet1.0": (32, "mobilenet", 137, 4253864, "99bd04470194"),
    "mobilenet0.75": (32, "mobilenet", 137, 2601976, "99bd04470194"),
    "mobilenet0.5": (32, "mobilenet", 137, 1342536, "99bd04470194"),
    "mobilenet0.25": (32, "mobilenet", 137, 475544, "99bd04470194"),
    "mobilenetv2_1.0": (32, "mobilenetv", 266, 3539136, "e61db44645c0"),
    "mobilenetv2_0.75": (32, "mobilenetv", 266, 2653864, "e61db44645c0"),
    "mobilenetv2_0.5": (32, "mobilenetv", 266, 1983104, "e61db44645c0"),
    "mobilenetv2_0.25": (32, "mobilenetv", 266, 1526856, "e61db44645c0"),
}

# Small enough to run forward in the default (fast) suite.
FAST = {"resnet18_v1", "resnet18_v2", "alexnet", "squeezenet1.1", "mobilenet0.25",
        "mobilenetv2_0.25"}


def _names_digest(net):
    names = [n[len(net.prefix):] for n in net.collect_params().keys()]
    return hashlib.sha1("\n".join(names).encode()).hexdigest()[:12]


def test_get_model_knows_every_model():
    assert sorted(vision._models) == sorted(ORACLE)
    with pytest.raises(ValueError, match="not supported"):
        vision.get_model("resnet19_v1")


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_parameter_names(name):
    _, alias, nparams, _, digest = ORACLE[name]
    net = vision.get_model(name.upper() if name == "alexnet" else name)
    assert re.sub(r"\d+_$", "", net.prefix) == alias
    assert len(list(net.collect_params().keys())) == nparams
    assert _names_digest(net) == digest


def _check_forward(name):
    size, _, nparams, total, digest = ORACLE[name]
    net = vision.get_model(name)
    net.initialize()
    out = net(mx.nd.ones((1, 3, size, size)))
    assert out.shape == (1, 1000)
    params = net.collect_params()
    assert sum(int(np.prod(p.shape)) for p in params.values()) == total
    assert _names_digest(net) == digest


@pytest.mark.parametrize("name", sorted(FAST))
def test_forward_shapes_and_sizes(name):
    _check_forward(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(ORACLE) - FAST))
def test_forward_shapes_and_sizes_full(name):
    _check_forward(name)


def test_classes_thumbnail_and_hybridize():
    net = vision.resnet18_v1(classes=10, thumbnail=True)
    net.initialize(mx.init.Xavier())
    assert net(mx.nd.ones((2, 3, 8, 8))).shape == (2, 10)
    assert net.features[0].weight.shape == (64, 3, 3, 3)
    small = vision.get_model("mobilenetv2_0.25", classes=7)
    small.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).rand(1, 3, 32, 32))
    out = small(x)
    assert out.shape == (1, 7) and small.output[0].weight.shape[0] == 7
    small.hybridize()
    assert_almost_equal(small(x).asnumpy(), out.asnumpy(), rtol=1e-4, atol=1e-5)


def test_model_store_file_names(tmp_path):
    assert model_store.short_hash("resnet18_v1") == "a0666292"
    with pytest.raises(ValueError):
        model_store.short_hash("nosuchnet")
    with pytest.raises(MXNetError, match=r"resnet18_v1-a0666292\.params.*does not download"):
        model_store.get_model_file("resnet18_v1", root=str(tmp_path))
    with pytest.raises(MXNetError, match=r"mobilenet0\.5-8e9d539c\.params"):
        vision.mobilenet0_5(pretrained=True, root=str(tmp_path))
    with pytest.raises(MXNetError, match=r"vgg11_bn-ee79a809\.params"):
        vision.vgg11_bn(pretrained=True, root=str(tmp_path))


def test_pretrained_loads_from_local_store(tmp_path, monkeypatch):
    src = vision.mobilenet0_25()
    src.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(1).rand(1, 3, 32, 32))
    ref = src(x).asnumpy()
    saved = tmp_path / "saved.params"
    src.save_parameters(str(saved))
    with open(saved, "rb") as f:
        sha1 = hashlib.sha1(f.read()).hexdigest()
    # a file under the published name but with other content is refused
    shutil.copy(saved, tmp_path / "mobilenet0.25-9f83e440.params")
    with pytest.raises(MXNetError, match="SHA-1"):
        vision.get_model("mobilenet0.25", pretrained=True, root=str(tmp_path))
    # a file whose checksum the store lists is loaded
    monkeypatch.setitem(model_store._model_sha1, "mobilenet0.25", sha1)
    os.rename(saved, tmp_path / f"mobilenet0.25-{sha1[:8]}.params")
    net = vision.get_model("mobilenet0.25", pretrained=True, root=str(tmp_path))
    assert_almost_equal(net(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_purge(tmp_path):
    (tmp_path / "a.params").write_bytes(b"x")
    (tmp_path / "keep.txt").write_text("y")
    model_store.purge(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["keep.txt"]

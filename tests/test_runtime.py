"""mx.runtime: features under MXNet 1.9.1's names, answered from what really works."""
import pytest

import mxnet as mx
from mxnet.runtime import Features, feature_list


def test_feature_list_has_mxnet_names_in_order():
    names = [f.name for f in feature_list()]
    assert names[:5] == ["CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT"]
    assert "MKLDNN" in names and len(names) >= 30


def test_features_is_a_singleton_mapping():
    f = Features()
    assert f is Features()
    assert set(f) == {x.name for x in feature_list()}
    for name, feat in f.items():
        assert f.is_enabled(name) is feat.enabled


def test_unknown_feature_is_runtime_error():
    with pytest.raises(RuntimeError, match="unknown"):
        Features().is_enabled("NOT_A_FEATURE")


def test_cuda_matches_gpu_count():
    assert Features().is_enabled("CUDA") == (mx.context.num_gpus() > 0)


def test_onednn_alias_and_never_claims_what_is_absent():
    f = Features()
    assert f.is_enabled("ONEDNN") == f.is_enabled("MKLDNN")
    for absent in ("TENSORRT", "CAFFE", "TVM_OP", "JEMALLOC"):
        assert not f.is_enabled(absent)


def test_repr_marks_enabled():
    text = repr(Features())
    assert "✔" in text or "✖" in text
    assert "CUDA" in text

"""Every public name MXNet 1.9.1 exposes in the modules of the operator-surface issue
(mx.nd/mx.sym and their contrib, linalg, image and random spaces, gluon.contrib,
mx.image, mx.contrib.autograd/amp/quantization) and of the small re-exported names
(mx.operator, autograd, callback, kvstore, model, gluon.utils/loss, initializer, the
vision transforms) has a test case: some test module calls it, imports it or names it
in a string. ``api_coverage.py`` counts presence; this counts tests."""
import json
import os

import mxnet as mx

from common import mentioned_words

TESTS = os.path.dirname(os.path.abspath(__file__))
NAMES = os.path.join(TESTS, "fixtures", "api", "mxnet-1.9.1-public-names.json")

MODULES = [
    "mxnet.ndarray", "mxnet.symbol", "mxnet.ndarray.contrib", "mxnet.symbol.contrib",
    "mxnet.ndarray.linalg", "mxnet.symbol.linalg", "mxnet.ndarray.image",
    "mxnet.symbol.image", "mxnet.ndarray.random", "mxnet.symbol.random",
    "mxnet.gluon.contrib.nn", "mxnet.gluon.contrib.rnn", "mxnet.image",
    "mxnet.contrib.autograd", "mxnet.contrib.amp", "mxnet.contrib.quantization",
    "mxnet.operator", "mxnet.autograd", "mxnet.callback", "mxnet.kvstore", "mxnet.model",
    "mxnet.gluon.utils", "mxnet.gluon.loss", "mxnet.initializer",
    "mxnet.gluon.data.vision.transforms",
]

# Names without a test yet. This list may only shrink: a name given a test leaves it.
NOT_YET_COVERED = set()     # names whose tests are still to come (none now)


def _public_names():
    with open(NAMES) as fh:
        table = json.load(fh)
    return {(m, n) for m in MODULES for n in table[m]}


def test_every_public_name_has_a_test():
    names = _public_names()
    words = mentioned_words(TESTS, skip=(os.path.basename(__file__),))
    missing = sorted(f"{m}.{n}" for m, n in names
                     if n not in words and (m, n) not in NOT_YET_COVERED)
    assert not missing, f"public names without any test: {missing}"
    covered_now = sorted(f"{m}.{n}" for m, n in NOT_YET_COVERED if n in words)
    assert not covered_now, f"remove from NOT_YET_COVERED (they have tests): {covered_now}"
    assert len(names) > 1000


def test_every_public_name_is_present():
    import importlib
    absent = []
    for m, n in sorted(_public_names()):
        if not hasattr(importlib.import_module(m), n):
            absent.append(f"{m}.{n}")
    assert not absent, f"public names missing from pymxnet: {absent}"
    assert mx.__name__ == "mxnet"

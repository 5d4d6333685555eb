"""Sweep over MXNet 1.9.1's public names (tests/fixtures/api, written from the real
MXNet 1.9.1) for the modules whose surface is complete: every name must exist; names
that exist only to say they are not implemented are listed here and must raise
NotImplementedError naming themselves. A second sweep requires every operator of the
new operator families to be named in some test under tests/."""
import importlib
import json
import os
import re

import numpy as np
import pytest

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
with open(os.path.join(TESTS, "fixtures", "api", "mxnet-1.9.1-public-names.json")) as f:
    NAMES = json.load(f)

COMPLETE = ["mxnet.ndarray", "mxnet.symbol", "mxnet.ndarray.linalg", "mxnet.symbol.linalg",
            "mxnet.ndarray.image", "mxnet.symbol.image", "mxnet.ndarray.random",
            "mxnet.symbol.random", "mxnet.gluon.contrib.nn", "mxnet.gluon.contrib.rnn",
            "mxnet.image"]

# Names other helpers own in this round (present once their branches merge).
OWNED_ELSEWHERE = {("mxnet.ndarray", "hard_sigmoid"), ("mxnet.symbol", "hard_sigmoid")}

# Present, but raising NotImplementedError: how to call each one.
NOT_IMPLEMENTED = {
}


def _cases():
    for mod in COMPLETE:
        for name in NAMES[mod]:
            if (mod, name) not in OWNED_ELSEWHERE:
                yield mod, name


def test_fixture_has_every_module():
    assert set(COMPLETE) <= set(NAMES)
    assert sum(len(NAMES[m]) for m in COMPLETE) > 600


@pytest.mark.parametrize("mod,name", list(_cases()))
def test_public_name_exists(mod, name):
    module = importlib.import_module(mod)
    assert hasattr(module, name), f"{mod}.{name} is missing"


@pytest.mark.parametrize("mod,name", sorted(NOT_IMPLEMENTED))
def test_listed_names_raise_not_implemented(mod, name):
    fn = getattr(importlib.import_module(mod), name)
    with pytest.raises(NotImplementedError, match=name.split(".")[-1]):
        NOT_IMPLEMENTED[(mod, name)](fn)


# --- every operator of the new families is exercised by some test --------------------
NEW_FAMILIES = ["mxnet.operator.ops.linalg_extra", "mxnet.operator.ops.array_extra",
                "mxnet.operator.ops.legacy_ops", "mxnet.operator.ops.random_pdf",
                "mxnet.operator.ops.amp_ops", "mxnet.operator.ops.multi_tensor",
                "mxnet.operator.ops.image", "mxnet.operator.ops.storage_ops",
                "mxnet.operator.nn.crop", "mxnet.operator.nn.svm_output",
                "mxnet.operator.nn.kl_sparse_reg", "mxnet.operator.nn.legacy_v1",
                "mxnet.operator.nn.spatial_transformer", "mxnet.operator.nn.im2col_ops",
                "mxnet.operator.nn.correlation"]


def _test_text():
    chunks = []
    for root, _, files in os.walk(TESTS):
        for fn in files:
            if fn.endswith(".py") and fn != os.path.basename(__file__):
                with open(os.path.join(root, fn)) as f:
                    chunks.append(f.read())
    return "\n".join(chunks)


def _spellings(name):
    """How a test may call the operator: its name, or its mx.nd.<sub>.<name> form."""
    out = {name}
    for prefix in ("_linalg_", "_image_", "_random_pdf_", "_"):
        if name.startswith(prefix):
            out.add(name[len(prefix):])
    return out


def test_every_new_operator_has_a_test():
    from mxnet.operator.registry import all_ops
    text = _test_text()
    untested = []
    for name, op in sorted(all_ops().items()):
        if type(op).__module__ not in NEW_FAMILIES or name != op.name:
            continue
        names = set().union(*(_spellings(n) for n in (op.name, *op.aliases)))
        if not any(re.search(r"[.\"']" + re.escape(n) + r"\b", text) for n in names):
            untested.append(name)
    assert not untested, f"operators with no test naming them: {untested}"


def test_sweep_counts():
    cases = list(_cases())
    assert len(cases) == sum(len(NAMES[m]) for m in COMPLETE) - len(OWNED_ELSEWHERE)
    assert np.all([isinstance(m, str) for m, _ in cases])

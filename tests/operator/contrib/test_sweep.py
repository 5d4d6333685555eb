"""Every operator registered under ``_contrib_`` (and every helper of mx.nd.contrib)
must be exercised by some test here: a new contrib name without a test fails this."""
import json
import os
import re

import mxnet as mx
from mxnet.operator.registry import all_ops

from common import fixture_path

HERE = os.path.dirname(os.path.abspath(__file__))
# Names registered elsewhere (tested with their own families).
OTHER_OWNERS = {"CTCLoss", "ctc_loss"}


def _tested_names():
    text = ""
    for d in (HERE, os.path.join(HERE, "..", "..", "ndarray")):
        for f in os.listdir(d):
            if f.endswith(".py") and f != "test_sweep.py":
                with open(os.path.join(d, f)) as fh:
                    text += fh.read()
    with open(fixture_path("contrib", "cases.json")) as fh:
        fixture_ops = {c["op"] for c in json.load(fh)["cases"]}
    # Called as contrib.<name>, or named in a parametrize list ("<name>").
    return (set(re.findall(r"contrib\.([A-Za-z_0-9]+)", text)) |
            set(re.findall(r"\"([A-Za-z_0-9]+)\"", text)) | fixture_ops)


def test_every_contrib_name_has_a_test():
    tested = _tested_names()
    names = {n[len("_contrib_"):] for n in all_ops() if n.startswith("_contrib_")}
    names |= {n for n in dir(mx.nd.contrib) if not n.startswith("_") and
              callable(getattr(mx.nd.contrib, n))}
    missing = sorted(n for n in names - OTHER_OWNERS if n not in tested)
    assert not missing, f"contrib names without a test: {missing}"
    assert len(names) > 50

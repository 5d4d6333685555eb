"""The module and qualified name pickles record for the classes whose objects users
pickle (optimizers, schedulers, metrics, initializers, data iterators, image augmenters,
Gluon layers, losses, datasets) are MXNet 1.9.1's (tests/fixtures/mxnet-1.9.1/pickles/
class_paths.json, read from the real MXNet): an object pickled here then loads in MXNet,
and MXNet's pickles find their classes here."""
import importlib
import json

import pytest

from common import fixture_path

with open(fixture_path("pickles", "class_paths.json")) as _f:
    PATHS = json.load(_f)


def _resolve(public):
    module, name = public.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("public", sorted(PATHS))
def test_class_pickles_under_mxnets_path(public):
    cls = _resolve(public)
    assert f"{cls.__module__}.{cls.__qualname__}" == PATHS[public]
    # and pickle finds the class under that path (what loading MXNet's pickles needs)
    module, _, qualname = PATHS[public].rpartition(".")
    assert getattr(importlib.import_module(module), qualname) is cls

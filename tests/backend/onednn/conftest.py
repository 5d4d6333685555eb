import pytest

from mxnet.backend import onednn

if not onednn.available():
    collect_ignore_glob = ["test_*.py"]


def pytest_collection_modifyitems(config, items):
    pass

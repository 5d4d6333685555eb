"""pytest plugin for the conformance step: run only the MXNet test ids listed in the file
named by $CONFORMANCE_IDS (one ``test_file::test_name`` per line), deselect the rest.

Loaded into MXNet 1.9.1's suite by the runner (``--pytest-arg=-p
--pytest-arg=conformance_select`` with this directory on ``--pythonpath``).
"""
import os


def short_id(nodeid):
    """'tests/python/unittest/test_x.py::test_y' -> 'test_x::test_y'."""
    path, _, name = nodeid.partition("::")
    return f"{os.path.basename(path)[:-3]}::{name}"


def pytest_collection_modifyitems(session, config, items):
    path = os.environ.get("CONFORMANCE_IDS")
    if not path:
        return
    with open(path, encoding="utf-8") as f:
        wanted = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    keep = [i for i in items if short_id(i.nodeid) in wanted]
    gone = [i for i in items if short_id(i.nodeid) not in wanted]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = keep

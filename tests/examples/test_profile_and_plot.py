"""examples/profile_and_plot.py writes a loadable Chrome trace of the hybridized
SimpleCNN step (every forward/backward graph node inside Executor.forward/backward,
per-thread nesting) and LeNet's plot_network source (and PNG when dot exists)."""
import json
import os
import runpy
import shutil
import sys

import pytest

EXAMPLES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))


def test_profile_and_plot(tmp_path, monkeypatch):
    pytest.importorskip("graphviz")
    monkeypatch.setattr(sys, "argv", ["profile_and_plot.py", "--out", str(tmp_path),
                                      "--steps", "2"])
    monkeypatch.syspath_prepend(EXAMPLES)
    runpy.run_path(os.path.join(EXAMPLES, "profile_and_plot.py"), run_name="__main__")
    with open(tmp_path / "profile_hybridized_step.json") as f:
        events = json.load(f)["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    names = [e["name"] for e in spans]
    assert names.count("step") == 2
    for op in ("Convolution", "_backward_Convolution", "FullyConnected", "Pooling",
               "sgd_mom_update", "Executor.forward", "Executor.backward"):
        assert op in names, op
    assert names.count("Convolution") == 4          # 2 layers x 2 steps
    by_track = {}
    for e in spans:
        by_track.setdefault((e["pid"], e["tid"]), []).append(e)
    for track in by_track.values():                  # spans nest or are disjoint
        track.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in track:
            end = e["ts"] + e["dur"]
            while stack and stack[-1] <= e["ts"] + 1e-3:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-3
            stack.append(end)
    table = (tmp_path / "profile_hybridized_step.txt").read_text()
    assert "_backward_Convolution" in table
    src = (tmp_path / "lenet.gv").read_text()
    assert "Convolution" in src and "5x5" in src and "20x24x24" in src
    if shutil.which("dot"):
        assert (tmp_path / "lenet.png").read_bytes()[:4] == b"\x89PNG"

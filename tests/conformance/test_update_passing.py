"""The conformance ratchet's list keeper: ids from runner results, growth only, check."""
import importlib.util
import json
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def keeper(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("update_passing",
                                                  os.path.join(HERE, "update_passing.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "LIST", str(tmp_path / "passing.txt"))
    return mod


def _result(tmp_path, name, outcomes):
    path = tmp_path / name
    tests = {f"tests/python/unittest/{k.split('::')[0]}.py::{k.split('::')[1]}": v
             for k, v in outcomes.items()}
    path.write_text(json.dumps({"files": {"f": {"tests": tests}}}))
    return str(path)


def test_list_grows_sorted_and_check_flags_regressions(keeper, tmp_path, capsys):
    r1 = _result(tmp_path, "r1.json", {"test_b::t2": "passed", "test_a::t1": "passed",
                                      "test_a::t3": "failed"})
    assert keeper.main([r1]) == 0
    assert sorted(keeper.read_list(keeper.LIST)) == ["test_a::t1", "test_b::t2"]
    lines = [l for l in open(keeper.LIST).read().splitlines() if not l.startswith("#")]
    assert lines == sorted(lines)
    r2 = _result(tmp_path, "r2.json", {"test_a::t1": "failed", "test_c::t9": "passed"})
    keeper.main([r2])                       # a failure never removes a listed test
    assert keeper.read_list(keeper.LIST) == {"test_a::t1", "test_b::t2", "test_c::t9"}
    assert keeper.main(["--check", r2]) == 1
    out = capsys.readouterr().out
    assert "test_a::t1: failed" in out and "test_b::t2: missing" in out
    r3 = _result(tmp_path, "r3.json", {"test_a::t1": "passed", "test_b::t2": "passed",
                                      "test_c::t9": "passed"})
    assert keeper.main(["--check", r3]) == 0


def test_files_of_list(keeper):
    assert keeper.files_of({"test_x::a", "test_w::b", "test_x::c"}) == ["test_w", "test_x"]


def test_selection_plugin_ids():
    spec = importlib.util.spec_from_file_location(
        "conformance_select", os.path.join(HERE, "conformance_select.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.short_id("tests/python/unittest/test_rnn.py::test_gru") == "test_rnn::test_gru"


def test_another_list_of_the_folder(keeper, tmp_path, monkeypatch):
    monkeypatch.setattr(keeper, "HERE", str(tmp_path))
    r1 = _result(tmp_path, "r1.json", {"test_operator_gpu::t1": "passed",
                                      "test_operator_gpu::t2": "failed"})
    assert keeper.main(["--list", "passing_gpu_emulated.txt", r1]) == 0
    path = tmp_path / "passing_gpu_emulated.txt"
    assert keeper.read_list(str(path)) == {"test_operator_gpu::t1"}
    assert "emulated on the host" in path.read_text()
    assert keeper.read_list(keeper.LIST) == set()        # passing.txt untouched
    assert keeper.main(["--list", "passing_gpu_emulated.txt", "--check", r1]) == 0


def test_slow_companion_list_is_kept_out_and_not_checked(keeper, tmp_path, monkeypatch):
    monkeypatch.setattr(keeper, "HERE", str(tmp_path))
    name = "passing_gpu_emulated.txt"
    assert keeper.slow_path(str(tmp_path / name)) == str(tmp_path / "slow_gpu_emulated.txt")
    assert keeper.slow_path(keeper.LIST) == str(tmp_path / "slow.txt")
    r1 = _result(tmp_path, "r1.json", {"test_operator_gpu::fast": "passed",
                                      "test_operator_gpu::slow": "passed"})
    assert keeper.main(["--list", name, r1]) == 0
    assert keeper.read_list(str(tmp_path / name)) == {"test_operator_gpu::fast",
                                                      "test_operator_gpu::slow"}
    (tmp_path / "slow_gpu_emulated.txt").write_text("# too slow\ntest_operator_gpu::slow\n")
    # a run without the slow test passes the check, and the next write drops it
    r2 = _result(tmp_path, "r2.json", {"test_operator_gpu::fast": "passed"})
    assert keeper.main(["--list", name, "--check", r2]) == 0
    assert keeper.main(["--list", name, r1]) == 0
    assert keeper.read_list(str(tmp_path / name)) == {"test_operator_gpu::fast"}
    r3 = _result(tmp_path, "r3.json", {"test_operator_gpu::fast": "failed"})
    assert keeper.main(["--list", name, "--check", r3]) == 1

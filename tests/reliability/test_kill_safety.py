"""A checkpoint SIGKILLed mid-write is never lost: after the kill every file at the
path is byte-for-byte the old version or the new one (issue 19, point 2).

A helper process (kill_worker.py) imports mxnet once and forks one child per trial;
the child rewrites the new checkpoint in a loop and is killed at moments spread over
two and a half write durations. MXNET_KILL_TRIALS sets trials per writer.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from kill_worker import WRITE  # noqa: E402
SRC = os.path.join(HERE, "..", "..", "src")
TRIALS = int(os.environ.get("MXNET_KILL_TRIALS", "10"))
RESULTS = {}


@pytest.fixture(scope="module")
def worker():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, HERE]),
               MXNET_CPU_WORKER_NTHREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "kill_worker.py")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env)

    def ask(*words):
        proc.stdin.write(" ".join(map(str, words)) + "\n")
        proc.stdin.flush()
        reply = proc.stdout.readline().split()
        assert reply and reply[0] in ("ok", "pid"), f"kill_worker failed: {reply}"
        return reply[1] if len(reply) > 1 else None
    yield ask
    proc.stdin.close()
    proc.wait(timeout=60)
    if RESULTS:
        print("\nkill test (old-intact / new-intact / mixed files / corrupted):")
        for w, c in RESULTS.items():
            print(f"  {w:30s} {c['old']:3d} {c['new']:3d} {c['mixed']:3d} {c['corrupt']:3d}")


def _files(d):
    return {n: open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d))
            if not n.endswith(".tmp")}


@pytest.mark.parametrize("writer", list(WRITE))
def test_killed_writer_leaves_old_or_new_file(worker, writer, tmp_path):
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    old_dir.mkdir()
    new_dir.mkdir()
    worker("ref", writer, "old", old_dir)
    duration = float(worker("ref", writer, "new", new_dir))
    old, new = _files(old_dir), _files(new_dir)
    assert old.keys() == new.keys() and all(old[n] != new[n] for n in old), \
        "old and new checkpoints must differ in every file for the test to mean anything"
    counts = {"old": 0, "new": 0, "mixed": 0, "corrupt": 0}
    for i in range(TRIALS):
        trial = tmp_path / f"trial{i}"
        shutil.copytree(old_dir, trial)
        pid = int(worker("trial", writer, trial))
        time.sleep(duration * 2.5 * (i + 0.5) / TRIALS)
        os.kill(pid, signal.SIGKILL)
        worker("reap", pid)
        got = _files(trial)
        assert got.keys() == old.keys(), f"files at the path changed: {sorted(got)}"
        kinds = {"old" if got[n] == old[n] else "new" if got[n] == new[n] else "corrupt"
                 for n in got}
        counts["corrupt" if "corrupt" in kinds else kinds.pop() if len(kinds) == 1
               else "mixed"] += 1
        shutil.rmtree(trial)
    RESULTS[writer] = counts
    print(f"{writer}: write {duration:.3f}s, {counts}")
    assert counts["corrupt"] == 0, counts


def test_error_while_writing_keeps_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "w.params"
    mx.nd.save(str(path), {"a": mx.nd.ones((3,))})
    before = path.read_bytes()
    bad = mx.nd.random.normal(0, -1, (2, 2))      # fails while computing
    with pytest.raises(mx.MXNetError, match="scale"):
        mx.nd.save(str(path), {"a": mx.nd.zeros((3,)), "b": bad})
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["w.params"]
    mx.nd.waitall()


def test_truncated_or_garbage_file_raises_naming_the_file(tmp_path):
    path = tmp_path / "t.params"
    mx.nd.save(str(path), {"a": mx.nd.arange(100)})
    data = path.read_bytes()
    for i, bad in enumerate([data[:len(data) // 2], data[:10], b"", b"garbage" * 9]):
        p = tmp_path / f"bad{i}.params"
        p.write_bytes(bad)
        with pytest.raises(mx.MXNetError, match=f"bad{i}.params"):
            mx.nd.load(str(p))
    assert (mx.nd.arange(3) + 1).asnumpy().tolist() == [1, 2, 3]

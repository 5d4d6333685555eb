"""Distributed KVStores over MPI ('dist_sync', 'dist_device_sync', 'dist_async',
'horovod'): real jobs of 2-4 local MPI ranks started through ``mxnet.tools.launch``.

Training runs are checked against a single-process run on the combined batch (written
here, in this process, with the local store or no store at all); every worker must end
with bitwise identical weights. Fault cases must end with a clear MXNetError well
within the subprocess timeout, never hang.
"""
import importlib.util
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import mxnet as mx
from mxnet.test_utils import assert_almost_equal

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "dist_scripts")
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "src"))
JOB_TIMEOUT = 120          # safety net only: every job here ends in seconds


def _have_mpi():
    if importlib.util.find_spec("mpi4py") is None:
        return False
    from mxnet.tools.launch import find_mpiexec
    try:
        find_mpiexec()
    except SystemExit:
        return False
    return True


needs_mpi = pytest.mark.skipif(not _have_mpi(), reason="mpi4py or mpiexec not installed")


def launch(n, script, *args, env=None, timeout=JOB_TIMEOUT):
    """Run script on n local ranks; (returncode, stdout, stderr, seconds)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = SRC + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.setdefault("OMP_NUM_THREADS", "1")
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "mxnet.tools.launch", "-n", str(n), "--launcher", "local",
           sys.executable, os.path.join(SCRIPTS, script), *map(str, args)]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=full_env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise AssertionError(f"{script} hung: no result after {timeout} s\n"
                             f"{(err.stderr or b'')[-3000:]!r}") from None
    out = proc.stdout.decode("utf-8", "replace")
    errtext = proc.stderr.decode("utf-8", "replace")
    return proc.returncode, out, errtext, time.monotonic() - start


def load_script(name):
    spec = importlib.util.spec_from_file_location(f"dist_script_{name}",
                                                  os.path.join(SCRIPTS, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rank_weights(outdir, n):
    out = []
    for r in range(n):
        with np.load(os.path.join(outdir, f"rank{r}.npz")) as f:
            out.append([f[f"arr_{i}"] for i in range(len(f.files))])
    return out


def assert_identical_and_close(per_rank, reference, rtol=1e-5, atol=1e-6):
    for r, weights in enumerate(per_rank[1:], 1):
        for a, b in zip(per_rank[0], weights):
            assert np.array_equal(a, b), f"worker {r} weights differ from worker 0's"
    assert len(per_rank[0]) == len(reference)
    for got, want in zip(per_rank[0], reference):
        assert_almost_equal(got, want, rtol=rtol, atol=atol)


def check_ok(rc, out, err, n, marker="done"):
    assert rc == 0, f"job failed (rc={rc}):\n{out[-2000:]}\n{err[-4000:]}"
    assert out.count(marker) == n, out


# --- synchronous training ----------------------------------------------------------------
@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_dist_sync_training_matches_single_process(n, tmp_path):
    steps = 6
    rc, out, err, _ = launch(n, "sync_train.py", "dist_sync", steps, tmp_path)
    check_ok(rc, out, err, n)
    script = load_script("sync_train")
    X, Y = script.make_data(steps, n)
    reference = script.train(mx.kv.create("local"), steps, n * script.BATCH, 0, 1, X, Y,
                             param_seed=100)
    assert_identical_and_close(rank_weights(tmp_path, n), reference)


@needs_mpi
def test_gluon_trainer_dist_sync(tmp_path):
    n, steps = 2, 5
    rc, out, err, _ = launch(n, "gluon_train.py", "dist_sync", steps, tmp_path)
    check_ok(rc, out, err, n)
    script = load_script("gluon_train")
    X, Y = script.make_data(steps, n)
    reference = script.train("device", steps, 0, 1, X, Y, seed=100)
    assert_identical_and_close(rank_weights(tmp_path, n), reference)


@needs_mpi
def test_module_fit_dist_sync(tmp_path):
    n, epochs = 2, 2
    rc, out, err, _ = launch(n, "module_train.py", "dist_sync", epochs, tmp_path)
    check_ok(rc, out, err, n)
    script = load_script("module_train")
    X, Y = script.make_data(n)
    reference = script.fit("local", epochs, X.reshape(-1, script.D), Y.reshape(-1),
                           n * script.BATCH, seed=100)
    assert_identical_and_close(rank_weights(tmp_path, n), reference)


@needs_mpi
def test_api_semantics_and_mismatch_reports():
    """init/push/pull/pushpull/broadcast/row_sparse_pull/optimizer states/compression,
    dist_device_sync and horovod, and mismatched calls reported on every worker."""
    n = 3
    rc, out, err, _ = launch(n, "api.py", n)
    check_ok(rc, out, err, n, marker="API OK")


@needs_mpi
def test_row_sparse_push_pull():
    """row_sparse init/push/pushpull/row_sparse_pull and lazy SGD over 2 workers."""
    n = 2
    rc, out, err, _ = launch(n, "sparse.py")
    check_ok(rc, out, err, n, marker="SPARSE OK")


# --- asynchronous training -------------------------------------------------------------------
@needs_mpi
def test_dist_async_converges(tmp_path):
    n = 3
    rc, out, err, _ = launch(n, "async_train.py", tmp_path)
    check_ok(rc, out, err, n)
    with np.load(os.path.join(tmp_path, "result.npz")) as f:
        w, w_true, loss0, loss1 = f["w"], f["w_true"], float(f["loss0"]), float(f["loss1"])
    assert loss1 < 1e-3 * loss0, (loss0, loss1)
    assert_almost_equal(w, w_true, rtol=1e-2, atol=1e-2)


# --- faults end with errors, not hangs -----------------------------------------------------
FAULT_ENV = {"MXNET_KVSTORE_TIMEOUT": "3", "MXNET_KVSTORE_ABORT_GRACE": "0.5"}


@needs_mpi
@pytest.mark.parametrize("mode, expected", [
    ("raise", ["worker 1 raised ValueError: boom in worker 1", "stops in push of key 0"]),
    ("exit", ["exited with non-zero status"]),
    ("hang", ["did not complete within 3 s (MXNET_KVSTORE_TIMEOUT)"]),
    ("early_exit", ["workers disagree", "the barrier before exit", "push: key 0"]),
])
def test_faults_end_with_errors(mode, expected):
    rc, out, err, seconds = launch(3, "faults.py", mode, env=FAULT_ENV, timeout=90)
    assert rc != 0, out
    assert "finished" not in out.replace("worker 1 finished", "")
    for frag in expected:
        assert frag in err, (frag, err[-4000:])
    if mode != "exit":
        assert "MXNetError" in err
    # bounded: the 3 s timeout (hang) plus start-up, far below the safety net
    assert seconds < 80, seconds


# --- without mpiexec -----------------------------------------------------------------------------
def test_dist_types_need_mpi4py(monkeypatch):
    """Without mpi4py, the distributed types raise a clear MXNetError."""
    from mxnet.kvstore import mpi_comm
    if mpi_comm._world is not None:
        pytest.skip("MPI is already initialised in this process")
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    for name in ("dist_sync", "dist_async", "dist_device_sync", "horovod"):
        with pytest.raises(mx.base.MXNetError, match=r"pymxnet\[dist\]"):
            mx.kv.create(name)


def test_import_mxnet_does_not_import_mpi4py():
    code = "import sys, mxnet; print('mpi4py' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=SRC)
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60)
    assert res.stdout.strip() == "False", res.stderr


@needs_mpi
def test_single_process_job():
    """A program started without mpiexec is a job of one worker."""
    code = ("import mxnet as mx\n"
            "kv = mx.kv.create('dist_sync')\n"
            "assert (kv.rank, kv.num_workers) == (0, 1)\n"
            "kv.init('w', mx.nd.ones((2,)))\n"
            "kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))\n"
            "w = mx.nd.zeros((2,))\n"
            "kv.pushpull('w', mx.nd.ones((2,)), out=w)\n"
            "assert w.asnumpy().tolist() == [0.5, 0.5], w\n"
            "kv._barrier()\n"
            "hv = mx.kv.create('horovod'); g = mx.nd.ones((3,)); hv.pushpull(0, g)\n"
            "assert g.asnumpy().tolist() == [1, 1, 1]\n"
            "ka = mx.kv.create('dist_async'); ka.init(0, mx.nd.ones((2,)))\n"
            "src = mx.nd.full((2,), 3); ka.push(0, src); src[:] = 100\n"
            "o = mx.nd.zeros((2,)); ka.pull(0, out=o)\n"
            "assert o.asnumpy().tolist() == [3, 3]\n"
            "print('single OK')\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    env["PYTHONPATH"] = SRC
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60)
    assert "single OK" in res.stdout, res.stderr[-3000:]


def test_launcher_command_line(tmp_path):
    from mxnet.tools import launch as L
    args = L.parse_args(["-n", "4", "-s", "2", "--launcher", "local", "--env-worker",
                         "A:1", "python", "train.py", "--lr", "0.1", "-n", "5"])
    assert args.command == ["python", "train.py", "--lr", "0.1", "-n", "5"]
    cmd = L.build_command(args, "/x/mpiexec")
    assert cmd[:3] == ["/x/mpiexec", "-n", "4"] and "--oversubscribe" in cmd
    assert cmd[-6:] == ["python", "train.py", "--lr", "0.1", "-n", "5"]
    assert "A=1" in cmd and "DMLC_NUM_WORKER=4" in cmd
    hosts = tmp_path / "hosts"
    hosts.write_text("# cluster\nnode1\nnode2 slots=4\nnode3:22\n")
    assert L._read_hosts(str(hosts)) == [("node1", None), ("node2", 4), ("node3", None)]
    args = L.parse_args(["-n", "2", "-H", str(hosts), "--launcher", "mpi", "python", "t.py"])
    cmd = L.build_command(args, "mpiexec", hostfile="/tmp/h")
    assert "--hostfile" in cmd and "--oversubscribe" not in cmd
    mpich = L.build_command(args, "mpiexec", hostfile="/tmp/h", flavour="mpich")
    assert mpich[:5] == ["mpiexec", "-n", "2", "-f", "/tmp/h"]
    with pytest.raises(SystemExit):
        L.parse_args(["-n", "2", "--launcher", "yarn", "python", "t.py"])
    with pytest.raises(SystemExit):
        L.parse_args(["-n", "2"])

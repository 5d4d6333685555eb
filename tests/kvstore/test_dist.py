"""Distributed KVStores over MPI ('dist_sync', 'dist_device_sync', 'dist_async',
'horovod'): real jobs of 2-4 local MPI ranks started through ``mxnet.tools.launch``.

Training runs are checked against a single-process run on the combined batch (written
here, in this process, with the local store or no store at all); every worker must end
with bitwise identical weights. Fault cases must end with a clear MXNetError well
within the subprocess timeout, never hang.
"""
import importlib.util
import json
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


SINGLE_JOB = ("import mxnet as mx\n"
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


def run_single(env=None):
    """Run SINGLE_JOB without mpiexec (no MPI launcher variables); the result."""
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    full_env["PYTHONPATH"] = SRC
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", SINGLE_JOB], env=full_env,
                          capture_output=True, text=True, timeout=60)


@needs_mpi
def test_single_process_job():
    """A program started without mpiexec is a job of one worker."""
    res = run_single()
    assert "single OK" in res.stdout, res.stderr[-3000:]


def _open_mpi_major():
    """Open MPI's major version when mpiexec is Open MPI's and tells it, else None."""
    if not _have_mpi():
        return None
    from mxnet.tools.launch import _identify, find_mpiexec
    flavour, major = _identify(find_mpiexec())
    return major if flavour == "openmpi" else None


@pytest.mark.skipif((_open_mpi_major() or 99) >= 5,
                    reason="needs the mpiexec of Open MPI 3.x or 4.x (where a job on "
                           "one machine could fail for want of ssh)")
def test_local_jobs_need_no_ssh():
    """Where neither ssh nor rsh is installed, jobs on this machine still run. Open MPI
    3.x/4.x fail exactly as they do without ssh when their ssh/rsh launcher is pointed
    at a program that does not exist."""
    no_ssh = {"OMPI_MCA_plm_rsh_agent": "/nonexistent/ssh"}
    rc, out, err, _ = launch(2, "sparse.py", env=no_ssh)
    check_ok(rc, out, err, 2, marker="SPARSE OK")
    res = run_single(no_ssh)
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


def _mca(cmd):
    """{name: value} of the --mca options in an mpiexec command line."""
    return {cmd[i + 1]: cmd[i + 2] for i, word in enumerate(cmd) if word == "--mca"}


@pytest.mark.parametrize("text, expected", [
    ("mpiexec (Open MPI) 5.0.11\n\nReport bugs to https://www.open-mpi.org/community/"
     "help/\n", ("openmpi", 5)),
    ("mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/"
     "help/\n", ("openmpi", 4)),
    ("mpiexec (OpenRTE) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/"
     "help/\n", ("openmpi", 4)),
    ("mpirun (Open MPI) 3.1.6\n", ("openmpi", 3)),
    ("mpirun (Open MPI) 10.0.0rc1\n", ("openmpi", 10)),
    ("HYDRA build details:\n    Version:                                 4.0.2\n"
     "    Release Date:                            Thu Apr  7 12:34:45 CDT 2022\n",
     ("mpich", None)),
    ("Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619\n",
     ("mpich", None)),
    ("mpirun (IBM Spectrum MPI) 10.4.0.0\n", ("openmpi", None)),
    ("", ("openmpi", None)),
])
def test_launcher_reads_mpi_version(text, expected):
    from mxnet.tools import launch as L
    assert L._parse_version(text) == expected


@pytest.mark.parametrize("version, btl, plm", [
    (5, "self,sm", None),          # Open MPI 5: "sm"; PRRTE has no "isolated" launcher
    (6, "self,sm", None),
    (4, "self,vader", "isolated"),  # 3.x/4.x: "vader"; local start without ssh/rsh
    (3, "self,vader", "isolated"),
    (None, "self,vader", None),    # unknown: "vader" is accepted by 3.x to 5.x
])
def test_launcher_local_mca_per_version(version, btl, plm, monkeypatch, tmp_path):
    from mxnet.tools import launch as L
    for name in ("OMPI_MCA_pml", "OMPI_MCA_btl", "OMPI_MCA_plm"):
        monkeypatch.delenv(name, raising=False)
    args = L.parse_args(["-n", "2", "--launcher", "local", "python", "t.py"])
    cmd = L.build_command(args, "mpiexec", flavour="openmpi", version=version)
    expected = {"pml": "ob1", "btl": btl}
    if plm:
        expected["plm"] = plm
    assert _mca(cmd) == expected
    assert cmd[-2:] == ["python", "t.py"]
    # without a hostfile the default launcher runs on this machine too
    args = L.parse_args(["-n", "2", "python", "t.py"])
    assert _mca(L.build_command(args, "mpiexec", version=version)) == expected
    # the user's own setting wins, parameter by parameter
    monkeypatch.setenv("OMPI_MCA_btl", "self,tcp")
    monkeypatch.setenv("OMPI_MCA_plm", "rsh")
    assert _mca(L.build_command(args, "mpiexec", version=version)) == {"pml": "ob1"}
    # hosts from a hostfile: mpiexec's own choices (network, ssh), whatever the version
    monkeypatch.delenv("OMPI_MCA_btl")
    monkeypatch.delenv("OMPI_MCA_plm")
    args = L.parse_args(["-n", "2", "-H", str(tmp_path / "hosts"), "--launcher", "ssh",
                         "python", "t.py"])
    assert _mca(L.build_command(args, "mpiexec", hostfile="/tmp/h", version=version)) == {}
    mpich = L.build_command(args, "mpiexec", hostfile="/tmp/h", flavour="mpich")
    assert "--mca" not in mpich
    args = L.parse_args(["-n", "2", "--launcher", "local", "python", "t.py"])
    assert "--mca" not in L.build_command(args, "mpiexec", flavour="mpich")


FAKE_MPI4PY = {
    "__init__.py": "class rc:\n    pass\n",
    # what MPI_Init would see
    "MPI.py": "import os\n"
              "seen = {k: os.environ.get(k) for k in ('OMPI_MCA_btl', 'OMPI_MCA_plm')}\n",
}


@pytest.mark.parametrize("env, during", [
    ({}, {"OMPI_MCA_btl": "self", "OMPI_MCA_plm": "isolated"}),
    ({"OMPI_MCA_btl": "self,tcp"},
     {"OMPI_MCA_btl": "self,tcp", "OMPI_MCA_plm": "isolated"}),
    ({"OMPI_MCA_plm": "rsh"}, {"OMPI_MCA_btl": "self", "OMPI_MCA_plm": "rsh"}),
    # started by mpiexec: the launcher's (and the user's) settings stand
    ({"OMPI_COMM_WORLD_SIZE": "2"}, {"OMPI_MCA_btl": None, "OMPI_MCA_plm": None}),
    ({"PMI_RANK": "0"}, {"OMPI_MCA_btl": None, "OMPI_MCA_plm": None}),
])
def test_singleton_mca_settings(env, during, tmp_path):
    """Without mpiexec, MPI_Init runs with btl 'self' and plm 'isolated' (settings that
    every Open MPI version accepts), unless the user set them; the environment is
    restored afterwards."""
    pkg = tmp_path / "mpi4py"
    pkg.mkdir()
    for name, text in FAKE_MPI4PY.items():
        (pkg / name).write_text(text)
    code = ("import json, os\n"
            "from mxnet.kvstore.mpi_comm import import_mpi\n"
            "MPI = import_mpi()\n"
            "after = {k: os.environ.get(k) for k in MPI.seen}\n"
            "print(json.dumps([MPI.seen, after, MPI.__file__]))\n")
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    full_env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), SRC])
    full_env.update(env)
    res = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-3000:]
    seen, after, where = json.loads(res.stdout.strip().splitlines()[-1])
    assert where.startswith(str(tmp_path))
    assert seen == during
    assert after == {k: env.get(k) for k in during}

import json
import os
import subprocess
import sys

import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

PROBE = ("import json, mxnet, threadpoolctl; "
         "print(json.dumps([i['num_threads'] for i in threadpoolctl.threadpool_info() "
         "if i['user_api'] == 'blas']))")


def _blas_threads(env):
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("setting,expected", [(None, 1), ("2", 2)])
def test_blas_threads_follow_mxnet_blas_num_threads(monkeypatch, setting, expected):
    import os
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2")
    env.pop("MXNET_BLAS_NUM_THREADS", None)
    if setting is not None:
        env["MXNET_BLAS_NUM_THREADS"] = setting
    counts = _blas_threads(env)
    if not counts:
        pytest.skip("NumPy's BLAS is not visible to threadpoolctl")
    assert all(c == expected for c in counts)


def test_pool_and_onednn_follow_omp_num_threads_and_the_mxnet_cap():
    code = ("from mxnet.backend import parallel, cpu_threads; "
            "print(parallel.num_parts(), cpu_threads.omp_num_threads())")
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    for env, want in (({"OMP_NUM_THREADS": "1"}, "1 1"),
                      ({"OMP_NUM_THREADS": "3", "MXNET_OMP_MAX_THREADS": "1"}, "1 1"),
                      ({"OMP_NUM_THREADS": "5"}, "2 5")):
        full = {k: v for k, v in os.environ.items()
                if k not in ("OMP_NUM_THREADS", "MXNET_OMP_MAX_THREADS", "MXNET_CPU_PARALLEL")}
        full.update(env, PYTHONPATH=src)
        out = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                             text=True, timeout=120)
        assert out.stdout.split() == want.split(), (env, out.stdout, out.stderr[-500:])

import json
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

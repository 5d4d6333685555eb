import subprocess
import sys
import warnings

import numpy as np
import pytest

import mxnet  # noqa: F401  (restores the aliases)


def test_legacy_numpy_aliases_exist_for_mxnet_era_code():
    # seed 001: `in_data[1].asnumpy().ravel().astype(np.int)`
    assert np.array([1.7, 2.2]).astype(np.int).tolist() == [1, 2]
    assert np.float is float and np.object is object


def test_np_lib_submodules_that_numpy2_made_private():
    # sockeye.lexicon: np.lib.arraysetops.unique(ids); NumPy 1.x had these submodules
    assert np.lib.arraysetops.unique([3, 1, 3]).tolist() == [1, 3]
    assert np.lib.index_tricks.r_[1:3].tolist() == [1, 2]
    assert np.lib.function_base.diff([1, 4, 9]).tolist() == [3, 5]


def test_np_save_of_a_ragged_list_stores_an_object_array(tmp_path):
    # sockeye saves one permutation per bucket (different lengths) as
    # np.save(f, [a, b], allow_pickle=True); NumPy 1.23 (MXNet 1.9.1's) saved a 1-d
    # object array, which np.load(allow_pickle=True) gives back
    parts = [np.arange(3), np.arange(5), np.arange(0)]
    path = tmp_path / "ragged.npy"
    with open(path, "wb") as f:
        np.save(f, parts, allow_pickle=True)
    back = np.load(path, allow_pickle=True)
    assert back.dtype == object and back.shape == (3,)
    for got, want in zip(back, parts):
        assert got.tolist() == want.tolist()
    # a regular list still becomes a plain array; a ragged one needs allow_pickle
    np.save(tmp_path / "even.npy", [[1, 2], [3, 4]])
    assert np.load(tmp_path / "even.npy").tolist() == [[1, 2], [3, 4]]
    with pytest.raises(ValueError):
        np.save(tmp_path / "no.npy", parts, allow_pickle=False)


def _runtime_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        mxnet._silence_fp_warnings()      # as at import; simplefilter put "default" first
        result = fn()
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)], result


def test_kernels_return_inf_and_nan_without_numpys_warnings_as_mxnet_does():
    nd = mxnet.nd

    def compute():
        out = [nd.log(nd.zeros(2)), nd.zeros(2) / nd.zeros(2), nd.sqrt(nd.array([-1.0])),
               mxnet.np.log(mxnet.np.zeros(1)), nd.array([1e30]).astype("float16")]
        return [o.asnumpy() for o in out]

    said, got = _runtime_warnings(compute)
    assert said == []
    assert np.isneginf(got[0]).all() and np.isnan(got[1]).all() and np.isnan(got[2]).all()
    assert np.isinf(got[4]).all()


def test_the_users_own_numpy_calls_and_pymxnets_deliberate_warnings_still_warn():
    assert _runtime_warnings(lambda: np.log(np.zeros(1)))[0] == [
        "divide by zero encountered in log"]
    said = _runtime_warnings(lambda: warnings.warn_explicit(
        "monitor not found", RuntimeWarning, "event_handler.py", 1,
        module="mxnet.gluon.contrib.estimator.event_handler"))[0]
    assert said == ["monitor not found"]


def test_a_script_importing_mxnet_sees_no_kernel_warnings():
    # as a user's script runs (pytest drops filters set while it collects, so the
    # import-time filter is checked in a fresh interpreter)
    code = ("import numpy as np, mxnet as mx\n"
            "print(mx.nd.log(mx.nd.zeros(1)).asnumpy(), (mx.nd.zeros(1) / 0).asnumpy())\n"
            "np.log(np.zeros(1))\n")
    run = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["[-inf]", "[nan]"]
    # the script's own NumPy call still warns, once
    assert run.stderr.count("RuntimeWarning") == 1 and "<string>" in run.stderr

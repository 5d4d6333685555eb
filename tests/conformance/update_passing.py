"""Keep tests/conformance/passing.txt: the MXNet 1.9.1 unit tests pymxnet passes.

    python3 tests/conformance/update_passing.py RESULT.json [RESULT.json ...]
        add every test that passed in these runner results (--junit JSON written by
        run_mxnet_unittests.py) to passing.txt; the list only grows and stays sorted.
    python3 tests/conformance/update_passing.py --check RESULT.json
        exit 1 unless every listed test passed in RESULT.json (a listed test that
        failed, errored, was skipped or did not run is reported).
    --list passing_gpu_emulated.txt: the same for another list of this folder (MXNet's
        GPU test files run on a GPU emulated on the host, .ci/conformance.sh).

Each list has a companion of tests that pass but take too long for CI's 30 minutes
(slow.txt for passing.txt, slow_gpu_emulated.txt for passing_gpu_emulated.txt): they
are never written into the list, not checked, and their number is reported.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "passing.txt")
HEADER = ("# MXNet 1.9.1 unit tests (tests/python/unittest) that pass on pymxnet.\n"
          "# Written by tests/conformance/update_passing.py; checked by .ci/conformance.sh.\n")
HEADERS = {"passing_gpu_emulated.txt": (
    "# MXNet 1.9.1 GPU test files' tests (tests/python/gpu) that pass on pymxnet with\n"
    "# one GPU emulated on the host (tests/multi_gpu_host.py: CuPy's array contract on\n"
    "# NumPy; the GPU kernels themselves are not run). Written by\n"
    "# tests/conformance/update_passing.py --list passing_gpu_emulated.txt; checked by\n"
    "# .ci/conformance.sh.\n")}


def short_id(nodeid):
    """'tests/python/unittest/test_x.py::test_y' -> 'test_x::test_y'."""
    path, _, name = nodeid.partition("::")
    return f"{os.path.basename(path)[:-3]}::{name}"


def read_list(path=None):
    path = path or LIST
    if not os.path.exists(path):
        return set()
    with open(path, encoding="utf-8") as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def outcomes(result_path):
    """{short id: outcome} of a runner result file."""
    with open(result_path, encoding="utf-8") as f:
        result = json.load(f)
    found = {}
    for entry in result["files"].values():
        for nodeid, outcome in (entry.get("tests") or {}).items():
            found[short_id(nodeid)] = outcome
    return found


def write_list(ids, path=None):
    path = path or LIST
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(HEADERS.get(os.path.basename(path), HEADER))
        for test_id in sorted(ids):
            f.write(test_id + "\n")
    os.replace(tmp, path)


def slow_path(list_path):
    """The companion list of too-slow tests: passing.txt -> slow.txt,
    passing_gpu_emulated.txt -> slow_gpu_emulated.txt (one id per line, '#' comments)."""
    folder, name = os.path.split(list_path)
    return os.path.join(folder, name.replace("passing", "slow", 1))


def files_of(ids):
    """The test files (test_x) the ids belong to, sorted."""
    return sorted({i.split("::", 1)[0] for i in ids})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="*", help="runner result JSON files (--junit)")
    ap.add_argument("--check", metavar="RESULT", help="verify the list against a run")
    ap.add_argument("--files", action="store_true",
                    help="print the comma-separated test files of the list and exit")
    ap.add_argument("--list", default=None,
                    help="another list of this folder instead of passing.txt")
    args = ap.parse_args(argv)
    path = os.path.join(HERE, args.list) if args.list else LIST
    slow = read_list(slow_path(path))
    listed = read_list(path) - slow
    if args.files:
        print(",".join(files_of(listed)))
        return 0
    if args.check:
        if slow:
            print(f"conformance: {len(slow)} passing tests are not run here (too slow for "
                  f"CI): tests/conformance/{os.path.basename(slow_path(path))}")
        got = outcomes(args.check)
        bad = sorted((i, got.get(i, "missing")) for i in listed if got.get(i) != "passed")
        for test_id, outcome in bad:
            print(f"conformance: {test_id}: {outcome}")
        print(f"conformance: {len(listed) - len(bad)} of {len(listed)} listed MXNet tests "
              f"pass")
        return 1 if bad else 0
    if not args.results:
        ap.error("give runner result files to add, or --check RESULT")
    added = set()
    for result in args.results:
        added |= {i for i, o in outcomes(result).items() if o == "passed"}
    added -= slow
    write_list(listed | added, path)        # a test newly named slow leaves the list
    print(f"{os.path.basename(path)}: {len(listed | added)} tests "
          f"({len(added - listed)} new)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

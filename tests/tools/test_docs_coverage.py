"""The docs' generated API-coverage section (docs/api_coverage.py) counts what the
package really has."""
import importlib.util
import json
import os

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def load():
    spec = importlib.util.spec_from_file_location(
        "docs_api_coverage", os.path.join(ROOT, "docs", "api_coverage.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_coverage_counts_present_and_missing(tmp_path):
    cov = load()
    names = tmp_path / "names.json"
    names.write_text(json.dumps({"mxnet.callback": ["Speedometer", "NoSuchThing"],
                                 "mxnet.no_such_module": ["x", "y"]}))
    rows = cov.coverage(str(names))
    assert rows[0][:4] == ("mxnet.callback", 1, 2, ["NoSuchThing"])
    assert rows[1][:4] == ("mxnet.no_such_module", 0, 2, ["x", "y"])
    assert "ModuleNotFoundError" in rows[1][4]
    text = cov.markdown(rows)
    assert "**1 of the 4**" in text and "| `mxnet.callback` | 1 / 2 | 1 |" in text
    assert "- `mxnet.callback`: `NoSuchThing`" in text


def test_names_file_is_mxnets_list():
    with open(os.path.join(ROOT, "docs", "data", "mxnet-1.9.1-public-names.json")) as f:
        spec = json.load(f)
    assert "ProgressBar" in spec["mxnet.callback"] and len(spec) > 50

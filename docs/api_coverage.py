"""MXNet 1.9.1 public-name coverage of the ``mxnet`` package on this checkout.

Used by the docs build (``hooks.py``) to write the "not there yet" part of *Coming from
MXNet 1.9.1*, so the page always describes the code it is built from. The name list
(``data/mxnet-1.9.1-public-names.json``) records, per module, the public names that
real MXNet 1.9.1 exposes; a name counts as present when the module imports and has it.
"""
import importlib
import json
import os
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = os.path.join(HERE, "data", "mxnet-1.9.1-public-names.json")


def coverage(names_file=NAMES):
    """[(module, present count, total, missing names, import error or None)], sorted."""
    with open(names_file) as f:
        spec = json.load(f)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mod, names in sorted(spec.items()):
            try:
                module = importlib.import_module(mod)
            except Exception as err:          # the module itself does not import
                rows.append((mod, 0, len(names), list(names),
                             f"{type(err).__name__}: {err}"))
                continue
            missing = [n for n in names if not hasattr(module, n)]
            rows.append((mod, len(names) - len(missing), len(names), missing, None))
    return rows


def markdown(rows):
    """The coverage as Markdown: a summary line, a per-module table, the missing names."""
    have = sum(r[1] for r in rows)
    total = sum(r[2] for r in rows)
    out = [f"pymxnet offers **{have} of the {total}** public names of MXNet 1.9.1's Python "
           f"API ({100.0 * have / max(total, 1):.1f}%), counted over {len(rows)} modules "
           "when this page was built.", "",
           "| module | present | missing |", "| --- | ---: | ---: |"]
    for mod, present, count, missing, _ in rows:
        out.append(f"| `{mod}` | {present} / {count} | {len(missing)} |")
    out += ["", "### Missing names", ""]
    incomplete = [r for r in rows if r[3]]
    if not incomplete:
        out.append("None: every listed name is present.")
    for mod, _, _, missing, error in incomplete:
        why = f" (the module does not import: {error})" if error else ""
        out.append(f"- `{mod}`{why}: " + ", ".join(f"`{n}`" for n in missing))
    return "\n".join(out) + "\n"

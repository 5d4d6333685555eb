"""Turn a training log into a per-epoch table: ``mxnet-parse-log train.log``.

Understands the lines MXNet's training loops log:

* Module / ``mx.model`` (``Epoch[0] Train-accuracy=0.91``, ``Epoch[0]
  Validation-accuracy=0.90``, ``Epoch[0] Time cost=12.3``) and Speedometer lines
  (``Epoch[0] Batch [100-200]\\tSpeed: 1234.56 samples/sec\\t...``);
* Gluon's Estimator ``LoggingHandler`` (``[Epoch 0] Finished in 12.345s, training
  accuracy: 0.9100, validation accuracy: 0.9000``).

Columns are ``train-NAME``, ``val-NAME``, ``time`` (seconds) and ``speed`` (mean
samples/s); a value logged several times in one epoch is averaged (as MXNet's
parse_log does). Epochs are printed 1-based, as MXNet's script prints them.
``--format`` is ``markdown`` (default), ``csv`` or ``none`` (tab-separated, MXNet's
name for it); ``--metric-names`` keeps only those metrics.
"""
import argparse
import csv
import io
import re
import sys
from collections import OrderedDict, defaultdict

__all__ = ["main", "parse_lines", "format_table"]

_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf)"
_MODULE_METRIC = re.compile(r"Epoch\[(\d+)\] (Train|Validation)-([^=\s]+)=" + _NUM)
_MODULE_TIME = re.compile(r"Epoch\[(\d+)\] Time cost=" + _NUM)
_SPEED = re.compile(r"Epoch\[(\d+)\] Batch \[[^\]]*\]\s+Speed: " + _NUM + " samples/sec")
_GLUON_EPOCH = re.compile(r"\[Epoch (\d+)\] Finished in " + _NUM + r"s(?:, (.*))?$")
_GLUON_PAIR = re.compile(r"\s*(.+?): " + _NUM + r"\s*$")


def _column(prefix, name):
    if prefix in ("Train", "training"):
        return "train-" + name
    if prefix in ("Validation", "validation"):
        return "val-" + name
    return name


def parse_lines(lines):
    """{epoch (0-based): {column: mean value}} from log lines, epochs in log order."""
    sums = OrderedDict()

    def add(epoch, column, value):
        cell = sums.setdefault(int(epoch), defaultdict(lambda: [0.0, 0]))[column]
        cell[0] += float(value)
        cell[1] += 1

    for line in lines:
        for m in _MODULE_METRIC.finditer(line):
            add(m.group(1), _column(m.group(2), m.group(3)), m.group(4))
        m = _MODULE_TIME.search(line)
        if m:
            add(m.group(1), "time", m.group(2))
        m = _SPEED.search(line)
        if m:
            add(m.group(1), "speed", m.group(2))
        m = _GLUON_EPOCH.search(line.rstrip())
        if m:
            add(m.group(1), "time", m.group(2))
            for item in (m.group(3) or "").split(","):
                pair = _GLUON_PAIR.match(item)
                if pair:
                    words = pair.group(1).split(" ", 1)
                    if len(words) == 2 and words[0] in ("training", "validation"):
                        add(m.group(1), _column(words[0], words[1]), pair.group(2))
                    else:
                        add(m.group(1), pair.group(1), pair.group(2))
    return OrderedDict((epoch, {col: s / n for col, (s, n) in cols.items()})
                       for epoch, cols in sums.items())


def _order(columns, metric_names=None):
    """Train metrics, validation metrics (same metric order), then time and speed."""
    metrics = []
    for col in columns:
        name = col.split("-", 1)[1] if col.startswith(("train-", "val-")) else None
        if name is not None and name not in metrics:
            metrics.append(name)
    if metric_names:
        metrics = [m for m in metrics if m in metric_names]
    others = [c for c in columns if not c.startswith(("train-", "val-"))
              and c not in ("time", "speed")]
    ordered = [f"train-{m}" for m in metrics] + [f"val-{m}" for m in metrics]
    ordered = [c for c in ordered if c in columns]
    if not metric_names:
        ordered += others
    return ordered + [c for c in ("time", "speed") if c in columns]


def format_table(table, fmt="markdown", metric_names=None):
    """The table as text: ``markdown``, ``csv`` or ``none`` (tab-separated)."""
    columns = []
    for cols in table.values():
        columns.extend(c for c in cols if c not in columns)
    columns = _order(columns, metric_names)

    def cell(epoch, col):
        value = table[epoch].get(col)
        if value is None:
            return ""
        return "%.1f" % value if col in ("time", "speed") else "%f" % value

    rows = [[str(epoch + 1)] + [cell(epoch, c) for c in columns] for epoch in table]
    header = ["epoch"] + columns
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        return out.getvalue()
    if fmt == "none":
        return "".join("\t".join(r) + "\n" for r in [header] + rows)
    if fmt != "markdown":
        raise ValueError(f"parse_log: unknown format {fmt!r}; use markdown, csv or none")
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv=None):
    """Entry point of ``mxnet-parse-log``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="mxnet-parse-log",
                                     description="Parse an MXNet training log into a table")
    parser.add_argument("logfile", nargs=1, help="the log file ('-' for stdin)")
    parser.add_argument("--format", default="markdown", choices=["markdown", "csv", "none"],
                        help="table format (none: tab-separated)")
    parser.add_argument("--metric-names", nargs="+", default=None,
                        help="metrics to keep (default: every metric in the log)")
    args = parser.parse_args(argv)
    path = args.logfile[0]
    try:
        if path == "-":
            table = parse_lines(sys.stdin)
        else:
            with open(path, errors="replace") as f:
                table = parse_lines(f)
    except OSError as err:
        print(f"mxnet-parse-log: cannot read {path}: {err.strerror}", file=sys.stderr)
        return 2
    if not table:
        print(f"mxnet-parse-log: no epoch results found in {path}", file=sys.stderr)
        return 1
    sys.stdout.write(format_table(table, args.format, args.metric_names))
    return 0


if __name__ == "__main__":
    sys.exit(main())

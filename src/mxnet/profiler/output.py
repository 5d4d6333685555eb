"""What the profiler writes: the Chrome trace (``dump``) and the aggregate table
(``dumps``), from the events and statistics ``core`` holds."""
import json
import os

from . import core

__all__ = ["write_trace", "aggregate"]

_SORT_KEYS = {"total": 1, "avg": None, "min": 2, "max": 3, "count": 0}


class _TraceWriter:
    """Writes the trace file incrementally: each dump appends only the events
    recorded since the previous one, yet leaves a complete JSON document behind (the
    closing trailer is written after the events and overwritten by the next dump).
    Every device ('cpu/0') and every domain is a process; threads keep their own
    track; timed events are complete ('X') events, so they nest per thread."""

    _TRAILER = '\n], "displayTimeUnit": "ms"}\n'

    def __init__(self, filename):
        self.filename = filename
        self.pids = {}
        self.threads = set()
        self.empty = True
        with open(filename, "w") as f:
            f.write('{"traceEvents": [' + self._TRAILER)
        self.end = len('{"traceEvents": [')

    def _pid(self, process, out):
        pid = self.pids.get(process)
        if pid is None:
            pid = self.pids[process] = len(self.pids)
            out.append({"ph": "M", "name": "process_name", "pid": pid,
                        "args": {"name": process}})
        return pid

    def append(self, batch):
        out = []
        names = {small: tname for small, tname in list(core.thread_names.values())}
        for ph, name, cat, device, tid, ts, dur, extra in batch:
            pid = self._pid(device if cat in ("operator", "Custom Operator") else cat, out)
            if (pid, tid) not in self.threads:
                self.threads.add((pid, tid))
                out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                            "args": {"name": names.get(tid, str(tid))}})
            ev = {"name": name, "cat": cat, "ph": ph, "ts": round(ts, 3), "pid": pid,
                  "tid": tid}
            if ph == "X":
                ev["dur"] = round(dur, 3)
            elif ph == "i":
                ev["s"] = extra
            elif ph == "C":
                ev["args"] = {name: extra}
            out.append(ev)
        if not out:
            return
        text = ",\n".join(json.dumps(e) for e in out)
        if not self.empty:
            text = ",\n" + text
        self.empty = False
        with open(self.filename, "r+") as f:
            f.seek(self.end)
            f.write(text)
            self.end = f.tell()
            f.write(self._TRAILER)
            f.truncate()


_writer = None


def write_trace(filename, finished):
    """Append the events recorded since the last dump to filename (a new file after
    a finished dump or when the filename changed) and drop them from memory."""
    global _writer
    if _writer is None or _writer.filename != filename or not os.path.exists(filename):
        _writer = _TraceWriter(filename)
    n = len(core.events)
    batch = core.events[:n]
    del core.events[:n]
    _writer.append(batch)
    if finished:
        _writer = None


def _rows(domain, sort_by, ascending):
    rows = [(name, c, tot, mn, mx, tot / c if c else 0.0)
            for name, (c, tot, mn, mx) in domain.items()]
    key = _SORT_KEYS[sort_by]
    idx = 5 if key is None else key + 1
    rows.sort(key=lambda r: r[idx], reverse=not ascending)
    return rows


def aggregate(format="table", sort_by="total", ascending=False):
    """The statistics as MXNet prints them: a text table per domain, or JSON with
    'Time', 'Memory' and 'Unit' (times in ms)."""
    with core._lock:
        snapshot = {cat: {n: list(v) for n, v in d.items()} for cat, d in core.stats.items()}
    domains = sorted(snapshot)
    if format == "json":
        time_part = {}
        for cat in domains:
            time_part[cat] = {name: {"Count": c, "Total": _num(tot), "Min": _num(mn),
                                     "Max": _num(mx), "Avg": _num(avg)}
                              for name, c, tot, mn, mx, avg in
                              _rows(snapshot[cat], sort_by, ascending)}
        return json.dumps({"Time": time_part, "Memory": {},
                           "Unit": {"Time": "ms", "Memory": "kB"}}, indent=4)
    if not domains:
        return ""
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different "
             "entries."]
    head = (f"{'Name':<30}{'Total Count':>11}{'Time (ms)':>17}{'Min Time (ms)':>17}"
            f"{'Max Time (ms)':>17}{'Avg Time (ms)':>17}")
    rule = (f"{'----':<30}{'-----------':>11}{'---------':>17}{'-------------':>17}"
            f"{'-------------':>17}{'-------------':>17}")
    for cat in domains:
        lines += [cat, "=================", head, rule]
        for name, c, tot, mn, mx, avg in _rows(snapshot[cat], sort_by, ascending):
            label = name if len(name) < 30 else name + " "
            lines.append(f"{label:<30}{c:>11}{tot:>17.4f}{mn:>17.4f}{mx:>17.4f}"
                         f"{avg:>17.4f}")
        lines.append("")
    return "\n".join(lines) + "\n"


def _num(x):
    return round(x, 6)

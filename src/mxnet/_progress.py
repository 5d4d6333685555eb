"""Progress reporting for the loops a user watches (training, im2rec, callbacks).

``progress_bar`` gives a tqdm bar when the stream is a terminal and tqdm is installed
(it is a dependency of pymxnet, but a stripped environment may lack it), and otherwise
a ``PlainProgress`` that prints a complete line every so often: log files and CI output
get readable lines instead of carriage-return redraws.
"""
import sys
import time

__all__ = ["progress_bar", "PlainProgress", "is_tty"]


def is_tty(stream):
    """Whether ``stream`` is attached to a terminal (False for anything without isatty)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):     # no isatty, or a closed stream
        return False


def _tqdm():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


class PlainProgress:
    """Line-by-line stand-in for a tqdm bar: ``update``, ``set_postfix``, ``close``.

    A line ``desc: done/total (pct%) k=v ... rate unit/s`` is printed every ``every``
    steps (default: about every tenth of ``total``, or every 1000 steps when the total
    is unknown) and once more by ``close``.
    """

    def __init__(self, total=None, desc="", unit="it", file=None, every=None):
        self.total, self.desc, self.unit = total, desc, unit
        self.file = file if file is not None else sys.stderr
        if every is None:
            every = max(int(total) // 10, 1) if total else 1000
        self.every = max(int(every), 1)
        self.n = 0
        self.postfix = {}
        self._next = self.every
        self._start = time.time()
        self._closed = False

    def set_postfix(self, ordered_dict=None, refresh=True, **kwargs):
        """Values shown at the end of each line (as tqdm's ``set_postfix``)."""
        self.postfix = dict(ordered_dict or {}, **kwargs)

    def update(self, n=1):
        """Advances by ``n`` steps, printing a line when a reporting point is passed."""
        self.n += n
        if self.n >= self._next:
            self._next = (self.n // self.every + 1) * self.every
            self._print()

    def _print(self):
        elapsed = max(time.time() - self._start, 1e-9)
        done = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        pct = f" ({100.0 * self.n / self.total:.0f}%)" if self.total else ""
        fields = "".join(f" {k}={v}" for k, v in self.postfix.items())
        head = f"{self.desc}: " if self.desc else ""
        print(f"{head}{done}{pct}{fields} {self.n / elapsed:,.1f} {self.unit}/s",
              file=self.file, flush=True)

    def close(self):
        """Prints the final line (once)."""
        if not self._closed:
            self._closed = True
            if self.n % self.every or self.n == 0:
                self._print()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def progress_bar(total=None, desc="", unit="it", file=None, every=None, leave=True):
    """A tqdm bar on a terminal (``file``, default stderr), else a ``PlainProgress``."""
    file = file if file is not None else sys.stderr
    tqdm = _tqdm()
    if tqdm is not None and is_tty(file):
        return tqdm(total=total, desc=desc, unit=unit, file=file, leave=leave,
                    dynamic_ncols=True)
    return PlainProgress(total=total, desc=desc, unit=unit, file=file, every=every)

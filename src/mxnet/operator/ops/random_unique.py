"""``_sample_unique_zipfian``: per batch row, ``num_sampled`` distinct classes drawn
from [0, range_max) under the log-uniform (Zipfian) law

    P(k) = (log(k + 2) - log(k + 1)) / log(range_max + 1),

drawing with replacement until that many distinct values have come up (candidate
sampling for sampled softmax). A draw is floor(exp(u * log(range_max + 1))) - 1 with
u uniform in [0, 1), which has exactly that law. The second output counts the draws
each row needed.
"""
import numpy as np

from ...base import MXNetError
from ..contrib._common import store
from ..params import Int, Schema, ShapeOrNone
from ..registry import Op, ShapeError, register

__all__ = ["SampleUniqueZipfian"]


def _unique_row(xp, rng, range_max, num_sampled):
    """(distinct classes in the order they first came up, number of draws)."""
    log_range = np.log(range_max + 1.0)
    draws = xp.zeros((0,), dtype=np.int64)
    chunk = max(2 * num_sampled, 16)
    while True:
        u = rng.random((chunk,), dtype=np.float64)
        new = (xp.floor(xp.exp(u * log_range)) - 1).astype(np.int64)
        draws = xp.concatenate([draws, xp.clip(new, 0, range_max - 1)])
        _, first = xp.unique(draws, return_index=True)
        if first.size >= num_sampled:
            first = xp.sort(first)[:num_sampled]
            return draws[first], int(first[-1]) + 1
        chunk *= 2


@register
class SampleUniqueZipfian(Op):
    """Distinct classes per row from the log-uniform law on [0, range_max) (``shape``:
    (batch_size, num_sampled)), and the number of draws each row took."""
    name = "_sample_unique_zipfian"
    params = Schema(range_max=Int(low=1), shape=ShapeOrNone(None))
    resources = ("random",)
    backward_uses = ()
    writes_outputs = True

    def arguments(self, p):
        return []

    def outputs(self, p):
        return ["output0", "output1"]

    def _check_shape(self, p):
        if p.shape is None or len(p.shape) != 2:
            raise ShapeError(f"{self.name}: shape must be 2-D (batch_size, num_sampled), "
                             f"got {p.shape}")
        return tuple(p.shape)

    def infer_shape(self, p, in_shapes):
        batch, num = self._check_shape(p)
        return [], [(batch, num), (batch,)], []

    def infer_type(self, p, in_types):
        return [], [np.dtype(np.int64), np.dtype(np.int64)], []

    def forward(self, ctx, p, inputs, aux, out=None):
        xp = ctx.xp
        batch, num = self._check_shape(p)
        if num > p.range_max:      # checked when it runs, as MXNet does
            raise MXNetError(f"{self.name}: cannot draw {num} distinct classes from "
                             f"range_max={p.range_max}")
        classes = xp.empty((batch, num), dtype=np.int64)
        trials = xp.empty((batch,), dtype=np.int64)
        for b in range(batch):
            classes[b], trials[b] = _unique_row(xp, ctx.rng, p.range_max, num)
        return [store(out, 0, classes), store(out, 1, trials)]

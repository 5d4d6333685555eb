"""Box geometry shared by the detection operators: format conversion, pairwise IoU and
a greedy non-maximum suppression whose every step is a vectorised array operation."""
import numpy as np

__all__ = ["to_corner", "to_center", "pairwise_iou", "greedy_nms"]

# Boxes compared at once inside one NMS block; a block's IoU matrix is BLOCK x BLOCK.
BLOCK = 256


def to_corner(xp, b):
    """(..., 4) center boxes (x, y, w, h) -> corner boxes (x1, y1, x2, y2)."""
    x, y, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return xp.stack([x - w / 2, y - h / 2, x + w / 2, y + h / 2], axis=-1)


def to_center(xp, b):
    """(..., 4) corner boxes -> center boxes (x, y, w, h)."""
    x1, y1, x2, y2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return xp.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], axis=-1)


def _area(xp, b, plus_one=0.0):
    w = b[..., 2] - b[..., 0] + plus_one
    h = b[..., 3] - b[..., 1] + plus_one
    # A box with negative width or height has no area (MXNet's rule for corner boxes).
    return xp.where((w < 0) | (h < 0), 0, w * h)


def pairwise_iou(xp, a, b, zero_if_empty=False, plus_one=0.0):
    """IoU of every corner box of a (n, 4) with every one of b (m, 4): (n, m). An empty
    union gives NaN (box_iou's 0/0), or 0 with zero_if_empty. ``plus_one=1`` counts
    pixels (width x2 - x1 + 1), as the R-CNN operators do."""
    iw = xp.minimum(a[:, None, 2], b[None, :, 2]) - xp.maximum(a[:, None, 0], b[None, :, 0])
    ih = xp.minimum(a[:, None, 3], b[None, :, 3]) - xp.maximum(a[:, None, 1], b[None, :, 1])
    inter = xp.maximum(iw + plus_one, 0) * xp.maximum(ih + plus_one, 0)
    union = _area(xp, a, plus_one)[:, None] + _area(xp, b, plus_one)[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / union
    if zero_if_empty:
        iou = xp.where(union <= 0, 0, iou)
    return iou


def _suppresses(xp, a, b, ids_a, ids_b, thresh, inclusive, plus_one=0.0):
    """(len(a), len(b)) boolean: box a_i suppresses box b_j."""
    iou = pairwise_iou(xp, a, b, zero_if_empty=inclusive, plus_one=plus_one)
    hit = iou >= thresh if inclusive else iou > thresh
    if ids_a is not None:
        hit &= ids_a[:, None] == ids_b[None, :]
    return hit


def greedy_nms(xp, boxes, alive, ids=None, thresh=0.5, inclusive=False, plus_one=0.0):
    """Greedy NMS over corner ``boxes`` (n, 4) in row order: a live box suppresses every
    later live box it overlaps by more than ``thresh`` (``>=`` with inclusive), only of
    its own class when ``ids`` is given. ``alive`` (n,) bool marks the candidates;
    returns the kept mask. ``plus_one``: pixel-count areas (see pairwise_iou).

    Work goes block by block: inside a block the greedy choice is the fixed point of
    "kept = alive and not suppressed by an earlier kept box", reached by repeated
    vectorised passes (each pass settles at least one more box); the block's kept boxes
    then suppress all later live boxes at once."""
    n = boxes.shape[0]
    alive = alive.copy()
    for start in range(0, n, BLOCK):
        stop = min(start + BLOCK, n)
        a = alive[start:stop]
        if not bool(a.any()):
            continue
        bb = boxes[start:stop]
        bid = None if ids is None else ids[start:stop]
        m = _suppresses(xp, bb, bb, bid, bid, thresh, inclusive, plus_one)
        m = xp.triu(m, 1) & a[:, None]
        keep = a
        while True:
            new = a & ~(m & keep[:, None]).any(axis=0)
            if bool((new == keep).all()):
                break
            keep = new
        alive[start:stop] = keep
        if stop == n:
            break
        rest = xp.nonzero(alive[stop:])[0] + stop
        kept = xp.nonzero(keep)[0]
        if rest.size == 0 or kept.size == 0:
            continue
        hit = _suppresses(xp, bb[kept], boxes[rest], None if bid is None else bid[kept],
                          None if ids is None else ids[rest], thresh, inclusive, plus_one)
        alive[rest[hit.any(axis=0)]] = False
    return alive

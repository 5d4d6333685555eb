"""Detection operators, pymxnet against the real MXNet 1.9.1 (2 threads each, one run):

* ``box_nms`` on 10,000 boxes of 2 classes (one image, class-aware NMS at IoU 0.5,
  boxes of a typical detector's spread so that a few thousand survive);
* ``ROIAlign`` forward and forward+backward, 256 rois on a 256x64x64 feature map,
  pooled 7x7, sample_ratio 2.

Milliseconds per call, lower is better; the ratio column is MXNet's time over
pymxnet's (> 1: pymxnet faster).

    python benchmarks/detection_ops.py
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CASES = ["box_nms 10000 boxes x 2 classes", "ROIAlign fwd 256 rois, 256x64x64, 7x7",
         "ROIAlign fwd+bwd 256 rois, 256x64x64, 7x7"]


def _time(fn, n=5, repeat=3):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e3


def inputs():
    import numpy as np
    rng = np.random.RandomState(0)
    n = 10000
    xy = rng.uniform(0, 600, (n, 2))
    wh = rng.uniform(10, 120, (n, 2))
    boxes = np.concatenate([rng.randint(0, 2, (n, 1)), rng.uniform(0, 1, (n, 1)), xy,
                            xy + wh], axis=1).astype(np.float32)[None]
    feat = rng.standard_normal((1, 256, 64, 64)).astype(np.float32)
    r = 256
    x1 = rng.uniform(0, 48, r)
    y1 = rng.uniform(0, 48, r)
    rois = np.stack([np.zeros(r), x1, y1, x1 + rng.uniform(4, 16, r),
                     y1 + rng.uniform(4, 16, r)], axis=1).astype(np.float32)
    return boxes, feat, rois


def worker():
    import mxnet as mx
    from mxnet import autograd, nd
    boxes, feat, rois = inputs()
    b = nd.array(boxes)
    f = nd.array(feat)
    r = nd.array(rois)
    f.attach_grad()

    def nms():
        nd.contrib.box_nms(b, overlap_thresh=0.5, id_index=0, score_index=1,
                           coord_start=2).wait_to_read()

    def align():
        nd.contrib.ROIAlign(f, r, pooled_size=(7, 7), spatial_scale=1.0,
                            sample_ratio=2).wait_to_read()

    def align_bwd():
        with autograd.record():
            y = nd.contrib.ROIAlign(f, r, pooled_size=(7, 7), spatial_scale=1.0,
                                    sample_ratio=2)
        y.backward()
        f.grad.wait_to_read()
    kept = int((nd.contrib.box_nms(b, overlap_thresh=0.5, id_index=0)[0, :, 0] >= 0)
               .sum().asscalar())
    return {CASES[0]: _time(nms), CASES[1]: _time(align), CASES[2]: _time(align_bwd),
            "boxes kept": kept, "version": mx.__version__}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--out", default=os.path.join(harness.HERE, "results",
                                                  "detection_ops.md"))
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker()))
        return
    me = os.path.abspath(__file__)
    runs = {"pymxnet": harness.run_worker(me, "pymxnet"),
            "mxnet-1.9.1": harness.run_worker(me, "mxnet-1.9.1")}
    kept = {fw: r.get("boxes kept") for fw, r in runs.items()}
    text = ["# Detection operators (ms per call, lower is better)", "",
            harness.machine_note(), "", harness.table(runs, CASES, unit="ms"), "",
            f"Boxes kept by box_nms (must agree): {kept}", ""]
    harness.write_report(args.out, text, runs)


if __name__ == "__main__":
    main()

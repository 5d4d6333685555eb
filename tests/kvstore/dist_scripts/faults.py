"""A dist_sync training loop in which worker 1 fails at step 2: ``faults.py MODE``.

MODE: raise (an uncaught exception), exit (os._exit without MPI_Finalize), hang
(sleeps forever: the others must time out), early_exit (finishes after 1 step while
the others go on). The job must end with errors, never hang."""
import os
import sys
import time

import mxnet as mx

mode = sys.argv[1]
kv = mx.kv.create("dist_sync")
r = kv.rank
kv.init(0, mx.nd.zeros((16,)))
steps = 1 if (mode == "early_exit" and r == 1) else 5
for step in range(steps):
    if r == 1 and step == 2:
        if mode == "raise":
            raise ValueError("boom in worker 1")
        if mode == "exit":
            os._exit(3)
        if mode == "hang":
            time.sleep(600)
    g = mx.nd.ones((16,))
    kv.pushpull(0, g)
    print(f"worker {r} step {step} ok", flush=True)
print(f"worker {r} finished", flush=True)

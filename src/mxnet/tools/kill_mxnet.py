"""Stop a distributed job's processes on every host: ``mxnet-kill hostfile user prog``.

MXNet 1.9.1's ``kill-mxnet.py``: on each host of ``hostfile`` (one per line,
``host[:port]`` or ``host slots=N``; reached with ssh) and on this machine, send
SIGKILL to the processes of ``user`` whose command line contains ``prog``. This
process and its parents are never signalled. ``--dry-run`` lists the matching
processes without signalling them; ``--signal TERM`` sends another signal.
"""
import argparse
import os
import shlex
import signal
import subprocess
import sys

__all__ = ["main", "matching_pids", "remote_command", "read_hosts"]


def read_hosts(path):
    """Host names from a hostfile (port and ``slots=`` fields dropped)."""
    hosts = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                hosts.append(line.split()[0].split(":", 1)[0])
    return hosts


def _ancestors():
    """This process and its parents (never killed: the pattern is in our own argv)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def matching_pids(user, prog):
    """PIDs on this machine owned by ``user`` whose command line contains ``prog``
    (empty when the user does not exist)."""
    proc = subprocess.run(["ps", "-ww", "-u", user, "-o", "pid=,args="],
                          capture_output=True, text=True)
    skip = _ancestors()
    pids = []
    for row in proc.stdout.splitlines():
        fields = row.split(None, 1)
        if len(fields) == 2 and prog in fields[1] and int(fields[0]) not in skip:
            pids.append(int(fields[0]))
    return pids


def remote_command(user, prog, sig="KILL"):
    """The shell command run on a remote host (arguments quoted; the pipeline's own
    processes are left out)."""
    return (f"ps -ww -u {shlex.quote(user)} -o pid=,args= | grep -F -e {shlex.quote(prog)} "
            f"| grep -v -e 'grep -F' | awk '{{print $1}}' | xargs -r kill -{shlex.quote(sig)}")


def main(argv=None):
    """Entry point of ``mxnet-kill``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="mxnet-kill", description="Kill a program's processes on every host of a "
                                       "hostfile and on this machine")
    parser.add_argument("hostfile", help="hosts to reach with ssh ('-' or an empty file: "
                                         "this machine only)")
    parser.add_argument("user", help="owner of the processes to kill")
    parser.add_argument("prog", help="text that the processes' command lines contain")
    parser.add_argument("--signal", default="KILL", help="signal name (default KILL)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would be killed, signal nothing")
    args = parser.parse_args(argv)
    sig = getattr(signal, "SIG" + args.signal.upper().removeprefix("SIG"), None)
    if sig is None:
        parser.error(f"unknown signal {args.signal!r}")
    hosts = [] if args.hostfile == "-" else read_hosts(args.hostfile)
    cmd = remote_command(args.user, args.prog, sig.name.removeprefix("SIG"))
    status = 0
    for host in hosts:
        print(f"{host}: {cmd}")
        if args.dry_run:
            continue
        proc = subprocess.run(["ssh", "-oStrictHostKeyChecking=no", "-oBatchMode=yes",
                               host, cmd], capture_output=True, text=True)
        if proc.returncode:
            print(f"{host}: ssh failed ({proc.returncode}): {proc.stderr.strip()}",
                  file=sys.stderr)
            status = 1
    pids = matching_pids(args.user, args.prog)
    print(f"localhost: {'would kill' if args.dry_run else 'killing'} "
          f"{' '.join(map(str, pids)) or 'nothing'}")
    if not args.dry_run:
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass                     # ended meanwhile
            except PermissionError as err:
                print(f"localhost: cannot signal {pid}: {err}", file=sys.stderr)
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())

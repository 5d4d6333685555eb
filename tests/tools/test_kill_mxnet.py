"""mxnet.tools.kill_mxnet: finds and signals only the matching processes."""
import getpass
import os
import subprocess
import sys
import uuid

from mxnet.tools import kill_mxnet


def test_hostfile_and_remote_command(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("node1:9000\n# comment\nnode2 slots=4\n\n")
    assert kill_mxnet.read_hosts(hosts) == ["node1", "node2"]
    cmd = kill_mxnet.remote_command("bob", "train.py; rm -rf /")
    assert "'train.py; rm -rf /'" in cmd and cmd.endswith("xargs -r kill -KILL")


def test_kills_the_matching_local_process(capsys):
    marker = f"mxnet_kill_test_{uuid.uuid4().hex}"
    proc = subprocess.Popen([sys.executable, "-c", "import time, sys; time.sleep(60)",
                             marker])
    try:
        user = getpass.getuser()
        assert kill_mxnet.matching_pids(user, marker) == [proc.pid]
        assert kill_mxnet.main(["-", user, marker, "--dry-run"]) == 0
        assert f"would kill {proc.pid}" in capsys.readouterr().out
        assert proc.poll() is None
        assert kill_mxnet.main(["-", user, marker]) == 0
        assert proc.wait(timeout=30) == -9
        assert kill_mxnet.matching_pids(user, marker) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert os.getpid() not in kill_mxnet.matching_pids(user, "pytest")

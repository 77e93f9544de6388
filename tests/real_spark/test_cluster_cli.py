"""``sessionsched cluster up|status|down`` through the real command line, on a real cluster of
its own (not the session's): up prints the URLs, status shows the workers, down leaves no
process behind."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from sessionsched.backends import procs
from sessionsched.backends.local import ClusterError, LocalCluster
from tests.sparkcluster import free_port, master_ports

pytestmark = pytest.mark.cluster


def cli(*args: str, timeout_s: float = 200) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sessionsched.cli", "cluster", *args],
                          capture_output=True, text=True, timeout=timeout_s)


def test_up_status_down(tmp_path):
    directory = str(tmp_path / "c")
    port, rest_port, ui_port = master_ports()
    try:
        up = cli("up", "--dir", directory, "--workers", "2", "--cores", "3", "--memory", "1g",
                 "--port", str(port), "--ui-port", str(ui_port), "--timeout", "180")
        assert up.returncode == 0, up.stderr
        assert f"spark://127.0.0.1:{port}" in up.stdout
        assert f"http://127.0.0.1:{ui_port}" in up.stdout
        assert f"http://127.0.0.1:{rest_port}" in up.stdout  # REST on port + 1, not 6066
        recorded = LocalCluster.load(directory)
        started = dict(recorded._procs)
        assert sorted(started) == ["master", "worker-1", "worker-2"]
        assert all(procs.is_running(p) for p in started.values())

        status = cli("status", "--dir", directory, "--json")
        assert status.returncode == 0, status.stderr
        data = json.loads(status.stdout)
        assert [(w["state"], w["cores"], w["memory_mib"]) for w in data["workers"]] == [
            ("ALIVE", 3, 1024), ("ALIVE", 3, 1024)]
        text = cli("status", "--dir", directory)
        assert "workers  2 alive of 2" in text.stdout

        again = cli("up", "--dir", directory, "--port", str(free_port()))
        assert again.returncode == 2
        assert again.stderr.count("\n") == 1 and "still running" in again.stderr

        down = cli("down", "--dir", directory)
        assert down.returncode == 0, down.stderr
        assert down.stdout.strip() == "stopped worker-1, worker-2, master"
        assert not any(procs.is_running(p) or procs.group_alive(p.pid) for p in started.values())
        gone = cli("status", "--dir", directory)
        assert gone.returncode == 2 and "no local cluster recorded" in gone.stderr
    finally:
        try:
            LocalCluster.load(directory).stop()
        except ClusterError:
            pass  # down did its job


@pytest.mark.parametrize(
    "args, message",
    [
        (["up", "--memory", "lots"], "memory 'lots': expected a size like 512m or 4g"),
        (["up", "--workers", "0"], "workers 0: expected at least 1"),
        (["up", "--port", "70000"], "port 70000: expected 1..65535"),
        (["down"], "no local cluster recorded in"),
    ],
    ids=["memory", "workers", "port", "down without a cluster"],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    result = cli(*args, "--dir", str(tmp_path / "none"), timeout_s=60)
    assert result.returncode == 2
    assert result.stderr.startswith("sessionsched cluster: ") and message in result.stderr
    assert result.stderr.count("\n") == 1  # one line, no traceback


def test_a_busy_port_is_refused_before_anything_starts(tmp_path):
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        result = cli("up", "--dir", str(tmp_path / "c"), "--port", str(free_port()),
                     "--ui-port", str(port), timeout_s=60)
    assert result.returncode == 2
    assert f"ui port {port} on 127.0.0.1 is already in use" in result.stderr
    assert not (tmp_path / "c" / "master.pid").exists()

"""Submitting from another host, on the real standalone cluster, to a server on HTTPS with a
self-signed certificate and tokens: ``sessionsched submit --upload --ca`` sends the
application file, its ``--py-files`` and ``--files``; the driver and the executors use the
server's stored copies, never the client's directory; the driver's agent verifies the server
with ``server.tls.ca`` and registers; the stored files are gone once retention forgets the
app."""

from __future__ import annotations

import hashlib
import ssl
import sys

import httpx
import pytest

from sessionsched.commands._serverproc import ServerProcess
from sessionsched.config import tokens_file as tokens
from tests.sparkcluster import SMALL, conf_args, wait_until
from tests.support.cli_helpers import cli_env, run_cli
from tests.tlscert import make_cert

pytestmark = pytest.mark.cluster

JOB = r'''import os
import sys
from pyspark import SparkFiles
from pyspark.sql import SparkSession

import helper  # from --py-files


def score(_):
    import helper  # on the executor too
    with open(SparkFiles.get("words.txt")) as f:  # from --files
        return helper.score(f.read())


spark = SparkSession.builder.getOrCreate()
total = spark.sparkContext.parallelize(range(2), 2).map(score).sum()
# One write per line: the JVM writes to the same log at the same time.
sys.stdout.write(f"APP_FILE {os.path.abspath(__file__)}\nCWD {os.getcwd()}\n")
sys.stdout.write(f"RESULT {helper.score('x y') + total}\n")
sys.stdout.flush()
spark.stop()
'''


def test_remote_submission_uploads_its_files(tmp_path, spark_cluster):
    laptop = tmp_path / "laptop"
    (laptop / "lib").mkdir(parents=True)
    (laptop / "job.py").write_text(JOB)
    (laptop / "lib" / "helper.py").write_text(
        "def score(text):\n    return len(text.split())\n")
    (laptop / "words.txt").write_text("one two three\n")
    tokens_file = tmp_path / "tokens.json"
    alice = tokens.create(tokens_file, "alice", "user")
    state = tmp_path / "state"
    cert, key = make_cert(tmp_path)
    trust = ssl.create_default_context(cafile=str(cert))
    config = {
        "server": {"state_dir": str(state), "cycle_ms": 100, "retained_ended_apps": 0,
                   "tls": {"cert": str(cert), "key": str(key), "ca": str(cert)}},
        "cluster": {"backend": "standalone", "master": spark_cluster.master_url,
                    "master_ui": spark_cluster.master_ui},
        "auth": {"mode": "tokens", "tokens_file": str(tokens_file), "run_as_root": True},
        "uploads": {"sweep_s": 1, "orphan_grace_s": 5},
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        done = run_cli(
            "submit", "--server", server.url, "--token", alice, "--ca", str(cert), "--upload",
            "--wait",
            *conf_args(SMALL), "--py-files", "lib/helper.py", "--files", "words.txt",
            "job.py",
            cwd=laptop, env=cli_env(PYSPARK_PYTHON=sys.executable), timeout_s=300)
        assert done.returncode == 0, done.stderr[-3000:]
        app_id = done.stdout.split()[0]
        log = (state / "logs" / f"{app_id}.log").read_text()
        uploads = state.resolve() / "uploads"
        assert "RESULT 8" in log  # 2 words here + 3 words x 2 executor tasks
        stored = uploads / hashlib.sha256(JOB.encode()).hexdigest()
        assert f"APP_FILE {stored}/job.py\n" in log and f"CWD {stored}\n" in log
        launch = next(line for line in log.splitlines() if "launching" in line)
        assert str(laptop) not in launch and f"{uploads}/" in launch
        events = httpx.get(f"{server.url}/api/v1/apps/{app_id}/events", verify=trust,
                           headers={"Authorization": f"Bearer {alice}"}, timeout=30).json()
        assert any(e["detail"].startswith("agent registered") for e in events), events
        # Forgotten at once (retained_ended_apps: 0); its files at the next sweep after the
        # grace of their last use.
        wait_until(lambda: not any(p.name != ".incoming" for p in uploads.iterdir()), 60,
                   "the forgotten app's uploaded files to be removed")
    finally:
        if server.proc.poll() is None:  # a driver outlives its server: kill what still runs
            for app in httpx.get(f"{server.url}/api/v1/apps", timeout=10, verify=trust,
                                 headers={"Authorization": f"Bearer {alice}"}).json():
                if app["state"] in ("ACCEPTED", "STARTING", "RUNNING"):
                    httpx.post(f"{server.url}/api/v1/apps/{app['id']}/kill", timeout=30,
                               verify=trust,
                               headers={"Authorization": f"Bearer {alice}"})
        server.stop()

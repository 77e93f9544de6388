"""Serving a team from the command line: ``sessionsched token``, a real ``sessionsched serve``
over HTTPS (a certificate made here with openssl) with tokens on, and real clients: the token
from ``--token``, ``$SESSIONSCHED_TOKEN`` or the user's 0600 client file, refusals as one line,
``sessionsched audit``."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from sessionsched.backends.ports import free_port
from sessionsched.commands._serverproc import ServerProcess
from tests.support.cli_helpers import QUEUES
from tests.tlscert import make_cert


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSCHED_")}
    return subprocess.run([sys.executable, "-m", "sessionsched.cli", *args], capture_output=True,
                          text=True, timeout=60, env={**base, **(env or {})})


@pytest.fixture
def https_team(tmp_path):
    tokens_file = tmp_path / "tokens.json"
    made = {}
    for user, role in (("alice", "user"), ("root", "admin")):
        r = cli("token", "create", "--file", str(tokens_file), "--user", user, "--role", role)
        assert r.returncode == 0, r.stderr
        made[user] = r.stdout.strip()
        assert r.stdout == made[user] + "\n" and r.stderr == ""  # the token, nothing else
    cert, key = make_cert(tmp_path)
    closed = free_port()
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 50,
                   "tls": {"cert": str(cert), "key": str(key)}},
        "cluster": {"backend": "standalone", "master": f"spark://127.0.0.1:{closed}",
                    "master_ui": f"http://127.0.0.1:{closed}"},
        "auth": {"mode": "tokens", "tokens_file": str(tokens_file), "run_as_root": True},
        "defaults": {"queue": "root.etl"},
        "queues": QUEUES,
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        yield server, made, tokens_file, cert
    finally:
        server.stop()


def test_team_over_https_with_tokens(https_team, tmp_path, app_dir):
    server, made, tokens_file, cert = https_team
    assert server.url.startswith("https://127.0.0.1:")  # ServerProcess picked the port
    at = ["--server", server.url, "--ca", str(cert)]

    listed = cli("token", "list", "--file", str(tokens_file))
    assert [line.split()[1:3] for line in listed.stdout.splitlines()[1:]] == [
        ["alice", "user"], ["root", "admin"]]
    assert made["alice"] not in listed.stdout

    r = cli("apps", *at)
    assert (r.returncode, r.stderr.strip()) == (2, (
        "sessionsched apps: a token is required: send 'Authorization: Bearer TOKEN' "
        "(sessionsched --token, $SESSIONSCHED_TOKEN)"))
    r = cli("apps", "--server", server.url, "--token", made["alice"])  # no CA: not trusted
    assert r.returncode == 2 and "certificate verify failed" in r.stderr

    # The user's client file: refused while others may read it.
    conf = tmp_path / "client.yaml"
    conf.write_text(f"token: {made['alice']}\nca: {cert}\n")
    conf.chmod(0o644)
    env = {"SESSIONSCHED_CLIENT_CONFIG": str(conf)}
    r = cli("apps", "--server", server.url, env=env)
    assert (r.returncode, r.stderr.strip()) == (2, (
        f"sessionsched apps: {conf} is readable by others (mode 644) and holds a token; "
        f"run: chmod 600 {conf}"))
    conf.chmod(0o600)
    r = cli("submit", "--server", server.url, str(app_dir / "job.py"), env=env)
    assert r.returncode == 0, r.stderr
    app_id = re.search(r"driver-\d{14}-\d{4}", r.stdout + r.stderr).group(0)

    # $SESSIONSCHED_TOKEN wins over the file; --token over both.
    r = cli("priority", app_id, "9000", *at, env={**env, "SESSIONSCHED_TOKEN": made["root"]})
    assert r.returncode == 0, r.stderr
    r = cli("priority", app_id, "100", *at, "--token", made["alice"],
            env={**env, "SESSIONSCHED_TOKEN": "ss_wrong"})
    assert r.returncode == 0, r.stderr
    r = cli("priority", app_id, "9000", "--server", server.url, env=env)
    assert (r.returncode, r.stderr.strip()) == (
        2, "sessionsched priority: user alice may set priority 1-5000, not 9000")

    r = cli("audit", *at, "--app", app_id, "--token", made["root"])
    assert r.returncode == 0, r.stderr
    lines = [re.sub(r"^\S+", "T", re.sub(r"127\.0\.0\.1:\d+", "HOST", line))
             for line in r.stdout.splitlines()]
    assert lines == [
        f"T  {app_id}  submitted  alice         submit submission by alice from HOST to "
        "root.etl, priority 5000",
        f"T  {app_id}  priority   root          Admin root updated the priority from 5000 to "
        "9000 (from HOST)",
        f"T  {app_id}  priority   alice         User alice updated the priority from 9000 to "
        "100 (from HOST)",
    ]
    r = cli("audit", *at, "--token", made["alice"])
    assert (r.returncode, r.stderr.strip()) == (
        2, "sessionsched audit: user alice may not read the audit trail (admins only)")

    # Revoked: refused at once, no restart.
    r = cli("token", "revoke", "--file", str(tokens_file), "--user", "alice")
    assert r.stdout.strip() == "revoked 1 token"
    r = cli("apps", "--server", server.url, env=env)
    assert (r.returncode, r.stderr.strip()) == (
        2, "sessionsched apps: unknown or revoked token")

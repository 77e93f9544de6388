"""The driver agent and a private-CA HTTPS server (``server.tls.ca``): the server hands the CA
file to the drivers it launches (``SESSIONSCHED_CA``), and the agent's transport verifies the
server with it -- against a real ``sessionsched serve`` on HTTPS with a certificate made here;
without it the certificate is not trusted. (The full path, a real driver's agent registering
over HTTPS, is in tests/real_spark/test_submit_upload_cluster.py.)"""

from __future__ import annotations

from dataclasses import replace

import pytest

from sessionsched.agent.transport import JsonClient, Refused, Unreachable
from sessionsched.backends.ports import free_port
from sessionsched.commands._serverproc import ServerProcess
from sessionsched.config import ServerConfig
from sessionsched.intake.new_apps import Defaults, from_argv
from sessionsched.service.launch import build_launch
from tests.tlscert import make_cert


def test_agent_transport_verifies_the_server_with_the_ca(tmp_path):
    cert, key = make_cert(tmp_path)
    closed = free_port()
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 50,
                   "tls": {"cert": str(cert), "key": str(key), "ca": str(cert)}},
        "cluster": {"backend": "standalone", "master": f"spark://127.0.0.1:{closed}",
                    "master_ui": f"http://127.0.0.1:{closed}"},
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        assert server.url.startswith("https://127.0.0.1:")
        body = {"app_id": "driver-00000000000000-0000", "spark_app_id": "app-1",
                "spark_version": "4.0.1"}
        with pytest.raises(Unreachable, match="CERTIFICATE_VERIFY_FAILED"):
            JsonClient(server.url).post("/api/v1/agent/register", body)
        # Trusted: the server's own answer comes back (no such app).
        with pytest.raises(Refused) as refused:
            JsonClient(server.url, ca=str(cert)).post("/api/v1/agent/register", body)
        assert refused.value.status == 404
    finally:
        server.stop()


def test_launched_drivers_get_the_ca_in_their_environment(tmp_path):
    app_file = tmp_path / "job.py"
    app_file.write_text("print('hi')\n")
    cfg = ServerConfig()
    app = from_argv([str(app_file)], str(tmp_path), {}, {}, None, None, None,
                    Defaults(root=cfg.queue_tree(), queue="root.default"))
    app = replace(app, spec=replace(app.spec, app_id="driver-1"))
    launch = build_launch(app, "https://127.0.0.1:1", tmp_path, ca="/etc/team-ca.pem")
    assert launch.env["SESSIONSCHED_CA"] == "/etc/team-ca.pem"
    assert "/etc/team-ca.pem" not in launch.argv
    assert "SESSIONSCHED_CA" not in build_launch(app, "http://127.0.0.1:1", tmp_path).env

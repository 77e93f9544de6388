"""A scheduler told to stop while agents hold watches answers them and exits at once, not after
their keep-alive (``AgentDesk.close``, ``server/http_server.py``): on the service stepped by
hand, and on a real ``sessionsched serve`` process stopped by SIGTERM. And a real server whose
port was taken before it bound it is started again on another (``ServerProcess.start``)."""

from __future__ import annotations

import signal
import socket
import threading
import time

import httpx
import pytest

from sessionsched.commands._serverproc import ServerProcess, ServerStartError
from tests.sparkcluster import free_port, wait_until
from tests.support.http_client import HTTP


def test_a_closed_desk_answers_every_watch_at_once(stepped):
    with stepped() as s:
        c = s.client
        a = c.post("/api/v1/sessions", json={"name": "nb"}).json()["id"]
        s.until(a, "STARTING")
        held = c.post("/api/v1/agent/register",
                      json={"app_id": a, "control": "full"}).json()["version"]
        s.service.desk.close()
        started = time.monotonic()
        told = c.post("/api/v1/agent/watch", json={"app_id": a, "version": held, "wait_s": 60})
        assert told.status_code == 200 and told.json()["version"] == held
        assert time.monotonic() - started < 30  # not held for its 60 s


def test_serve_stopped_with_a_held_watch_answers_it_and_exits(tmp_path):
    config = {"server": {"state_dir": str(tmp_path / "state"), "port": free_port(),
                         "cycle_ms": 100, "agent_keepalive_s": 120},
              "cluster": {"backend": "memory", "workers": 1, "cores": 4}}
    server = ServerProcess.start(config, tmp_path / "server")
    answers: list[float] = []  # when each watch was answered
    try:
        a = HTTP.post(f"{server.url}/api/v1/sessions", json={"name": "nb"}, timeout=10
                       ).json()["id"]
        wait_until(lambda: HTTP.get(f"{server.url}/api/v1/apps/{a}", timeout=10
                                     ).json()["state"] == "STARTING", 60, "the session admitted")
        version = HTTP.post(f"{server.url}/api/v1/agent/register", timeout=10,
                             json={"app_id": a, "control": "full"}).json()["version"]

        def agent() -> None:  # watches, one after the other, until the server is gone; the
            # first, on an old version, is answered at once, the next ones are held
            v = version - 1
            try:
                while True:
                    r = HTTP.post(f"{server.url}/api/v1/agent/watch", timeout=300,
                                   json={"app_id": a, "version": v})
                    answers.append(time.monotonic())
                    v = r.json()["version"]
            except httpx.TransportError:
                return

        watching = threading.Thread(target=agent, daemon=True)
        watching.start()
        wait_until(lambda: answers, 60, "the agent's first watch answered")
    finally:
        code = server.stop(timeout_s=60)  # SIGTERM; SIGKILL after 60 s (the watch holds 120)
    # ended by its SIGTERM (uvicorn raises it again once stopped), not killed 60 s on: the
    # watch held at the stop did not hold the stop
    assert code == -signal.SIGTERM
    watching.join(30)
    assert not watching.is_alive()


def test_a_server_whose_port_is_taken_before_it_binds_starts_again_on_another(tmp_path):
    """A port found free may be taken by another process's outgoing connection before the
    server binds it; ``ServerProcess.start`` starts it again on the next port it picks. A
    port given in the config is the caller's: its server is not moved."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        other = free_port()
        picks = iter([taken, other])
        config = {"server": {"state_dir": str(tmp_path / "state")},
                  "cluster": {"backend": "memory", "workers": 1, "cores": 2}}
        server = ServerProcess.start(config, tmp_path / "server", pick_port=lambda: next(picks))
        try:
            assert server.url == f"http://127.0.0.1:{other}"
            assert b"address already in use" in (tmp_path / "server" / "server.log").read_bytes()
        finally:
            server.stop()
        given = {**config, "server": {**config["server"], "port": taken}}
        with pytest.raises(ServerStartError, match="exited with code"):
            ServerProcess.start(given, tmp_path / "given")

"""A Livy session idle on the scheduler's host, released for an app that waits for the host's
room (its queue's ``release_idle_sessions_after``), served whole on the memory cluster: the
session's next call says why (engine/host_room.py, doors/livy/interactive.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from sessionsched.backends.memory import MemoryCluster
from sessionsched.doors.livy.interactive import LivySession, LivySessions
from sessionsched.engine.events import DriverStarted
from sessionsched.model import Resources
from tests.support.stepped_service import START_S, Clock, stepped_service

QUEUES = [{"name": "root", "queues": [{"name": "default", "release_idle_sessions_after": 60}]}]
ON_HOST = 1024 + 384  # spark.driver.memory 1g and Spark's 384 MiB of overhead


def _no_repl(self, stored, req, conf):
    """The session without its REPL process: the test plays its driver's part."""
    log_path = Path(self.ops.workdir) / "logs" / f"{stored.id}.livy.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text("REPL up\n")
    proc = SimpleNamespace(poll=lambda: None)
    return LivySession(stored.seq, stored.id, req.kind, stored.name, None, 0, proc, log_path)


def test_a_released_livy_session_says_why_on_its_next_call(state_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(LivySessions, "_start_repl", _no_repl)
    monkeypatch.setattr(LivySessions, "_ensure_sweeper", lambda self: None)
    cluster = MemoryCluster(Resources(16, 16 * 4096), driver_slots=None,
                            driver_start_s=START_S, executor_start_s=START_S, work_s=600)
    with stepped_service(state_dir, cluster, tmp_path, Clock(), QUEUES) as s:
        s.service.engine.host_room = Resources(8, ON_HOST)  # a host sized for one driver
        r = s.client.post("/sessions", json={"kind": "pyspark"})
        assert r.status_code == 201, r.text
        sid, app_id = r.json()["id"], r.json()["submissionId"]
        s.cycle(0.5)
        assert s.app(app_id)["state"] == "STARTING"
        s.service.inbox.put(DriverStarted(app_id))  # its REPL's driver is up, and idles
        s.cycle(0.5)
        batch = s.submit("batch")
        s.cycle(0.5)
        assert s.app(batch)["reason_code"] == "host_room"
        s.cycle(30)
        assert s.app(app_id)["state"] == "RUNNING"  # idle for 31 s of the queue's 60: kept
        s.cycle(30)
        ended = s.app(app_id)
        assert ended["state"] == "KILLED"
        assert ended["reason"].startswith("released idle so that waiting apps could start")
        assert "release_idle_sessions_after of 60s" in ended["reason"]
        assert f"while {batch} waited" in ended["reason"]
        assert s.app(batch)["state"] == "STARTING"
        session = s.client.get(f"/sessions/{sid}").json()
        assert session["state"] == "killed"
        assert session["appInfo"]["schedulerReason"] == ended["reason"]
        assert session["log"][-1] == f"sessionsched: {ended['reason']}"
        r = s.client.post(f"/sessions/{sid}/statements", json={"code": "1 + 1"})
        assert r.status_code == 400
        assert r.json()["msg"] == f"session {sid} has ended (killed): {ended['reason']}"

"""A driver counts where it runs, served whole on the memory cluster: notebook sessions take no
room of the scheduler's host, drivers on the host are held to its memory, and apps that need no
host room go past those that wait for it (engine/host_room.py)."""

from __future__ import annotations

from sessionsched.backends.memory import MemoryCluster
from sessionsched.model import Resources
from tests.support.stepped_service import START_S, Clock, stepped_service

QUEUES = [{"name": "root", "queues": [{"name": "default"}]}]
ON_HOST = 1024 + 384  # spark.driver.memory 1g and Spark's 384 MiB of overhead


def _cluster(cores: int) -> MemoryCluster:
    """The memory cluster as the default config makes it: no driver_slots cap."""
    return MemoryCluster(Resources(cores, cores * 4096), driver_slots=None,
                         driver_start_s=START_S, executor_start_s=START_S, work_s=600)


def _session(s, name: str) -> str:
    r = s.client.post("/api/v1/sessions", json={"name": name, "queue": "default"})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_eight_notebooks_and_a_batch_app_start_on_an_idle_cluster(state_dir, tmp_path):
    with stepped_service(state_dir, _cluster(16), tmp_path, Clock(), QUEUES) as s:
        assert s.service.engine.driver_slots is None  # the default config caps nothing
        ids = [_session(s, f"nb-{i}") for i in range(8)] + [s.submit("batch")]
        for _ in range(3):
            s.cycle(0.5)
        assert [s.app(i)["state"] for i in ids[:-1]] == ["STARTING"] * 8
        assert s.app(ids[-1])["state"] in ("STARTING", "RUNNING")
        health = s.client.get("/api/v1/health").json()["driver_host"]
        assert health["drivers"] == 1 and health["used_mib"] == ON_HOST
        assert health["memory_mib"] > 0


def test_drivers_on_a_full_host_wait_and_apps_needing_no_host_room_go_ahead(state_dir,
                                                                            tmp_path):
    with stepped_service(state_dir, _cluster(64), tmp_path, Clock(), QUEUES) as s:
        s.service.engine.host_room = Resources(8, 8 * ON_HOST)  # a host sized for 8 drivers
        connect = [s.submit(f"connect-{i}") for i in range(20)]
        notebooks = [_session(s, f"nb-{i}") for i in range(2)]
        for _ in range(3):
            s.cycle(0.5)
        states = [s.app(i)["state"] for i in connect]
        assert states.count("ACCEPTED") == 12
        ninth = s.app(connect[8])
        assert ninth["reason_code"] == "host_room"
        assert "the host's memory holds 11264 MiB of drivers" in ninth["reason"]
        assert [s.app(i)["state"] for i in notebooks] == ["STARTING", "STARTING"]
        text = s.client.get("/metrics").text
        assert 'sessionsched_host_driver_memory_mib{kind="room"} 11264.0' in text
        assert 'sessionsched_host_driver_memory_mib{kind="used"} 11264.0' in text


def test_where_each_driver_runs_survives_a_restart(state_dir, tmp_path):
    """Queued before a restart, read back from the store after it: the notebooks still take
    no host room, the driver on the host still takes its share."""
    cluster = _cluster(16)
    with stepped_service(state_dir, cluster, tmp_path, Clock(), QUEUES) as s:
        notebooks = [_session(s, f"nb-{i}") for i in range(3)]
        batch = [s.submit("batch-0", priority=9000), s.submit("batch-1", priority=9000)]
    with stepped_service(state_dir, cluster, tmp_path, Clock(), QUEUES) as s:
        engine = s.service.engine
        engine.host_room = Resources(8, ON_HOST)  # a host sized for one driver
        for _ in range(3):
            s.cycle(0.5)
        assert [engine.apps[i].spec.driver_with_user for i in notebooks + batch] == [
            True, True, True, False, False]
        assert [s.app(i)["state"] for i in notebooks] == ["STARTING"] * 3
        assert s.app(batch[0])["state"] in ("STARTING", "RUNNING")
        assert s.app(batch[1])["reason_code"] == "host_room"
        assert s.client.get("/api/v1/health").json()["driver_host"]["drivers"] == 1

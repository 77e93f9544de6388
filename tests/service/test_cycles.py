"""The service stepped by hand on the memory cluster: admission, a priority jump, kills, a
failed launch, a restart that adopts running drivers - in-process, on a clock of the test's
own, one cycle at a time (``run_cycles=False``). Deterministic and fast: no Spark, no sleep.
"""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from sessionsched.backends.memory import EXIT_CODE, WORK, MemoryCluster
from sessionsched.model import Resources
from sessionsched.service.cycle import PHASES
from sessionsched.store import StoreUnavailable
from tests.support.server_helpers import rows
from tests.support.stepped_service import START_S, Clock, stepped_service


def test_stateaware_starts_one_app_at_a_time_and_runs_the_burst_to_its_end(stepped):
    with stepped(admission="stateaware") as s:
        ids = [s.submit(f"burst-{i}") for i in range(3)]
        s.cycle()
        states = [s.app(i)["state"] for i in ids]
        assert states == ["STARTING", "ACCEPTED", "ACCEPTED"]
        second = s.app(ids[1])
        assert second["position"] == 1
        assert second["reason"] == "1 app(s) of root.default are starting: its starting_limit is 1"
        assert second["reason_code"] == "starting_limit"
        s.until(ids[0], "RUNNING")  # its first executor: the next one may start
        s.cycle()
        assert s.app(ids[1])["state"] == "STARTING"
        done = [s.until(app_id, "FINISHED") for app_id in ids]
        assert [(d["exit_code"], d["executors"]) for d in done] == [(0, 0)] * 3
        first, second = done[0], done[1]
        assert second["started_at"] >= first["first_executor_at"] > first["started_at"]
        assert ("state", "STARTING -> RUNNING: first executor registered") in [
            (e["kind"], e["detail"]) for e in s.events(ids[0])]
        kinds = [e["kind"] for e in s.events(ids[2])]
        assert kinds[0] == "submitted" and "launch" in kinds and kinds.count("state") == 3


def test_one_driver_slot_runs_one_app_at_a_time_and_a_raised_priority_starts_second(
        state_dir, tmp_path):
    """Conductor's demo, case 1: one driver slot, three apps submitted, the third's priority
    raised (through the API) while the first runs: launch order 1, 3, 2, one at a time."""
    one_slot = MemoryCluster(Resources(4, 8192), driver_slots=1, driver_start_s=START_S,
                             executor_start_s=START_S, work_s=4)
    queues = [{"name": "root", "queues": [{"name": "default", "admission": "stateaware",
                                           "starting_limit": 1}]}]
    with stepped_service(state_dir, one_slot, tmp_path, Clock(), queues) as s:
        ids = [s.submit(f"case1-{n}") for n in (1, 2, 3)]
        s.until(ids[0], "STARTING")
        assert [s.app(i)["state"] for i in ids[1:]] == ["ACCEPTED", "ACCEPTED"]
        with ThreadPoolExecutor(1) as caller:  # the answer waits for a cycle: step them
            r = s.done(caller.submit(s.client.post, f"/api/v1/apps/{ids[2]}/priority",
                                     json={"priority": 9000}))
        assert (r.status_code, r.json()["position"]) == (200, 1)
        first, second, third = (s.until(i, "FINISHED", cycles=200) for i in ids)
        assert [a["exit_code"] for a in (first, second, third)] == [0, 0, 0]
        assert first["started_at"] < third["started_at"] < second["started_at"]
        assert third["started_at"] >= first["finished_at"]
        assert second["started_at"] >= third["finished_at"]


def test_a_raised_priority_jumps_the_queue_and_starts_next(stepped):
    with stepped(admission="stateaware") as s:
        first, b, c = (s.submit(n) for n in ("first", "b", "c"))
        s.cycle()
        assert [s.app(i)["position"] for i in (b, c)] == [1, 2]
        s.done(s.service.set_priority(c, 9000))
        assert [s.app(i)["position"] for i in (c, b)] == [1, 2]
        assert s.app(c)["priority"] == 9000
        s.until(first, "RUNNING")
        s.cycle()
        assert (s.app(c)["state"], s.app(b)["state"]) == ("STARTING", "ACCEPTED")


def test_kills_end_a_queued_and_a_running_app_and_stop_its_driver(stepped):
    with stepped(admission="none", max_running_apps=1) as s:
        running = s.submit("running", **{WORK: "60"})
        queued = s.submit("queued")
        s.until(running, "RUNNING")
        s.done(s.service.kill(queued, actor="alice"))
        s.done(s.service.kill(running))
        assert [s.app(i)["state"] for i in (queued, running)] == ["KILLED", "KILLED"]
        s.cycle(START_S)  # the driver's end reaches the books; the app stays KILLED
        assert s.app(running)["state"] == "KILLED"
        assert s.cluster.apps[running].phase.value == "DONE"
        details = [e["detail"] for e in s.client.get(f"/api/v1/apps/{queued}/events").json()]
        assert "kill requested by alice" in details


@pytest.mark.parametrize("conf, reason", [
    ({EXIT_CODE: "3"}, "driver exited with code 3"),
    ({WORK: "soon"}, "launch failed: "),
], ids=["the driver exits 3: FAILED with its code", "the cluster refuses the launch"])
def test_a_failing_app_ends_failed_with_the_reason(stepped, conf, reason):
    with stepped(admission="none") as s:
        app_id = s.submit("failing", **conf)
        app = s.until(app_id, "FAILED")
        assert reason in app["reason"]


def test_a_restart_adopts_running_drivers_and_keeps_the_queue(stepped, cluster):
    with stepped(admission="none", max_running_apps=1) as s:
        running = s.submit("running", **{WORK: "4"})
        queued = s.submit("queued")
        s.until(running, "RUNNING")
        driver = cluster.apps[running].driver_id
    with stepped(admission="none", max_running_apps=1) as s:
        s.cycle()
        app = s.app(running)
        assert app["state"] == "RUNNING" and cluster.apps[running].driver_id == driver
        assert app["reason"] == "first executor registered"  # as stored, not ""
        assert (s.app(queued)["state"], s.app(queued)["position"]) == ("ACCEPTED", 1)
        assert s.until(running, "FINISHED")["exit_code"] == 0  # never launched twice
        s.until(queued, "FINISHED")
        events = [e["kind"] for e in s.client.get(f"/api/v1/apps/{running}/events").json()]
        assert events.count("launch") == 1 and "adopted" in events


def test_health_is_degraded_while_the_cluster_offers_no_cores(stepped, cluster):
    """Reachable is not enough: a cluster whose every core is held by someone else's app (or
    that has no alive worker) runs nothing, and health says so until cores come back."""
    with stepped() as s:
        s.cycle()
        assert s.client.get("/api/v1/health").json()["status"] == "ok"
        cluster.start_external("app-foreign", executors=4)
        s.cycle(3.0)  # capacity is re-read every 2 s
        health = s.client.get("/api/v1/health").json()
        assert (health["status"], health["cluster_reachable"]) == ("degraded", True)
        assert "offers no cores" in health["cluster"]
        cluster.end_external("app-foreign")
        s.cycle(3.0)
        health = s.client.get("/api/v1/health").json()
        assert (health["status"], health["cluster"]) == ("ok", "cluster reachable")


# --- the cycle's own costs (docs/design/bounded-cycles.md: the server's cycle) -----------------


def test_each_phase_of_a_cycle_is_timed_and_exported(stepped):
    """A cycle that launches says where its time went: every phase, wall and CPU, in
    ``last_phases`` and in the ``sessionsched_cycle_phase_seconds`` histogram."""
    with stepped(admission="none") as s:
        s.submit("timed")
        s.cycle()
        phases = s.service._cycle.last_phases
        assert set(phases) == set(PHASES)
        assert all(wall >= 0 and cpu >= 0 for wall, cpu in phases.values())
        text = s.client.get("/metrics").text
        for phase in PHASES:
            assert f'sessionsched_cycle_phase_seconds_count{{phase="{phase}"}} 1.0' in text


def test_the_audit_trail_names_each_change_from_the_state_before(stepped):
    """What a cycle records reads each app's state before the step from the engine's view:
    each state row names the state the app left, and the Spark app id is recorded once."""
    with stepped(admission="none", max_running_apps=1) as s:
        first, second = s.submit("first"), s.submit("second")
        s.until(first, "FINISHED")
        s.until(second, "FINISHED")
        for app_id in (first, second):
            events = s.client.get(f"/api/v1/apps/{app_id}/events").json()
            moves = [e["detail"].split(":")[0] for e in events if e["kind"] == "state"]
            assert [m for m in moves if m != "ACCEPTED -> ACCEPTED"] == [  # a new reason
                "ACCEPTED -> STARTING", "STARTING -> RUNNING", "RUNNING -> FINISHED"]
            spark_id = s.app(app_id)["spark_app_id"]
            assert [e["detail"] for e in events if e["kind"] == "driver"] == [
                f"Spark application id {spark_id}"]


def test_launch_handles_are_not_waited_for_and_a_failed_write_is_made_again(stepped, db):
    """The cycle sends its launch handles to the store without waiting (the next cycle's
    commit comes after them); a write of handles that failed is sent again with the next
    cycle's, so a restart can still adopt those drivers."""
    with stepped(admission="none") as s:
        cycle = s.service._cycle
        write = cycle.p.write
        failed: list[list[str]] = []

        def flaky(changes, rows, decayed=()):  # the store refuses the first write of handles
            if not failed and any("handle" in c for c in changes):
                failed.append([c["id"] for c in changes])
                future = Future()
                future.set_exception(StoreUnavailable("disk full"))
                return future
            return write(changes, rows, decayed)

        cycle.p.write = flaky
        first = s.submit("first")
        s.cycle()
        assert failed == [[first]]
        (handle,), = rows(db, f"select handle from apps where id = '{first}'")
        assert json.loads(handle) is None
        second = s.submit("second")
        s.cycle()  # the failed handles again, with this cycle's launch
        s.cycle()  # ... and this cycle's commit came after them
        for app_id in (first, second):
            (handle,), = rows(db, f"select handle from apps where id = '{app_id}'")
            assert json.loads(handle)["ref"] == s.cluster.apps[app_id].driver_id
            kinds = [e["kind"] for e in s.client.get(f"/api/v1/apps/{app_id}/events").json()]
            assert kinds.count("launch") == 1
            assert s.service.registry.log_path(app_id)  # shown once committed

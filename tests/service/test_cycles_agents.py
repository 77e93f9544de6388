"""The change-driven agent protocol on the service stepped by hand (docs/design/agent-protocol.md):
a report is taken once, the next cycle decides, and the agent's watch is told -- no heartbeat
needed in between; cycles that change nothing for the app do not wake its watch. The test
plays a notebook session's agent on the memory cluster, one cycle at a time."""

from __future__ import annotations


def test_a_reported_change_is_decided_in_the_next_cycle_and_told_by_the_watch(stepped):
    with stepped() as s:
        c = s.client

        def watch(version: int) -> dict:  # wait_s 0: the cycles are this test's to run
            r = c.post("/api/v1/agent/watch", json={"app_id": a, "version": version,
                                                     "wait_s": 0})
            assert r.status_code == 200, r.text
            return r.json()

        a = c.post("/api/v1/sessions", json={"name": "nb"}).json()["id"]
        s.until(a, "STARTING")
        held = c.post("/api/v1/agent/register",
                      json={"app_id": a, "control": "full"}).json()["version"]
        report = c.post("/api/v1/agent/heartbeat",
                        json={"app_id": a, "demand": 2, "control": "full"}).json()
        assert (report["version"], report["grant"]) == (held, 0)
        assert watch(held)["version"] == held  # nothing decided before the cycle

        s.cycle(0.2)
        told = watch(held)
        assert (told["target"], told["grant"]) == (2, 2) and told["version"] > held

        # The executors come (one report); then a minute of cycles with nothing new.
        executors = [{"id": str(i), "idle": False, "started_at": s.clock.now} for i in range(2)]
        c.post("/api/v1/agent/heartbeat",
               json={"app_id": a, "demand": 2, "executors": executors, "control": "full"})
        s.until(a, "RUNNING")
        held = watch(0)["version"]
        for _ in range(60):
            s.cycle(1.0)
            if s.clock.now % 10 < 1:  # the agent's watch comes back each keep-alive
                assert watch(held)["version"] == held
        app = s.app(a)
        assert (app["state"], app["demand"], app["executors"], app["target"]) == (
            "RUNNING", 2, 2, 2)

        # A kill wakes it.
        s.done(s.service.kill(a))
        assert watch(held)["state"] == "KILLED"


def test_executors_reported_while_queued_are_taken_once_the_app_is_launched(stepped):
    """The engine refuses executors for an app it has not launched; the agent desk kept them as
    seen all the same, so the same report after the launch raised nothing and the app's
    executors were never counted."""
    with stepped(max_running_apps=1) as s:
        c = s.client
        first = c.post("/api/v1/sessions", json={"name": "first"}).json()["id"]
        s.until(first, "STARTING")
        second = c.post("/api/v1/sessions", json={"name": "second"}).json()["id"]
        s.cycle(0.2)
        assert s.app(second)["state"] == "ACCEPTED"  # behind max_running_apps
        executors = [{"id": "1", "idle": False, "started_at": s.clock.now}]
        report = {"app_id": second, "demand": 1, "executors": executors, "control": "full"}
        assert c.post("/api/v1/agent/heartbeat", json=report).status_code == 200
        s.cycle(0.2)
        assert s.app(second)["executors"] == 0

        s.done(s.service.kill(first))
        s.until(second, "STARTING")
        assert c.post("/api/v1/agent/heartbeat", json=report).status_code == 200
        s.until(second, "RUNNING")
        assert s.app(second)["executors"] == 1

"""The agent protocol's server side (docs/design/agent-protocol.md), with the test playing the
driver agent of two notebook sessions. The scheduler runs in-process on the memory cluster (its
capacity: 4 cores); the sessions' executors are the ones the test reports.

Each test runs twice: through the FastAPI application's routes (``App.fastapi``: FastAPI's own
stack, which has them for the OpenAPI spec), and whole as ``sessionsched serve`` runs it, where
the front (``server/front.py``) sends the agents to ``agent_api.AgentDoor``."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from sessionsched.server.app import asgi, create_app
from sessionsched.service.agents import WATCH_JITTER
from tests.support.server_helpers import make_config, wait_until

EXECUTORS = [{"id": str(i), "idle": False, "started_at": 1763744400.0 + i} for i in range(4)]


@pytest.fixture(params=["fastapi", "front"])
def serve(request):
    """The app as a TestClient: its FastAPI routes alone, or whole (the agent door)."""
    return lambda app: TestClient(asgi(app) if request.param == "front" else app.fastapi)


@pytest.fixture
def client(serve, offline_app):
    with serve(offline_app()) as c:
        yield c


def test_unknown_app_is_404_for_the_agent(client):
    for path, body in (("/api/v1/agent/register", {"app_id": "driver-x", "control": "full"}),
                       ("/api/v1/agent/heartbeat", {"app_id": "driver-x", "demand": 1}),
                       ("/api/v1/agent/watch", {"app_id": "driver-x", "version": 3})):
        r = client.post(path, json=body)
        assert (r.status_code, r.json()) == (
            404, {"detail": "no app 'driver-x': the agent should stop reporting"})


@pytest.mark.parametrize(("body", "detail"), [
    pytest.param({"app_id": "driver-x", "demand": -1},
                 "demand: Input should be greater than or equal to 0", id="negative-demand"),
    pytest.param({"demand": 1}, "app_id: missing", id="no-app-id"),
    pytest.param({"app_id": "driver-x", "executors": [{"idle": True}]},
                 "executors.0.id: missing", id="executor-without-id"),
    pytest.param({"app_id": "driver-x", "demand": "many"},
                 "demand: Input should be a valid integer, unable to parse string as an integer",
                 id="demand-not-a-number"),
    pytest.param({"app_id": "driver-x", "stages": {"done": [{"tasks": 8, "task_s": -1}]}},
                 "stages.done.0.task_s: Input should be greater than or equal to 0",
                 id="negative-task-length"),
    # were a 500 (int() of the amount) or taken as an amount
    pytest.param(b'{"app_id": "driver-x", "profiles": [{"id": 0, "resources": {"gpu": NaN}}]}',
                 "profiles.0.resources.gpu: Input should be a finite number", id="nan-resource"),
    pytest.param(b'{"app_id": "driver-x", "profiles": [{"id": 0, "resources": {"gpu": 1e400}}]}',
                 "profiles.0.resources.gpu: Input should be a finite number",
                 id="infinite-resource"),
    pytest.param({"app_id": "driver-x", "profiles": [{"id": 0, "task_resources": {"gpu": -1}}]},
                 "profiles.0.task_resources.gpu: Input should be greater than or equal to 0",
                 id="negative-task-resource"),
    # were taken: the times and lengths went into the usage figures and the estimates
    pytest.param(b'{"app_id": "driver-x", "observed_at": NaN}',
                 "observed_at: Input should be a finite number", id="nan-look"),
    pytest.param(b'{"app_id": "driver-x", "removed": [{"id": "1", "at": Infinity}]}',
                 "removed.0.at: Input should be a finite number", id="infinite-removal"),
    pytest.param(b'{"app_id": "driver-x", "executors": [{"id": "1", "started_at": NaN}]}',
                 "executors.0.started_at: Input should be a finite number",
                 id="nan-executor-start"),
    pytest.param(b'{"app_id": "driver-x", "stages": {"done": [{"tasks": 1, "task_s": 1e400}]}}',
                 "stages.done.0.task_s: Input should be a finite number",
                 id="infinite-task-length"),
    pytest.param(b'{"app_id": "driver-x", "profiles": [{"id": 1, "task_cpus": Infinity}]}',
                 "profiles.0.task_cpus: Input should be a finite number",
                 id="infinite-task-cpus"),
    # were taken, shown as the app's demand (no Spark counts past a Java int)
    pytest.param({"app_id": "driver-x", "demand": 10**23},
                 "demand: Input should be less than or equal to 2147483647", id="huge-demand"),
    pytest.param({"app_id": "driver-x", "profiles": [{"id": 1, "cores": 10**400}]},
                 "profiles.0.cores: Input should be less than or equal to 2147483647",
                 id="huge-profile"),
    # was answered 200 while the engine dropped the report, and the desk kept it as taken
    pytest.param({"app_id": "driver-x", "executors": [{"id": "1"}, {"id": "1", "idle": True}]},
                 "executors: executor '1' is listed twice", id="executor-twice"),
    pytest.param({"app_id": "driver-x", "profiles": [{"id": 0}, {"id": 0, "demand": 3}]},
                 "profiles: profile 0 is listed twice", id="profile-twice"),
    pytest.param(b"", "request body is missing", id="empty"),
    pytest.param(b'{"app_id": "driver-x",', "request body is not valid JSON: ",
                 id="cut-short"),
])
def test_bad_heartbeat_is_refused_in_one_line(client, body, detail):
    if isinstance(body, bytes):
        r = client.post("/api/v1/agent/heartbeat", content=body,
                        headers={"content-type": "application/json"})
    else:
        r = client.post("/api/v1/agent/heartbeat", json=body)
    assert r.status_code == 422
    assert r.json()["detail"].startswith(detail)
    assert "\n" not in r.json()["detail"]


@pytest.mark.parametrize(("body", "detail"), [
    # was taken, and on PostgreSQL every cycle after failed to commit (its column holds 128)
    pytest.param({"app_id": "driver-x", "spark_app_id": "app-" + "9" * 125},
                 "spark_app_id: String should have at most 128 characters", id="long-spark-id"),
    pytest.param({"app_id": "driver-x", "pid": "one"},
                 "pid: Input should be a valid integer, unable to parse string as an integer",
                 id="pid-not-a-number"),
])
def test_bad_registration_is_refused_in_one_line(client, body, detail):
    r = client.post("/api/v1/agent/register", json=body)
    assert (r.status_code, r.json()["detail"]) == (422, detail)


def test_a_registration_is_audited_in_one_line(client):
    """The reason an agent gives for limited control is free text (a Java exception's, say):
    its newlines were written into the audit trail and the server's log as they came."""
    a = client.post("/api/v1/sessions", json={"name": "limited"}).json()["id"]
    r = client.post("/api/v1/agent/register", json={
        "app_id": a, "control": "admission-only",
        "reason": "py4j.Py4JException: no method\n\tat py4j.Gateway.invoke"})
    assert r.status_code == 200
    (agent,) = wait_until(lambda: [e for e in client.get(f"/api/v1/apps/{a}/events").json()
                                   if e["kind"] == "agent"], what="the registration's row")
    assert agent["detail"] == ("agent registered: control admission-only, pid None, Spark None "
                               "(py4j.Py4JException: no method\\n\\tat py4j.Gateway.invoke)")


def test_other_methods_on_agent_routes_are_fastapis(client):
    r = client.get("/api/v1/agent/heartbeat")
    assert (r.status_code, r.json()) == (405, {"detail": "Method Not Allowed"})


def test_a_report_the_engine_refuses_is_dropped_and_the_rest_go_through(client):
    """Executors reported for a session still queued (its driver cannot exist yet) are refused
    by the engine; that refusal must not hold up a submission taken in the same cycle."""
    a = client.post("/api/v1/sessions", json={"name": "early"}).json()["id"]
    wait_until(lambda: client.get(f"/api/v1/apps/{a}").json()["position"] == 1, what="a queued")
    r = client.post("/api/v1/agent/heartbeat",
                    json={"app_id": a, "demand": 1, "executors": EXECUTORS[:1]})
    assert (r.status_code, r.json()["state"]) == (200, "ACCEPTED")
    b = client.post("/api/v1/sessions", json={"name": "later"}).json()["id"]
    wait_until(lambda: client.get(f"/api/v1/apps/{b}").json()["position"] == 2,
               what="b to join its queue in spite of the refused report")
    assert client.get(f"/api/v1/apps/{a}").json()["executors"] == 0


def test_a_report_of_stages_goes_to_the_estimates_and_its_completed_ones_to_the_store(
        serve, offline_app):
    from sessionsched.model.stages import ActiveStage, DoneStage
    app = offline_app()
    with serve(app) as client:
        a = client.post("/api/v1/sessions", json={"name": "staged"}).json()["id"]
        stages = {"done": [{"tasks": 8, "task_s": 2.5}],
                  "active": [{"tasks": 4, "done": 1, "running": 3, "oldest_running_s": 0.5},
                             {"tasks": 2}],
                  "future": "a newer agent's field"}
        r = client.post("/api/v1/agent/heartbeat", json={"app_id": a, "stages": stages})
        assert r.status_code == 200, r.text
        service = app.state.service
        progress = service.estimator.progress.snapshot([a])[a]
        assert (progress.done, progress.active) == (
            (DoneStage(8, 2.5),), (ActiveStage(4, 1, 3, 0.5), ActiveStage(2, 0, 0, None)))
        assert wait_until(lambda: stages_column(service.store, a),
                          what="its completed stage on its row") == [[8, 2.5]]


def stages_column(store, app_id: str) -> list | None:
    from sqlalchemy import select

    from sessionsched.store.schema import AppRow
    with store.session() as s:
        return s.execute(select(AppRow.stages).where(AppRow.id == app_id)).scalar()


def test_sessions_get_targets_grants_and_reclaim_orders_once(serve, state_dir):
    # The memory cluster's 4 cores: the sessions' drivers are their notebooks', their
    # executors are what this test's agents report.
    cfg = make_config(
        state_dir,
        server={"cycle_ms": 50, "heartbeat_s": 0.5},
        cluster={"backend": "memory", "workers": 1, "cores": 4, "memory": "8g"},
        queues=[{"name": "root", "queues": [
            {"name": "notebooks", "policy": "priority", "reclaim_timeout": 0}]}],
        defaults={"queue": "root.notebooks"},
    )
    with serve(create_app(cfg)) as c:
        def beat(app_id, demand, executors):
            r = c.post("/api/v1/agent/heartbeat",
                       json={"app_id": app_id, "demand": demand, "executors": executors,
                             "pending_tasks": demand, "running_tasks": len(executors),
                             "control": "full"})
            assert r.status_code == 200
            return r.json()

        a = c.post("/api/v1/sessions", json={"name": "nb-a", "priority": 5000}).json()["id"]
        wait_until(lambda: c.get(f"/api/v1/apps/{a}").json()["state"] == "STARTING", 30,
                   "session a to be admitted")
        r = c.post("/api/v1/agent/register", json={
            "app_id": a, "spark_app_id": "app-20261121170001-9001", "spark_version": "4.0.1",
            "pid": 4242, "control": "full", "reason": None})
        assert r.json() == {"heartbeat_s": 0.5, "keepalive_s": 10.0, "version": r.json()["version"],
                            "target": 0, "grant": 0, "reclaim": [], "state": "STARTING"}

        # a asks for 4 executors: the cluster has 4 cores, it gets all of them.
        wait_until(lambda: beat(a, 4, [])["grant"] == 4, 30, "a's grant of 4")
        assert beat(a, 4, EXECUTORS)["state"] in ("STARTING", "RUNNING")
        wait_until(lambda: beat(a, 4, EXECUTORS)["state"] == "RUNNING", 30, "a running")
        app_a = c.get(f"/api/v1/apps/{a}").json()
        assert (app_a["executors"], app_a["target"], app_a["demand"]) == (4, 4, 4)
        assert app_a["spark_app_id"] == "app-20261121170001-9001"

        # b, priority 9000, in the same priority-policy queue: everything goes to b...
        b = c.post("/api/v1/sessions", json={"name": "nb-b", "priority": 9000}).json()["id"]
        wait_until(lambda: c.get(f"/api/v1/apps/{b}").json()["state"] == "STARTING", 30,
                   "session b to be admitted")
        c.post("/api/v1/agent/register", json={"app_id": b, "control": "full"})
        reply_b = wait_until(lambda: (r := beat(b, 4, []))["target"] == 4 and r, 30,
                             "b's target of 4")
        assert reply_b["grant"] == 0  # ...but not before a has given its executors back
        # ...and a is told, once, to give them back now (reclaim_timeout 0: kill).
        order = wait_until(lambda: beat(a, 4, EXECUTORS)["reclaim"], 30, "a's reclaim order")
        assert order == [{"executor_ids": ["3", "2", "1", "0"], "mode": "kill",
                          "deadline": order[0]["deadline"]}]
        again = beat(a, 4, EXECUTORS)
        assert (again["reclaim"], again["target"], again["grant"]) == ([], 0, 0)
        beat(a, 4, [])  # a's executors are gone
        wait_until(lambda: beat(b, 4, [])["grant"] == 4, 30, "b's grant once a let go")

        # A killed session's agent hears it at its next heartbeat; a stopped one finishes.
        assert c.post(f"/api/v1/apps/{a}/kill").json()["state"] == "KILLED"
        assert beat(a, 0, [])["state"] == "KILLED"
        stopped = c.post(f"/api/v1/sessions/{b}/stop", json={"exit_code": 0}).json()
        assert (stopped["state"], stopped["exit_code"]) == ("FINISHED", 0)
        assert beat(b, 0, [])["state"] == "FINISHED"
        kinds = [e["kind"] for e in c.get(f"/api/v1/apps/{a}/events").json()]
        assert kinds[:2] == ["submitted", "state"] and "agent" in kinds and "driver" in kinds


def test_a_watch_waits_for_the_cycle_that_changes_the_answer(serve, state_dir):
    """The change-driven protocol: the agent reports a new demand once, and its watch -- held
    open, not polled -- is answered by the cycle that grants it; a watch with nothing new is
    answered after its wait with the same version. An old agent (heartbeats only) beside it
    gets its grant as before."""
    cfg = make_config(
        state_dir, server={"cycle_ms": 50, "heartbeat_s": 0.5, "agent_keepalive_s": 5},
        cluster={"backend": "memory", "workers": 1, "cores": 4, "memory": "8g"},
        queues=[{"name": "root", "queues": [{"name": "notebooks"}]}],
        defaults={"queue": "root.notebooks"})
    with serve(create_app(cfg)) as c:
        new, old = (c.post("/api/v1/sessions", json={"name": n}).json()["id"]
                    for n in ("nb-new", "nb-old"))
        for a in (new, old):
            wait_until(lambda a=a: c.get(f"/api/v1/apps/{a}").json()["state"] == "STARTING", 30,
                       f"session {a} admitted")
        first = c.post("/api/v1/agent/register", json={"app_id": new, "control": "full"}).json()
        assert (first["keepalive_s"], first["grant"]) == (5.0, 0)
        held = first["version"]
        # Nothing changes for it: the watch is answered after its wait, the version unchanged.
        started = time.monotonic()
        idle = c.post("/api/v1/agent/watch", json={"app_id": new, "version": held,
                                                    "wait_s": 0.5}).json()
        assert time.monotonic() - started >= 0.5 * (1 - WATCH_JITTER)
        assert (idle["version"], idle["grant"]) == (held, 0)
        # It reports its demand once; its next watch is answered when the grant is decided.
        assert c.post("/api/v1/agent/heartbeat",
                      json={"app_id": new, "demand": 2, "control": "full"}).status_code == 200
        granted = c.post("/api/v1/agent/watch", json={"app_id": new, "version": held}).json()
        if granted["grant"] == 0:  # the first change the cycle made may be its state
            granted = c.post("/api/v1/agent/watch",
                             json={"app_id": new, "version": granted["version"]}).json()
        assert granted["grant"] == 2 and granted["version"] > held
        # The old protocol: heartbeats alone, as before.
        wait_until(lambda: c.post("/api/v1/agent/heartbeat", json={
            "app_id": old, "demand": 2, "control": "full"}).json()["grant"] == 2, 30,
            "the old agent's grant")
        # A kill reaches a waiting watch at once, not after the keep-alive.
        version = c.post("/api/v1/agent/heartbeat", json={
            "app_id": new, "demand": 2, "control": "full"}).json()["version"]
        c.post(f"/api/v1/apps/{new}/kill")
        told = c.post("/api/v1/agent/watch", json={"app_id": new, "version": version}).json()
        assert told["state"] == "KILLED"


def test_a_bad_watch_is_refused_in_one_line(client):
    r = client.post("/api/v1/agent/watch", json={"app_id": "driver-x", "version": -1})
    assert (r.status_code, r.json()["detail"]) == (
        422, "version: Input should be greater than or equal to 0")


def test_a_timed_report_counts_usage_at_the_agents_times(serve, state_dir):
    """A report's ``observed_at`` and ``removed`` reach the usage meter: the executor is held
    from its registration to its driver's removal and busy from the look that saw it busy,
    whenever the reports arrive; an older agent's reports (no times) count as they arrive."""
    cfg = make_config(
        state_dir, server={"cycle_ms": 50, "heartbeat_s": 0.5},
        cluster={"backend": "memory", "workers": 1, "cores": 4, "memory": "8g"},
        queues=[{"name": "root", "queues": [{"name": "notebooks"}]}],
        defaults={"queue": "root.notebooks"})
    with serve(create_app(cfg)) as c:
        a = c.post("/api/v1/sessions", json={"name": "nb-timed"}).json()["id"]
        wait_until(lambda: c.get(f"/api/v1/apps/{a}").json()["state"] == "STARTING", 30,
                   "the session admitted")
        c.post("/api/v1/agent/register", json={"app_id": a, "control": "full"})
        wait_until(lambda: c.post("/api/v1/agent/heartbeat", json={
            "app_id": a, "demand": 1, "control": "full"}).json()["grant"] == 1, 30, "a grant")
        # times between the launch and now: the meter never counts before the last change it
        # counted (the launch) nor after its own clock
        t = time.time()
        wait_until(lambda: time.time() >= t + 2.0, 5, "two seconds to have passed")
        for body in ({"executors": [{"id": "1", "idle": True, "started_at": t + 0.5}],
                      "observed_at": t + 0.7},
                     {"executors": [{"id": "1", "idle": False, "started_at": t + 0.5}],
                      "observed_at": t + 0.8},
                     {"executors": [], "observed_at": t + 1.9,
                      "removed": [{"id": "1", "at": t + 1.1}]}):
            r = c.post("/api/v1/agent/heartbeat",
                       json={"app_id": a, "demand": 1, "control": "full", **body})
            assert r.status_code == 200

        def line():
            (line,) = [u for u in c.get("/api/v1/usage?by=app").json() if u["app"] == a]
            return line

        def usage():  # the three reports may be counted in different cycles: wait for the
            # removal, after which no executor is left to count on, so two reads agree
            first, second = line(), line()
            executors = ("held_core_s", "busy_core_s")
            done = all(first[k] == second[k] for k in executors)
            return second if second["busy_core_s"] and done else None

        u = wait_until(usage, 30, "the timed reports counted")
        cores = round(u["held_core_s"] / 0.6)  # the session's executor size
        # held t+0.5 .. t+1.1 (0.6 s), busy from the look t+0.8 until it left (0.3 s)
        assert (u["held_core_s"], u["busy_core_s"]) == pytest.approx((0.6 * cores, 0.3 * cores))
        assert cores >= 1

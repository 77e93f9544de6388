"""The native API (docs/user/api.md) in-process: submissions, their validation, priorities, kills,
the audit trail. The cluster cannot be reached here, so nothing is admitted and queue positions
stay put while we look at them."""

from __future__ import annotations

import logging
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient

from tests.support.server_helpers import rows, wait_until

APP_KEYS = {
    "id", "name", "user", "queue", "priority", "state", "position", "submitted_at",
    "started_at", "first_executor_at", "finished_at", "exit_code", "executors", "target", "grant",
    "demand", "spark_app_id", "kind", "reason", "reason_code", "warnings", "estimated_start",
    "counter_offer",
    "gang",  # the gang it asked for and its reservation (null: not a gang; docs/design/gangs.md)
}


def body(app_file, **kw) -> dict:
    return {"argv": [app_file.name, "arg1"], "cwd": str(app_file.parent), **kw}


def submit(client, app_file, **kw) -> dict:
    r = client.post("/api/v1/apps", json=body(app_file, **kw))
    assert r.status_code == 201, r.text
    return r.json()


def queued_positions(client) -> dict[str, int]:
    return {a["id"]: a["position"] for a in client.get("/api/v1/apps").json()}


def wait_queued(client, ids):
    """Until every app has joined its queue in the engine (positions known)."""
    return wait_until(lambda: (p := queued_positions(client)) and all(p.get(i) for i in ids)
                      and p, what="apps to join their queue")


# --- bad input: a clear 4xx, and nothing stored ---------------------------------------------

BAD_SUBMISSIONS = [
    ("unknown-queue", {"queue": "nope"}, 400,
     "unknown queue 'nope'; known queues: root.default, root.etl"),
    ("parent-queue", {"queue": "root"}, 400,
     "queue 'root' is a parent queue; submit to a leaf queue: root.default, root.etl"),
    ("priority-zero", {"priority": 0}, 400, "priority 0 is outside 1..10000"),
    ("priority-too-high", {"priority": 10001}, 400, "priority 10001 is outside 1..10000"),
    ("priority-not-a-number", {"priority": "high"}, 400,
     "priority 'high' is not a whole number from 1 to 10000"),
    ("priority-in-conf", {"conf": {"spark.ego.priority": "abc"}}, 400,
     "spark.ego.priority='abc' (from conf): priority 'abc' is not a whole number from 1 to 10000"),
    ("slots-max-in-argv", {"argv": ["--conf", "spark.ego.slots.max=0", "job.py"]}, 400,
     "spark.ego.slots.max='0' (from --conf): expected a whole number >= 1"),
    ("missing-file", {"argv": ["nope.py"]}, 400,
     "application file nope.py not found (looked in {cwd})"),
    ("file-is-a-directory", {"argv": ["."]}, 400, "application file . not found (looked in {cwd})"),
    ("no-app-file", {"argv": ["--name", "x"]}, 400,
     "no application file in argv (options, then app.py or app.jar)"),
    ("master-in-argv", {"argv": ["--master", "local", "job.py"]}, 400,
     "--master is chosen by the scheduler; drop it from argv"),
    ("unknown-option", {"argv": ["--bogus", "job.py"]}, 400,
     "unknown spark-submit option '--bogus'"),
    ("python-in-cluster-mode", {"argv": ["--deploy-mode", "cluster", "job.py"]}, 400,
     "Python apps run in client mode on a standalone cluster; drop --deploy-mode cluster"),
    ("min-above-max", {"conf": {"spark.dynamicAllocation.minExecutors": "5",
                                "spark.dynamicAllocation.maxExecutors": "2"}}, 400,
     "spark.dynamicAllocation.minExecutors=5 is above maxExecutors=2"),
    ("bad-memory", {"conf": {"spark.executor.memory": "lots"}}, 400,
     "spark.executor.memory='lots' (from conf): expected a size like 512m or 2g"),
    ("relative-cwd", {"cwd": "relative/dir"}, 400, "cwd 'relative/dir' is not an absolute path"),
    ("argv-not-a-list", {"argv": "job.py"}, 422, "argv: Input should be a valid list"),
    ("conf-value-not-text", {"conf": {"spark.a": 1}}, 422,
     "conf.spark.a: Input should be a valid string"),
    ("unknown-field", {"bogus": 1}, 422, "bogus: Extra inputs are not permitted"),
    ("nul-in-an-argument", {"argv": ["job.py", "a\x00b"]}, 400,
     "argv: a value with a NUL character ('a\\x00b')"),
]


@pytest.mark.parametrize("changes,status,detail", [c[1:] for c in BAD_SUBMISSIONS],
                         ids=[c[0] for c in BAD_SUBMISSIONS])
def test_bad_submission_is_refused_and_nothing_is_stored(client, app_file, db, changes, status,
                                                          detail):
    r = client.post("/api/v1/apps", json=body(app_file, **changes))
    assert r.status_code == status
    assert r.json() == {"detail": detail.format(cwd=app_file.parent)}
    assert client.get("/api/v1/apps").json() == []
    assert rows(db, "select count(*) from apps") == [(0,)]
    assert rows(db, "select count(*) from events") == [(0,)]


@pytest.mark.parametrize("path,raw,detail", [
    ("/api/v1/apps", '{{"argv": ["job.py", "\\ud800"], "cwd": "{cwd}"}}',
     "argv: a value with a lone surrogate '\\ud800', not Unicode text ('\\ud800')"),
    ("/api/v1/apps", '{{"argv": ["job.py"], "cwd": "{cwd}", "conf": {{"spark.x": "a\\udfff"}}}}',
     "conf: a value with a lone surrogate '\\udfff', not Unicode text ('a\\udfff')"),
    ("/api/v1/sessions", '{{"name": "\\ud800"}}',
     "name: a value with a lone surrogate '\\ud800', not Unicode text ('\\ud800')"),
], ids=["in-argv", "in-conf", "in-a-session-name"])
def test_a_lone_surrogate_is_refused_and_nothing_is_stored(client, app_file, db, path, raw,
                                                           detail):
    """Found: stored (an argument or property that no driver's command line can hold), or a
    503 quoting the store's UnicodeEncodeError (a name)."""
    r = client.post(path, content=raw.format(cwd=app_file.parent).encode(),
                    headers={"content-type": "application/json"})
    assert (r.status_code, r.json()) == (400, {"detail": detail})
    assert client.get("/api/v1/apps").json() == []
    assert rows(db, "select count(*) from apps") == [(0,)]


def test_body_that_is_not_json_is_refused(client, db):
    r = client.post("/api/v1/apps", content=b"{not json",
                    headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["detail"].startswith("request body is not valid JSON")
    assert rows(db, "select count(*) from apps") == [(0,)]


# --- submissions -----------------------------------------------------------------------------


def test_submission_is_on_disk_when_acknowledged(client, app_file, db):
    app = submit(client, app_file, name="etl-daily", queue="etl", priority=7000)
    # Read the SQLite file directly, right after the 201: no waiting, it must be there.
    assert rows(db, "select id, state, queue, priority, name from apps") == [
        (app["id"], "ACCEPTED", "root.etl", 7000, "etl-daily")]
    assert rows(db, "select kind from events") == [("submitted",)]
    assert set(app) == APP_KEYS
    assert app["state"] == "ACCEPTED" and app["kind"] == "submit"
    assert app["user"] == "anonymous" and app["exit_code"] is None


def test_ids_are_spark_style_with_the_sequence(client, app_file):
    ids = [submit(client, app_file)["id"] for _ in range(3)]
    assert [i.rsplit("-", 1)[1] for i in ids] == ["0001", "0002", "0003"]
    assert all(len(i.split("-")[1]) == 14 and i.startswith("driver-") for i in ids)


def test_body_queue_and_priority_win_over_conf(client, app_file):
    conf = {"spark.sessionsched.queue": "default", "spark.ego.priority": "100"}
    app = submit(client, app_file, conf=conf, queue="etl", priority="9000")
    assert (app["queue"], app["priority"]) == ("root.etl", 9000)
    app = submit(client, app_file, conf=conf)
    assert (app["queue"], app["priority"]) == ("root.default", 100)


def test_a_policy_other_than_the_queues_is_accepted_with_a_warning(client, app_file):
    app = submit(client, app_file, queue="etl", conf={"spark.ego.app.schedule.policy": "fifo"})
    assert app["warnings"] == [
        "spark.ego.app.schedule.policy=fifo ignored: queue root.etl shares executors by its "
        "policy priority"]
    kinds = [e["kind"] for e in client.get(f"/api/v1/apps/{app['id']}/events").json()]
    assert kinds == ["submitted", "warning"]


def test_queued_apps_list_in_queue_order_with_positions(client, app_file):
    a = submit(client, app_file, priority=5000)["id"]
    b = submit(client, app_file, priority=9000)["id"]
    c = submit(client, app_file, priority=5000)["id"]
    wait_queued(client, [a, b, c])
    listed = client.get("/api/v1/apps").json()
    assert [(x["id"], x["position"]) for x in listed] == [(b, 1), (a, 2), (c, 3)]
    assert "cluster unreachable" in listed[0]["reason"]


def test_filters_check_their_values(client, app_file):
    submit(client, app_file, queue="etl")
    assert len(client.get("/api/v1/apps", params={"queue": "etl"}).json()) == 1
    assert client.get("/api/v1/apps", params={"queue": "default"}).json() == []
    assert len(client.get("/api/v1/apps", params={"state": "accepted"}).json()) == 1
    r = client.get("/api/v1/apps", params={"queue": "nope"})
    assert (r.status_code, r.json()["detail"]) == (
        400, "unknown queue 'nope'; known queues: root.default, root.etl")
    r = client.get("/api/v1/apps", params={"state": "DONE"})
    assert r.status_code == 400
    assert r.json()["detail"] == ("unknown state 'DONE'; one of ACCEPTED, STARTING, RUNNING, "
                                  "FINISHED, FAILED, KILLED")


# --- priorities ------------------------------------------------------------------------------


def test_priority_update_reorders_the_queue_and_is_audited(client, app_file, db):
    a, b, c = (submit(client, app_file)["id"] for _ in range(3))
    wait_queued(client, [a, b, c])
    assert queued_positions(client) == {a: 1, b: 2, c: 3}
    r = client.post(f"/api/v1/apps/{c}/priority", json={"priority": 10000})
    assert r.status_code == 200
    assert (r.json()["priority"], r.json()["position"]) == (10000, 1)
    assert queued_positions(client) == {c: 1, a: 2, b: 3}
    assert rows(db, f"select priority from apps where id = '{c}'") == [(10000,)]
    events = client.get(f"/api/v1/apps/{c}/events").json()
    assert events[-1]["kind"] == "priority"
    assert events[-1]["detail"] == ("Admin updated the priority from 5000 to 10000 "
                                    "(from testclient:50000)")


@pytest.mark.parametrize("value,detail", [
    (0, "priority 0 is outside 1..10000"),
    ("x", "priority 'x' is not a whole number from 1 to 10000"),
    (True, "priority must be a whole number from 1 to 10000"),
], ids=["zero", "text", "boolean"])
def test_bad_priority_update_changes_nothing(client, app_file, db, value, detail):
    app = submit(client, app_file)
    r = client.post(f"/api/v1/apps/{app['id']}/priority", json={"priority": value})
    assert (r.status_code, r.json()) == (400, {"detail": detail})
    assert rows(db, "select priority from apps") == [(5000,)]
    assert rows(db, "select kind from events") == [("submitted",)]


def test_priority_of_unknown_or_ended_app(client, app_file):
    r = client.post("/api/v1/apps/driver-nope/priority", json={"priority": 10})
    assert (r.status_code, r.json()) == (404, {"detail": "no app 'driver-nope'"})
    app = submit(client, app_file)
    assert client.post(f"/api/v1/apps/{app['id']}/kill").status_code == 200
    r = client.post(f"/api/v1/apps/{app['id']}/priority", json={"priority": 10})
    assert r.status_code == 409
    assert r.json() == {"detail": f"{app['id']} has already ended (KILLED)"}


# --- kills -----------------------------------------------------------------------------------


def test_kill_of_a_queued_app(client, app_file, db):
    a, b = (submit(client, app_file)["id"] for _ in range(2))
    r = client.post(f"/api/v1/apps/{a}/kill")
    assert r.status_code == 200
    killed = r.json()
    assert (killed["state"], killed["position"]) == ("KILLED", None)
    assert killed["finished_at"] is not None
    assert rows(db, f"select state from apps where id = '{a}'") == [("KILLED",)]
    kinds = [e["kind"] for e in client.get(f"/api/v1/apps/{a}/events").json()]
    assert kinds == ["submitted", "kill", "state"]
    wait_until(lambda: queued_positions(client).get(b) == 1, what=f"{b} to move up")
    r = client.post(f"/api/v1/apps/{a}/kill")
    assert (r.status_code, r.json()) == (409, {"detail": f"{a} has already ended (KILLED)"})
    r = client.post("/api/v1/apps/driver-nope/kill")
    assert (r.status_code, r.json()) == (404, {"detail": "no app 'driver-nope'"})


def test_unknown_app_reads_are_404(client):
    for path in ("/api/v1/apps/x", "/api/v1/apps/x/events", "/api/v1/apps/x/log"):
        r = client.get(path)
        assert (r.status_code, r.json()) == (404, {"detail": "no app 'x'"}), path


# --- sessions --------------------------------------------------------------------------------


def test_session_waits_in_its_queue_and_can_give_up(client, db):
    r = client.post("/api/v1/sessions", json={"name": "nb", "queue": "default", "priority": 6000,
                                              "conf": {"spark.executor.cores": "2"}})
    assert r.status_code == 201
    s = r.json()
    assert (s["kind"], s["state"], s["name"], s["priority"]) == ("session", "ACCEPTED", "nb", 6000)
    r = client.post(f"/api/v1/sessions/{s['id']}/stop", json={"exit_code": 0})
    assert (r.status_code, r.json()["state"]) == (200, "KILLED")
    r = client.post("/api/v1/sessions", json={"queue": "nope"})
    assert r.status_code == 400
    assert rows(db, "select count(*) from apps") == [(1,)]


def test_stopping_something_that_is_not_a_session(client, app_file):
    app = submit(client, app_file)
    r = client.post(f"/api/v1/sessions/{app['id']}/stop", json={})
    assert (r.status_code, r.json()) == (
        409, {"detail": f"{app['id']} is not a notebook session (kind submit)"})


def test_a_session_stopped_with_an_exit_code_past_32_bits_is_refused(state_dir):
    """Found: taken, the code failed every commit after it (the store's INTEGER column): each
    cycle was put back and stepped again, for ever, and the stop answered 503 "overloaded"."""
    from sessionsched.server.app import create_app
    from tests.support.server_helpers import make_config
    cfg = make_config(state_dir, server={"cycle_ms": 50},
                      cluster={"backend": "memory", "workers": 1, "cores": 4, "memory": "8g"})
    with TestClient(create_app(cfg)) as c:
        app_id = c.post("/api/v1/sessions", json={"name": "nb"}).json()["id"]
        wait_until(lambda: c.get(f"/api/v1/apps/{app_id}").json()["state"] == "STARTING", 30,
                   "the session admitted")
        r = c.post(f"/api/v1/sessions/{app_id}/stop", json={"exit_code": 10**23})
        assert (r.status_code, r.json()) == (422, {
            "detail": "exit_code: Input should be less than or equal to 2147483647"})
        r = c.post(f"/api/v1/sessions/{app_id}/stop", json={"exit_code": 3})
        assert (r.status_code, r.json()["state"], r.json()["exit_code"]) == (200, "FAILED", 3)


# --- health, queues, metrics -----------------------------------------------------------------


def test_an_unreachable_cluster_is_reported_and_submissions_still_queue(client, app_file):
    submit(client, app_file)
    health = wait_until(lambda: (h := client.get("/api/v1/health").json())["last_cycle_at"] and h,
                        what="a cycle")
    assert health["status"] == "degraded" and health["cluster_reachable"] is False
    assert health["cluster"].startswith("cluster unreachable (")
    queues = wait_until(lambda: (q := {x["name"]: x for x in client.get("/api/v1/queues").json()})
                        ["root.default"]["pending"] == 1 and q, what="the app to join its queue")
    assert set(queues) == {"root", "root.default", "root.etl"}
    assert queues["root.default"]["waiting_reason"].startswith("cluster unreachable")
    assert queues["root.etl"]["policy"] == "priority"


def test_metrics_count_what_the_api_shows(client, app_file):
    for q in ("etl", "etl", "default"):
        submit(client, app_file, queue=q)
    wait_until(lambda: "sessionsched_queue_pending{queue=\"root.etl\"} 2.0"
               in client.get("/metrics").text, what="pending gauge")
    text = client.get("/metrics").text
    assert 'sessionsched_apps{queue="root.etl",state="ACCEPTED"} 2.0' in text
    assert 'sessionsched_submissions_total{kind="submit"} 3.0' in text
    assert "sessionsched_cycle_seconds_count" in text
    assert "sessionsched_cluster_reachable 0.0" in text


def test_the_time_of_day_plan_in_force_shapes_the_queues(offline_app):
    # "every minute" has always fired last minute: it is in force from the start.
    app = offline_app(plans=[{"cron": "* * * * *", "queues": {"etl": {"weight": 7}}}])
    with TestClient(app) as c:
        queues = wait_until(lambda: (q := {x["name"]: x for x in c.get("/api/v1/queues").json()})
                            ["root.etl"]["weight"] == 7 and q, what="the plan's weight")
        assert queues["root.default"]["weight"] == 1
        health = c.get("/api/v1/health").json()
        assert health["plan"] == "plan '* * * * *': etl weight=7.0"
        assert health["next_plan"] is None  # firing again over itself changes nothing


def test_a_one_shot_plan_fires_at_its_second_and_one_past_is_not_run_late(offline_app, caplog):
    """``at`` plans: of two already past, the later is in force from the start and the earlier
    is never run (scheduled, APScheduler would run it at once, late, over the later one); the
    one a few seconds ahead fires at its second."""
    caplog.set_level(logging.INFO, logger="sessionsched.service")
    now = datetime.now(timezone.utc).replace(microsecond=0)
    ahead_s = 4  # more than a loaded machine takes to start the app (well under a second)
    plans = [{"at": (now + timedelta(seconds=s)).isoformat(), "queues": {"etl": {"weight": w}}}
             for s, w in ((-20, 5), (-10, 6), (ahead_s, 9))]
    said = [f"plan 'at {p['at']}': etl weight={p['queues']['etl']['weight']:.1f}" for p in plans]
    with TestClient(offline_app(plans=plans)) as c:
        health = c.get("/api/v1/health").json()
        assert health["plan"] == said[1]
        assert health["next_plan"] == f"{said[2]} at {plans[2]['at']}"  # and no other after
        wait_until(lambda: {x["name"]: x for x in c.get("/api/v1/queues").json()}
                   ["root.etl"]["weight"] == 9, ahead_s + 30, "the plan ahead's weight")
        assert datetime.now(timezone.utc) >= now + timedelta(seconds=ahead_s)
        health = c.get("/api/v1/health").json()
        assert (health["plan"], health["next_plan"]) == (said[2], None)
    applied = [r.getMessage() for r in caplog.records if r.getMessage().startswith("queue plan")]
    assert applied == [f"queue {said[1]} applied", f"queue {said[2]} applied"]


def test_serve_refuses_to_listen_beyond_loopback_without_auth():
    r = subprocess.run([sys.executable, "-m", "sessionsched.cli", "serve", "--host", "0.0.0.0",
                        "--port", "16999"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "sessionsched serve: refusing to listen on 0.0.0.0 with auth mode none: anyone who can "
        "reach it could submit and kill applications; use 127.0.0.1 or turn on auth.mode: "
        "tokens")


def test_dashboard_and_openapi_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    script = client.get("/static/overview.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert "/api/v1/queues" in script.text and "/api/v1/apps" in script.text
    again = client.get("/static/overview.js", headers={"If-None-Match": script.headers["etag"]})
    assert again.status_code == 304 and again.content == b""  # unchanged: not sent again
    one = client.get("/app/anything")  # an app's page: it reads its id from its address
    assert one.status_code == 200 and "/static/app_page.js" in one.text
    assert client.get("/static/nothing.js").status_code == 404
    spec = client.get("/openapi.json").json()
    assert {"/api/v1/apps", "/api/v1/apps/{app_id}/priority", "/api/v1/agent/heartbeat",
            "/api/v1/sessions", "/api/v1/health", "/api/v1/cluster"} <= set(spec["paths"])


def test_cluster_read_of_an_unreachable_cluster(client, offline_cluster):
    c = client.get("/api/v1/cluster").json()
    assert c["workers"] == [] and c["cores"] == 0  # nothing known of it
    assert c["reachable"] in (None, False) and c["cluster"]
    assert c["spark_ui"] == offline_cluster["master_ui"]  # a standalone master's web UI
    assert set(c["driver_host"]) == {"memory_mib", "used_mib", "drivers", "driver_slots"}


def test_audit_log_lines_in_the_conductor_style(client, app_file, caplog):
    caplog.set_level("INFO", logger="sessionsched.audit")
    app = submit(client, app_file, name="etl-daily", queue="etl",
                 conf={"spark.dynamicAllocation.minExecutors": "1",
                       "spark.dynamicAllocation.maxExecutors": "4",
                       "spark.executor.cores": "2"})
    client.post(f"/api/v1/apps/{app['id']}/priority", json={"priority": 10000})
    lines = [r.getMessage() for r in caplog.records if r.name == "sessionsched.audit"]
    assert lines[0].startswith("Registering app etl-daily from sender testclient:")
    assert lines[0].endswith(", reserve:2, priority:5000, limit:8")  # cores: 1x2 and 4x2
    assert lines[1] == f"Registered app etl-daily with ID {app['id']}"
    assert lines[2] == f"Admin updated the priority of {app['id']} from 5000 to 10000"

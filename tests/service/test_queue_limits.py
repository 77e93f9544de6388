"""A queue's limits on its queued apps, through the whole service:

- ``max_wait``: stepped by hand on the memory cluster (``stepped``), a queued app past it ends
  FAILED with the reason, a state event, an ``expired`` row of the audit trail and an audit log
  line; one that passed it while the scheduler was down ends at the first cycle after the
  restart (real SQLite store); a plan in force sets it;
- ``max_queued_apps`` / ``max_queued_apps_per_user``: in-process on the offline cluster
  (nothing starts, so what is queued stays queued), every door refuses a submission over a cap
  with 429 naming the cap and the queue, in its own error shape, and stores nothing; at once,
  never more than the cap; with tokens, per the caller the port identified.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from sessionsched.backends.memory import WORK
from sessionsched.config import tokens_file as tokens
from sessionsched.server.app import create_app
from tests.support.server_helpers import make_config, rows, wait_until
from tests.support.stepped_service import Clock, stepped_service

LONG = {WORK: "10000"}  # runs through every test here: the queue behind it stays queued
EXPIRED = "waited too long: {waited}s queued in root.default, beyond its max_wait of 30s"


# --- max_wait -----------------------------------------------------------------------------


def test_a_queued_app_past_max_wait_fails_with_an_event_and_an_audit_row(stepped, caplog):
    caplog.set_level(logging.INFO, logger="sessionsched.audit")
    with stepped(admission="none", max_running_apps=1, max_wait=30) as s:
        runs = s.submit("runs", **LONG)
        waits = s.submit("waits")  # submitted at the clock's now, as "runs"
        s.cycle()
        s.cycle(29.5)
        assert (s.app(runs)["state"], s.app(waits)["state"]) == ("STARTING", "ACCEPTED")
        s.cycle(0.5)  # 30 s since its submission: the deadline
        app = s.app(waits)
        assert (app["state"], app["position"]) == ("FAILED", None)
        assert app["reason"] == EXPIRED.format(waited=30)
        assert s.app(runs)["state"] in ("STARTING", "RUNNING")  # launched apps never expire
        events = [(e["kind"], e["detail"]) for e in s.events(waits)]
        assert ("state", "ACCEPTED -> FAILED: " + EXPIRED.format(waited=30)) in events
        assert ("expired", "expired by scheduler: " + EXPIRED.format(waited=30)) in events
        audit = s.client.get("/api/v1/audit", params={"app": waits}).json()
        assert [(a["kind"], a["who"], a["actor"]) for a in audit] == [
            ("submitted", "anonymous", "anonymous"), ("expired", "scheduler", "scheduler")]
        assert f"Scheduler expired {waits}: waited too long" in caplog.text


@pytest.mark.parametrize("before", [{"max_wait": 30}, {}],
                         ids=["the same config", "max_wait set while it was down"])
def test_an_app_that_waited_too_long_while_the_scheduler_was_down_fails_on_start(
        stepped, db, before):
    limits = {"admission": "none", "max_running_apps": 1}
    with stepped(**limits, **before) as s:
        runs = s.submit("runs", **LONG)
        waits = s.submit("waits")
        s.cycle()
        s.cycle(10.0)
        assert s.app(waits)["state"] == "ACCEPTED"
    s.clock.now += 90.0  # down for 90 s: 100 s since its submission
    with stepped(**limits, max_wait=30) as s:
        s.cycle()
        app = s.app(waits)
        assert (app["state"], app["reason"]) == ("FAILED", EXPIRED.format(waited=100))
        assert s.app(runs)["state"] in ("STARTING", "RUNNING")  # adopted, not expired
        assert rows(db, f"select state, reason from apps where id = '{waits}'") == [
            ("FAILED", EXPIRED.format(waited=100))]
        assert rows(db, f"select kind from events where app_id = '{waits}' and kind = "
                        "'expired'") == [("expired",)]


def test_a_plan_in_force_sets_max_wait(state_dir, cluster, tmp_path):
    """A time-of-day plan changes max_wait like any queue setting: the queues read and the
    engine both run with it ("every minute" has always fired: in force from the start)."""
    queues = [{"name": "root", "queues": [{"name": "default", "admission": "none",
                                           "max_running_apps": 1}]}]
    plans = [{"cron": "* * * * *", "queues": {"default": {"max_wait": 30}}}]
    with stepped_service(state_dir, cluster, tmp_path, Clock(), queues, plans=plans) as s:
        s.submit("runs", **LONG)
        waits = s.submit("waits")
        s.cycle()
        rows_ = {q["name"]: q for q in s.client.get("/api/v1/queues").json()}
        assert rows_["root.default"]["max_wait"] == 30 and rows_["root"]["max_wait"] is None
        s.cycle(29.5)
        assert s.app(waits)["state"] == "ACCEPTED"
        s.cycle(0.5)
        assert s.app(waits)["reason"] == EXPIRED.format(waited=30)


# --- max_queued_apps, max_queued_apps_per_user, on every door ------------------------------

CAPPED = [{"name": "root", "queues": [
    {"name": "default", "admission": "stateaware", "max_queued_apps": 2},
    {"name": "etl", "admission": "stateaware", "max_queued_apps_per_user": 1},
]}]
FULL = ("queue root.default already holds 2 queued app(s), its max_queued_apps is 2; submit "
        "again once some have started")


@pytest.fixture
def capped(offline_app):
    with TestClient(offline_app(queues=CAPPED)) as client:
        yield client


def native(client, app_file, queue="default", user=None):
    conf = {"spark.sessionsched.user": user} if user else {}
    return client.post("/api/v1/apps", json={"argv": [app_file.name], "cwd": str(app_file.parent),
                                             "queue": queue, "conf": conf})


def rest_body(app_file, **props) -> dict:
    return {"action": "CreateSubmissionRequest", "appResource": f"file:{app_file}",
            "mainClass": "Main", "clientSparkVersion": "4.0.1", "appArgs": [],
            "environmentVariables": {}, "sparkProperties": {"spark.app.name": "Main", **props}}


def stored(db) -> int:
    return rows(db, "select count(*) from apps")[0][0]


def test_every_door_refuses_a_submission_over_max_queued_apps_and_stores_nothing(
        capped, app_file, db):
    assert [native(capped, app_file).status_code for _ in range(2)] == [201, 201]
    events = rows(db, "select count(*) from events")

    r = native(capped, app_file)
    assert (r.status_code, r.json()) == (429, {"detail": FULL})
    # a dry run is refused as the submission is (it answered with a position before)
    r = capped.post("/api/v1/apps/dry-run", json={
        "argv": [app_file.name], "cwd": str(app_file.parent), "queue": "default"})
    assert (r.status_code, r.json()) == (429, {"detail": FULL})
    r = capped.post("/api/v1/sessions", json={"name": "nb", "queue": "default"})
    assert (r.status_code, r.json()) == (429, {"detail": FULL})
    r = capped.post("/v1/submissions/create", json=rest_body(app_file))
    assert r.status_code == 429
    answer = r.json()
    assert (answer["action"], answer["success"], answer["message"]) == (
        "ErrorResponse", False, FULL)
    r = capped.post("/batches", json={"file": str(app_file), "queue": "default"})
    assert (r.status_code, r.json()) == (429, {"msg": FULL})
    r = capped.post("/sessions", json={"kind": "pyspark", "queue": "default"})
    assert (r.status_code, r.json()) == (429, {"msg": FULL})

    assert stored(db) == 2 and rows(db, "select count(*) from events") == events
    assert len(capped.get("/api/v1/apps").json()) == 2
    assert capped.app.state.ops.depth.in_flight() == 0


def test_a_place_frees_once_a_queued_app_leaves_the_queue(capped, app_file):
    first = native(capped, app_file).json()["id"]
    native(capped, app_file)
    assert native(capped, app_file).status_code == 429
    assert capped.post(f"/api/v1/apps/{first}/kill").status_code == 200
    r = native(capped, app_file)
    assert r.status_code == 201, r.text


def test_max_queued_apps_per_user_counts_each_users_queued_apps(capped, app_file, db):
    assert native(capped, app_file, "etl", user="alice").status_code == 201
    mine = "user alice already has 1 app(s) queued in root.etl, its max_queued_apps_per_user " \
           "is 1; submit again once some have started"
    r = native(capped, app_file, "etl", user="alice")
    assert (r.status_code, r.json()) == (429, {"detail": mine})
    r = capped.post("/v1/submissions/create", json=rest_body(
        app_file, **{"spark.sessionsched.user": "alice", "spark.sessionsched.queue": "etl"}))
    assert (r.status_code, r.json()["message"], r.json()["success"]) == (429, mine, False)
    r = capped.post("/batches", json={"file": str(app_file), "queue": "etl",
                                      "conf": {"spark.sessionsched.user": "alice"}})
    assert (r.status_code, r.json()) == (429, {"msg": mine})
    assert native(capped, app_file, "etl", user="bob").status_code == 201
    assert native(capped, app_file, "default", user="alice").status_code == 201  # another queue
    assert stored(db) == 3


def test_the_count_holds_apps_committed_before_any_cycle_stepped_them(stepped):
    """Stepped by hand: two apps committed, no cycle yet (the engine has not seen them), the
    third is refused all the same; after the cycle, the engine's queue counts them."""
    with stepped(admission="stateaware", max_queued_apps=2, max_queued_apps_per_user=1) as s:
        body = {"argv": ["job.py"], "cwd": str(s.cwd)}

        def post(user):
            return s.client.post("/api/v1/apps", json={
                **body, "conf": {"spark.sessionsched.user": user}}).status_code

        assert [post("alice"), post("alice"), post("bob")] == [201, 429, 201]
        assert post("carol") == 429  # root.default holds 2, neither stepped yet
        assert [a["position"] for a in s.client.get("/api/v1/apps").json()] == [None, None]
        s.cycle()  # one launched (stateaware), one queued: a place is free again
        assert [post("alice"), post("carol")] == [201, 429]  # alice's first has started


def test_submissions_at_once_never_take_more_places_than_the_cap(capped, app_file, db):
    """Eight submissions at once into a queue with two places: the places handed out but not
    committed yet count, so exactly two are stored, whatever the commits' timing."""
    with ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(lambda _: native(capped, app_file).status_code, range(8)))
    assert codes == [201] * 2 + [429] * 6
    assert stored(db) == 2
    wait_until(lambda: capped.app.state.ops.depth.in_flight() == 0, what="places given back")


def test_with_tokens_the_per_user_cap_counts_the_callers_apps(state_dir, offline_cluster,
                                                               tmp_path, app_file, open_app, db):
    """The user is the caller the port identified, not what the submission claims: alice
    naming bob in ``spark.sessionsched.user`` still spends her own place."""
    path = tmp_path / "tokens.json"
    alice, bob = (tokens.create(path, name, "user") for name in ("alice", "bob"))
    client = open_app(create_app(make_config(
        state_dir, cluster=offline_cluster, queues=CAPPED,
        auth={"mode": "tokens", "run_as_root": True, "tokens_file": str(path)})))

    def submit(token, claimed=None):
        conf = {"spark.sessionsched.user": claimed} if claimed else {}
        return client.post("/api/v1/apps", headers={"Authorization": f"Bearer {token}"},
                           json={"argv": [app_file.name], "cwd": str(app_file.parent),
                                 "queue": "etl", "conf": conf})

    assert submit(alice).status_code == 201
    r = submit(alice, claimed="bob")
    assert (r.status_code, r.json()["detail"]) == (429, (
        "user alice already has 1 app(s) queued in root.etl, its max_queued_apps_per_user is "
        "1; submit again once some have started"))
    assert submit(bob).status_code == 201
    assert rows(db, "select user from apps order by seq") == [("alice",), ("bob",)]

"""Apache Livy's batch API in-process (the offline cluster: batches queue and stay queued):
Livy's shapes, the same app through every API, refusals that store nothing. Real Livy clients
against a real cluster: tests/real_spark/clients/test_livy_batches.py."""

from __future__ import annotations

import pytest

from tests.support.server_helpers import rows


def post(client, **body):
    return client.post("/batches", json=body)


def test_a_batch_answers_in_livys_shape_and_is_one_app_everywhere(client, app_file):
    r = post(client, file=str(app_file), args=["1", "2"], name="nightly", queue="etl",
             conf={"spark.ego.priority": 7000, "spark.dynamicAllocation.enabled": True})
    assert r.status_code == 201, r.text
    batch = r.json()
    bid = batch["id"]
    assert isinstance(bid, int)
    assert r.headers["location"] == f"/batches/{bid}"
    assert batch == {
        "id": bid, "name": "nightly", "owner": "anonymous", "proxyUser": None,
        "state": "not_started", "appId": None,
        "appInfo": {"driverLogUrl": None, "sparkUiUrl": None,
                    "schedulerReason": "accepted; joins its queue at the next scheduling cycle",
                    "schedulerReasonCode": "next_cycle"}, "log": [],
        "submissionId": batch["submissionId"], "schedulerState": "ACCEPTED",
        "queue": "root.etl", "priority": 7000, "position": batch["position"],
        "schedulerReason": batch["schedulerReason"], "schedulerReasonCode": "next_cycle"}
    assert batch["schedulerReason"] == batch["appInfo"]["schedulerReason"]
    sid = batch["submissionId"]
    native = client.get(f"/api/v1/apps/{sid}").json()
    assert (native["name"], native["queue"], native["priority"], native["kind"]) == (
        "nightly", "root.etl", 7000, "submit")
    assert client.get(f"/v1/submissions/status/{sid}").json()["driverState"] == "SUBMITTED"
    assert client.get(f"/batches/{bid}/state").json() == {"id": bid, "state": "not_started"}
    assert client.get(f"/batches/{bid}/log", params={"from": 0, "size": 10}).json() == {
        "id": bid, "from": 0, "total": 0, "log": []}


def test_list_pages_and_shows_apps_from_every_door(client, app_file):
    first = post(client, file=str(app_file)).json()["id"]
    second = post(client, file=str(app_file)).json()["id"]
    rest = client.post("/v1/submissions/create", json={
        "action": "CreateSubmissionRequest", "appResource": "file:/tmp/a.jar",
        "mainClass": "Main", "sparkProperties": {}, "environmentVariables": {}}).json()
    listed = client.get("/batches").json()
    assert (listed["from"], listed["total"]) == (0, 3)
    assert [b["id"] for b in listed["sessions"]] == [first, second, second + 1]
    assert listed["sessions"][2]["submissionId"] == rest["submissionId"]
    page = client.get("/batches", params={"from": 1, "size": 1}).json()
    assert (page["total"], [b["id"] for b in page["sessions"]]) == (3, [second])


def test_delete_kills_and_answers_deleted(client, app_file, db):
    bid = post(client, file=str(app_file)).json()["id"]
    r = client.delete(f"/batches/{bid}")
    assert (r.status_code, r.json()) == (200, {"msg": "deleted"})
    assert client.get(f"/batches/{bid}/state").json()["state"] == "killed"
    assert rows(db, "select state from apps") == [("KILLED",)]
    again = client.delete(f"/batches/{bid}")  # ended: still "deleted", as Livy answers
    assert (again.status_code, again.json()) == (200, {"msg": "deleted"})


@pytest.mark.parametrize("method,path,status,msg", [
    ("GET", "/batches/41", 404, "batch 41 not found"),
    ("DELETE", "/batches/41", 404, "batch 41 not found"),
    ("GET", "/batches/abc/state", 404, "batch id 'abc' is not a number"),
    ("GET", "/batches?from=x", 400, "query parameter from='x' is not a whole number"),
    ("GET", "/sessions/3", 404, "session 3 not found"),
    ("POST", "/sessions", 400, "session kind 'spark' is not served; use pyspark"),
], ids=["get-unknown", "delete-unknown", "id-not-a-number", "bad-paging", "unknown-session",
        "scala-session"])
def test_lookups_that_fail(client, method, path, status, msg):
    r = client.request(method, path, json={"kind": "spark"} if method == "POST" else None)
    assert (r.status_code, r.json()) == (status, {"msg": msg})


REFUSED = [
    ("not-json", b"{nope", "request body is not valid JSON: Expecting property name enclosed "
                           "in double quotes: line 1 column 2 (char 1)"),
    ("not-an-object", [1], "the body must be a JSON object (Livy's batch request)"),
    ("no-file", {"className": "Main"}, "file: Field required"),
    ("unknown-field", {"file": "/x.py", "clasName": "Main"}, "unknown field 'clasName'"),
    ("relative-file", {"file": "job.py"},
     "file 'job.py': give an absolute path or a URI (local:, file:, hdfs:, ...)"),
    ("missing-file", {"file": "/nonexistent/job.py"},
     "application file /nonexistent/job.py not found (looked in {cwd})"),
    ("zero-cores", {"file": "local:/x.py", "driverCores": 0},
     "driverCores: Input should be greater than or equal to 1"),
    ("unknown-queue", {"file": "local:/x.py", "queue": "gpu"},
     "unknown queue 'gpu'; known queues: root.default, root.etl"),
    ("master-in-conf", {"file": "local:/x.py", "conf": {"spark.master": "local"}},
     "spark.master is chosen by the scheduler; drop it from conf"),
    ("bad-priority", {"file": "local:/x.py", "conf": {"spark.ego.priority": "high"}},
     "spark.ego.priority='high' (from conf): priority 'high' is not a whole number from 1 to "
     "10000"),
]


@pytest.mark.parametrize("body,msg", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refused_batches_store_nothing(client, db, body, msg):
    if isinstance(body, bytes):
        r = client.post("/batches", content=body, headers={"content-type": "application/json"})
    else:
        r = client.post("/batches", json=body)
    assert r.status_code == 400
    cwd = str(db.parent.resolve())
    assert r.json() == {"msg": msg.format(cwd=cwd)}
    assert rows(db, "select count(*) from apps") == [(0,)]


def test_version(client):
    out = client.get("/version").json()
    assert out["version"] == "0.8.0-incubating"

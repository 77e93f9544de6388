"""Spark's REST submission protocol on the wire: what spark-submit sends, what a Spark 4.0.1
master's StandaloneRestServer answers, and our additions."""

from __future__ import annotations

import pytest

from sessionsched.commands._serverproc import ServerProcess
from sessionsched.doors.spark_rest.rest import SPARK_VERSION
from sessionsched.engine.waits import WaitCode
from tests.support.http_client import HTTP
from tests.support.server_helpers import rows, wait_until

JSON_TYPE = "application/json;charset=utf-8"


def create_body(**changes) -> dict:
    """A CreateSubmissionRequest as spark-submit 4.0.1 sends it."""
    body = {
        "action": "CreateSubmissionRequest",
        "appArgs": ["10"],
        "appResource": "file:/tmp/app.jar",
        "clientSparkVersion": "4.0.1",
        "environmentVariables": {"SPARK_ENV_LOADED": "1"},
        "mainClass": "Main",
        "sparkProperties": {
            "spark.app.name": "Main",
            "spark.master": "spark://127.0.0.1:6066",
            "spark.submit.deployMode": "cluster",
            "spark.jars": "file:/tmp/app.jar",
            "spark.app.submitTime": "1763744400000",
            "spark.driver.supervise": "false",
            "spark.master.rest.enabled": "true",
        },
    }
    for key, value in changes.items():
        if key == "props":
            body["sparkProperties"].update(value)
        elif value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def create(client, **changes) -> dict:
    r = client.post("/v1/submissions/create", json=create_body(**changes))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == JSON_TYPE
    return r.json()


def status(client, sid: str) -> dict:
    r = client.get(f"/v1/submissions/status/{sid}")
    assert r.status_code == 200
    return r.json()


def test_create_answers_like_a_master(client, db):
    out = create(client)
    sid = out["submissionId"]
    assert out == {"action": "CreateSubmissionResponse",
                   "message": f"Driver successfully submitted as {sid}",
                   "serverSparkVersion": SPARK_VERSION, "submissionId": sid, "success": True}
    assert rows(db, "select id, kind, name, queue, priority from apps") == [
        (sid, "rest", "Main", "root.default", 5000)]


def test_create_reads_the_scheduling_properties(client):
    out = create(client, props={"spark.ego.priority": "7000", "spark.sessionsched.queue": "etl",
                                "spark.ego.slots.max": "4", "spark.executor.cores": "2"})
    app = client.get(f"/api/v1/apps/{out['submissionId']}").json()
    assert (app["queue"], app["priority"], app["kind"]) == ("root.etl", 7000, "rest")
    # Conductor's top-level priority field wins over spark.ego.priority.
    out = create(client, priority="9000", props={"spark.ego.priority": "7000"})
    assert client.get(f"/api/v1/apps/{out['submissionId']}").json()["priority"] == 9000


def test_unknown_fields_are_listed_back(client):
    out = create(client, foo=1, bar="x")
    assert out["success"] is True and out["unknownFields"] == ["foo", "bar"]  # a master's order


def test_a_policy_the_queue_overrides_is_accepted_with_a_warning(client):
    out = create(client, props={"spark.sessionsched.queue": "etl",
                                "spark.ego.app.schedule.policy": "fairshare"})
    assert out["success"] is True
    assert out["message"] == (
        f"Driver successfully submitted as {out['submissionId']}. Warning: "
        "spark.ego.app.schedule.policy=fairshare ignored: queue root.etl shares executors by "
        "its policy priority")


MALFORMED = [
    ("empty-body", b"", "Malformed request: empty request body"),
    ("not-json", b"notjson",
     "Malformed request: not JSON: Expecting value: line 1 column 1 (char 0)"),
    ("no-action", b"{}", "Malformed request: Action field not found in JSON"),
    ("wrong-action", b'{"action": "SubmissionStatusResponse"}',
     "Malformed request: Validation of message SubmissionStatusResponse failed! expected action "
     "CreateSubmissionRequest"),
    ("no-main-class", create_body(mainClass=None), "Malformed request: Main class is missing."),
    ("no-app-resource", create_body(appResource=None),
     "Malformed request: Validation of message CreateSubmissionRequest failed! 'appResource' is "
     "missing"),
    # present but of another type: said so, not "missing"
    ("app-resource-not-text", create_body(appResource=5),
     "Malformed request: Validation of message CreateSubmissionRequest failed! 'appResource' "
     "must be a JSON string"),
    ("main-class-not-text", create_body(mainClass=["x"]),
     "Malformed request: Validation of message CreateSubmissionRequest failed! 'mainClass' "
     "must be a JSON string"),
    ("bad-cores", create_body(props={"spark.driver.cores": "abc"}),
     "Malformed request: Validation of message CreateSubmissionRequest failed! "
     "spark.driver.cores='abc' (from sparkProperties): expected a whole number >= 1"),
    ("bad-priority", create_body(priority="urgent"),
     "Malformed request: priority 'urgent' is not a whole number from 1 to 10000"),
    ("bad-ego-priority", create_body(props={"spark.ego.priority": "0"}),
     "Malformed request: Validation of message CreateSubmissionRequest failed! "
     "spark.ego.priority='0' (from sparkProperties): priority 0 is outside 1..10000"),
    ("unknown-queue", create_body(props={"spark.sessionsched.queue": "gpu"}),
     "Malformed request: unknown queue 'gpu'; known queues: root.default, root.etl"),
    ("properties-not-an-object", create_body(sparkProperties=["a"]),
     "Malformed request: Validation of message CreateSubmissionRequest failed! "
     "'sparkProperties' must be a JSON object"),
    ("property-not-text", create_body(props={"spark.executor.cores": 2}),
     "Malformed request: Validation of message CreateSubmissionRequest failed! sparkProperties "
     "values must be strings: spark.executor.cores"),
    # a lone surrogate: stored, then its answer could not be written (an empty 500)
    ("lone-surrogate", b'{"action": "CreateSubmissionRequest", "appResource": "a.jar", '
                       b'"mainClass": "M", "\\ud800": 1}',
     "Malformed request: not JSON: a lone surrogate '\\ud800' is not Unicode text"),
    ("not-utf8", b'{"action": "\xff"}',
     "Malformed request: not JSON: not UTF-8 (byte 0xff at position 12)"),
    ("too-many-digits", b'{"priority": 1' + b"0" * 5000 + b"}",
     "Malformed request: not JSON: a number of more than 4300 digits"),
]


@pytest.mark.parametrize("payload,message", [m[1:] for m in MALFORMED],
                         ids=[m[0] for m in MALFORMED])
def test_malformed_create_is_an_error_response_and_stores_nothing(client, db, payload, message):
    if isinstance(payload, dict):
        r = client.post("/v1/submissions/create", json=payload)
    else:
        r = client.post("/v1/submissions/create", content=payload,
                        headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.headers["content-type"] == JSON_TYPE
    assert r.json() == {"action": "ErrorResponse", "message": message,
                        "serverSparkVersion": SPARK_VERSION}
    assert rows(db, "select count(*) from apps") == [(0,)]


def test_status_of_a_queued_driver(client):
    first = create(client)["submissionId"]
    sid = create(client, priority="4000")["submissionId"]
    wait_until(lambda: status(client, sid).get("position") == 2, what="position 2")
    out = status(client, sid)
    assert out == {"action": "SubmissionStatusResponse", "driverState": "SUBMITTED",
                   "serverSparkVersion": SPARK_VERSION, "submissionId": sid, "success": True,
                   "schedulerState": "ACCEPTED", "queue": "root.default", "priority": 4000,
                   "position": 2, "schedulerReason": out["schedulerReason"],
                   "schedulerReasonCode": "cluster_unavailable"}  # no cluster in this fixture
    assert out["schedulerReason"].endswith("(1 app(s) ahead of it in root.default)")
    assert status(client, first)["position"] == 1


def test_status_of_an_unknown_id_is_success_false(client):
    assert status(client, "driver-20000101000000-9999") == {
        "action": "SubmissionStatusResponse",
        "message": "Submission driver-20000101000000-9999 does not exist",
        "serverSparkVersion": SPARK_VERSION, "submissionId": "driver-20000101000000-9999",
        "success": False}


def test_kill_of_a_queued_driver(client, db):
    sid = create(client)["submissionId"]
    r = client.post(f"/v1/submissions/kill/{sid}")
    assert r.status_code == 200
    assert r.json() == {"action": "KillSubmissionResponse",
                        "message": f"Kill request for {sid} submitted",
                        "serverSparkVersion": SPARK_VERSION, "submissionId": sid, "success": True}
    out = status(client, sid)
    assert (out["driverState"], out["schedulerState"]) == ("KILLED", "KILLED")
    assert "position" not in out
    assert rows(db, "select state from apps") == [("KILLED",)]
    again = client.post(f"/v1/submissions/kill/{sid}").json()
    assert again["success"] is False
    assert again["message"] == f"Driver {sid} has already finished or does not exist"


def test_kill_of_an_unknown_id(client):
    out = client.post("/v1/submissions/kill/driver-x").json()
    assert out == {"action": "KillSubmissionResponse",
                   "message": "Driver driver-x has already finished or does not exist",
                   "serverSparkVersion": SPARK_VERSION, "submissionId": "driver-x",
                   "success": False}


def test_update_reorders_the_queue(client, db):
    a, b, c = (create(client)["submissionId"] for _ in range(3))
    wait_until(lambda: status(client, c).get("position") == 3, what="three queued")
    r = client.post(f"/v1/submissions/update/{c}",
                    json={"action": "UpdateSubmissionRequest", "clientSparkVersion": "4.0.1",
                          "priority": "10000"})
    assert r.status_code == 200
    assert r.json() == {"action": "UpdateSubmissionResponse",
                        "message": f"Update request for driver {c} submitted.",
                        "serverSparkVersion": SPARK_VERSION, "submissionId": c, "success": True}
    assert [status(client, x)["position"] for x in (c, a, b)] == [1, 2, 3]
    assert status(client, c)["priority"] == 10000
    assert rows(db, "select kind from events where app_id = ? order by id".replace("?", f"'{c}'")
                ) == [("submitted",), ("priority",)]


@pytest.mark.parametrize("payload,message", [
    ({"action": "UpdateSubmissionRequest", "priority": "0"},
     "Malformed request: priority 0 is outside 1..10000"),
    ({"action": "UpdateSubmissionRequest", "priority": "top"},
     "Malformed request: priority 'top' is not a whole number from 1 to 10000"),
    ({"action": "UpdateSubmissionRequest"}, "Malformed request: priority is missing"),
    ({"priority": "10"}, "Malformed request: Validation of message None failed! expected action "
                         "UpdateSubmissionRequest"),
    (b'{"action": "UpdateSubmissionRequest", "priority": 10, "\\udfff": 1}',
     "Malformed request: not JSON: a lone surrogate '\\udfff' is not Unicode text"),
], ids=["zero", "text", "missing", "no-action", "lone-surrogate"])
def test_malformed_update_changes_nothing(client, db, payload, message):
    sid = create(client)["submissionId"]
    if isinstance(payload, bytes):
        r = client.post(f"/v1/submissions/update/{sid}", content=payload)
    else:
        r = client.post(f"/v1/submissions/update/{sid}", json=payload)
    assert r.status_code == 400
    assert r.json() == {"action": "ErrorResponse", "message": message,
                        "serverSparkVersion": SPARK_VERSION}
    assert rows(db, "select priority from apps") == [(5000,)]
    assert rows(db, "select count(*) from events where kind = 'priority'") == [(0,)]


def test_update_of_an_unknown_id(client):
    r = client.post("/v1/submissions/update/app-123",
                    json={"action": "UpdateSubmissionRequest", "priority": "10", "extra": 1})
    assert r.status_code == 200
    assert r.json() == {"action": "UpdateSubmissionResponse",
                        "message": "Submission app-123 does not exist",
                        "serverSparkVersion": SPARK_VERSION, "submissionId": "app-123",
                        "success": False, "unknownFields": ["extra"]}


def test_readyz(client):
    r = client.get("/v1/submissions/readyz")
    assert r.status_code == 200
    out = r.json()
    assert (out["action"], out["success"]) == ("ReadyzResponse", True)


@pytest.mark.parametrize("method,path,status_code,message", [
    ("GET", "/v2/submissions/status/driver-1", 468,
     "Unknown protocol version 'v2'. Please submit requests through "
     "http://[host]:[port]/v1/submissions/..."),
    ("GET", "/v1/submissions/create", 405, "HTTP method GET is not supported by this URL"),
    ("POST", "/v1/submissions/kill/", 400, "Submission ID is missing in kill request."),
    ("GET", "/v1/submissions/status/", 400, "Submission ID is missing in status request."),
    ("POST", "/v1/submissions/bogus/x", 400,
     "Missing an action: please specify one of /create, /kill, /status, /update or /readyz. "
     "Please submit requests through http://[host]:[port]/v1/submissions/..."),
], ids=["wrong-version", "get-create", "kill-no-id", "status-no-id", "unknown-action"])
def test_protocol_errors(client, method, path, status_code, message):
    r = client.request(method, path)
    assert r.status_code == status_code
    expected = {"action": "ErrorResponse", "message": message, "serverSparkVersion": SPARK_VERSION}
    if status_code == 468:
        expected["highestProtocolVersion"] = "v1"
    assert r.json() == expected


def test_status_over_real_http_matches_the_routed_answer(tmp_path, offline_config):
    """``sessionsched serve`` answers status reads on its fast path; the answer is the one the
    routed path gives (checked in-process above)."""
    server = ServerProcess.start(offline_config(tmp_path / "state"), tmp_path / "serve")
    try:
        sid = HTTP.post(f"{server.url}/v1/submissions/create", json=create_body(),
                         timeout=10).json()["submissionId"]
        out = wait_until(lambda: (r := HTTP.get(f"{server.url}/v1/submissions/status/{sid}",
                                                 timeout=10)).json().get("position") and r,
                         what="the driver to be queued")
        assert out.headers["content-type"] == JSON_TYPE
        body = out.json()
        assert body == {"action": "SubmissionStatusResponse", "driverState": "SUBMITTED",
                        "serverSparkVersion": SPARK_VERSION, "submissionId": sid,
                        "success": True, "schedulerState": "ACCEPTED", "queue": "root.default",
                        "priority": 5000, "position": 1,
                        "schedulerReason": body["schedulerReason"],
                        "schedulerReasonCode": body["schedulerReasonCode"]}
        assert body["schedulerReasonCode"] in {c.value for c in WaitCode}
        unknown = HTTP.get(f"{server.url}/v1/submissions/status/driver-nope", timeout=10)
        assert (unknown.status_code, unknown.json()["success"]) == (200, False)
        missing = HTTP.get(f"{server.url}/v1/submissions/status/", timeout=10)
        assert (missing.status_code, missing.json()["message"]) == (
            400, "Submission ID is missing in status request.")
    finally:
        server.stop()

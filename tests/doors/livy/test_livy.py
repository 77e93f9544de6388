"""Apache Livy's batch API in-process (the offline cluster: batches queue and stay queued):
Livy's shapes, the same app through every API, refusals that store nothing. Real Livy clients
against a real cluster: tests/real_spark/clients/test_livy_batches.py."""

from __future__ import annotations

import re
import subprocess
from types import SimpleNamespace

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
    # Pydantic's lax mode read it as 1 executor core
    ("boolean-count", {"file": "local:/x.py", "executorCores": True},
     "executorCores: Input should be a whole number, not true or false"),
    ("unknown-queue", {"file": "local:/x.py", "queue": "gpu"},
     "unknown queue 'gpu'; known queues: root.default, root.etl"),
    ("master-in-conf", {"file": "local:/x.py", "conf": {"spark.master": "local"}},
     "spark.master is chosen by the scheduler; drop it from conf"),
    ("bad-priority", {"file": "local:/x.py", "conf": {"spark.ego.priority": "high"}},
     "spark.ego.priority='high' (from conf): priority 'high' is not a whole number from 1 to "
     "10000"),
    # stored, then the answer (and every list of batches) failed on it: a 500
    ("lone-surrogate", b'{"file": "local:/x.py", "proxyUser": "\\ud800"}',
     "request body is not valid JSON: a lone surrogate '\\ud800' is not Unicode text"),
    ("not-utf8", b'{"file": "\xff"}',
     "request body is not valid JSON: not UTF-8 (byte 0xff at position 10)"),
    ("nested-too-deeply", b"[" * 100_000 + b"]" * 100_000,
     "request body is not valid JSON: nested too deeply"),
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


class IdleRepl:
    """A session's REPL process that never reports: its session stays as created. It ends
    with the test that made it (``end_all``), and with it the sessions' sweeper: one left
    running ended its session an hour later, from a test long gone."""

    made: list[IdleRepl] = []

    def __init__(self, *args, **kwargs):
        self.ended = False
        IdleRepl.made.append(self)

    def poll(self):
        return 0 if self.ended else None

    @classmethod
    def end_all(cls) -> None:
        for repl in cls.made:
            repl.ended = True
        cls.made.clear()


@pytest.fixture
def session(client, monkeypatch):
    """A Livy session's number, its REPL an ``IdleRepl``."""
    from sessionsched.doors.livy import interactive
    monkeypatch.setattr(interactive, "subprocess", SimpleNamespace(
        Popen=IdleRepl, DEVNULL=subprocess.DEVNULL, STDOUT=subprocess.STDOUT))
    try:
        r = client.post("/sessions", json={"kind": "pyspark"})
        assert r.status_code == 201, r.text
        yield r.json()["id"]
    finally:
        IdleRepl.end_all()


def test_a_session_with_a_lone_surrogate_is_refused_and_not_kept(client, session, db):
    """Found: stored, answered 500, and every later ``GET /sessions`` a 500 too."""
    r = client.post("/sessions", content=b'{"proxyUser": "\\udc00"}')
    assert (r.status_code, r.json()) == (400, {
        "msg": "request body is not valid JSON: a lone surrogate '\\udc00' is not Unicode text"})
    assert rows(db, "select count(*) from apps") == [(1,)]  # the fixture's session alone
    assert [s["id"] for s in client.get("/sessions").json()["sessions"]] == [session]


def test_a_session_with_a_boolean_count_is_refused_and_not_kept(client, session, db):
    """Found: ``true`` read as 1 by Pydantic's lax mode (a heartbeat timeout of 1 s)."""
    r = client.post("/sessions", json={"kind": "pyspark", "heartbeatTimeoutInSecond": True})
    assert (r.status_code, r.json()) == (400, {
        "msg": "heartbeatTimeoutInSecond: Input should be a whole number, not true or false"})
    assert rows(db, "select count(*) from apps") == [(1,)]  # the fixture's session alone


@pytest.mark.parametrize("body,msg", [
    (b'{"code": "\\ud800"}',
     "request body is not valid JSON: a lone surrogate '\\ud800' is not Unicode text"),
    (b"[" * 100_000 + b"]" * 100_000, "request body is not valid JSON: nested too deeply"),
    (b'{"code": 1}', "code: Input should be a valid string"),
], ids=["lone-surrogate", "nested-too-deeply", "code-not-text"])
def test_a_refused_statement_is_not_kept(client, session, body, msg):
    """Found: a lone surrogate was kept, answered 500, and the session's statements (its
    REPL's next one too) a 500 from then on; a deeply nested body a 500."""
    r = client.post(f"/sessions/{session}/statements", content=body)
    assert (r.status_code, r.json()) == (400, {"msg": msg})
    r = client.get(f"/sessions/{session}/statements")
    assert (r.status_code, r.json()) == (200, {"total_statements": 0, "statements": []})
    assert client.get(f"/livy-repl/{session}/next").json() == {"id": None}


@pytest.mark.parametrize("body", [
    b'{"id": 0}', b'{"id": Infinity, "output": {}}', b"[0]", b"[" * 100_000 + b"]" * 100_000,
], ids=["no-output", "infinite-id", "not-an-object", "nested-too-deeply"])
def test_a_malformed_repl_result_is_a_400(client, session, body):
    """Found: a result without output a 404 "'output'"; an infinite or deeply nested one a
    500."""
    assert client.post(f"/sessions/{session}/statements", json={"code": "1"}).status_code == 201
    assert client.get(f"/livy-repl/{session}/next").json() == {"id": 0, "code": "1"}
    r = client.post(f"/livy-repl/{session}/result", content=body)
    assert r.status_code == 400
    assert r.json()["msg"].startswith("bad result: ")
    assert client.get(f"/sessions/{session}/statements/0").json()["state"] == "running"


# ``GET .../log?from=&size=`` on both doors, as Livy's ``serializeLogs`` pages a log. Found: a
# session's log took a negative size as "fewer than none" (an empty page from past the end),
# where the batches' door and Livy give every line.
LINES = [f"line {i}" for i in range(5)]
LOG_PAGES = [
    # name, query, (from, lines) or the refusal
    ("default: the last 100", "", (0, LINES)),
    ("the last two", "size=2", (3, LINES[3:])),
    ("two from the second", "from=1&size=2", (1, LINES[1:3])),
    ("negative size: every line", "size=-1", (0, LINES)),
    ("negative size from the third", "from=2&size=-1", (2, LINES[2:])),
    ("from past the end", "from=99", (99, [])),
    ("huge", f"from={10**30}&size={10**30}", (10**30, [])),
    ("from not a number", "from=x", "query parameter from='x' is not a whole number"),
    ("size not a number", "size=1e3", "query parameter size='1e3' is not a whole number"),
]


@pytest.mark.parametrize("query,expected", [p[1:] for p in LOG_PAGES],
                         ids=[p[0] for p in LOG_PAGES])
def test_a_log_is_paged_as_livy_pages_it(query, expected):
    from starlette.requests import Request

    from sessionsched.doors.livy.answers import log_page
    request = Request({"type": "http", "query_string": query.encode(), "headers": []})
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
            log_page(request, LINES, 100)
    else:
        assert log_page(request, LINES, 100) == expected


def test_a_sessions_log_is_paged_as_a_batchs(client, session, app_file):
    bid = post(client, file=str(app_file)).json()["id"]
    for path in (f"/sessions/{session}/log", f"/batches/{bid}/log"):
        everything = client.get(path, params={"size": -1}).json()
        assert (everything["from"], everything["total"]) == (0, 0), path
        bad = client.get(path, params={"from": "x"})
        assert (bad.status_code, bad.json()) == (
            400, {"msg": "query parameter from='x' is not a whole number"}), path


@pytest.mark.parametrize("method,path", [("GET", "/sessions/{}/statements/²"),
                                         ("POST", "/sessions/{}/statements/²/cancel")],
                         ids=["get", "cancel"])
def test_a_statement_number_of_other_digits_is_not_found(client, session, method, path):
    """Found: "²" passed str.isdigit() and int() refused it: a 500."""
    r = client.request(method, path.format(session))
    assert (r.status_code, r.json()) == (
        404, {"msg": f"statement ² not found in session {session}"})

"""Property-based fuzzing of the HTTP interface (schemathesis, hypothesis), in-process on the
offline cluster of conftest.py: a real SQLite store, the real scheduling cycle, a Spark master
that cannot be reached, so nothing is ever launched.

Every operation of the served OpenAPI spec (``/openapi.json``) and of the Spark REST protocol
(described below as a Spark 4.0.1 master speaks it: Spark's routes are plain Starlette
ones, outside FastAPI's spec) gets schema-valid and schema-invalid requests, sent through
``asgi(app)`` — what ``sessionsched serve`` runs — one operation at a time and then all of
them interleaved on one server. Each answer must be

- no 5xx, and of a status the spec declares;
- of the declared content type and shape, where one is declared;
- a refusal (4xx) for input the spec says is invalid;
- when a refusal (a 4xx, or Spark's ``success: false``), one line in our own words;

and after each run nothing acknowledged is lost and nothing refused was kept: every app a create
answered 2xx for is still readable via ``GET /api/v1/apps/{id}`` and listed, the store holds
exactly those apps (plus the seeded ones), and health and metrics still answer.

Schema-valid requests are aimed at the apps that exist (so priority changes, kills, stops and
agent reports reach real apps, not only 404s), and submissions get the options and properties
the server reads, with sane or awkward values. The submission checks are also fuzzed alone,
without HTTP, with many more examples. Example counts are bounded and derived from a fixed seed
(``derandomize``), so runs are reproducible. Each bug the fuzzing found has a named test at the
end.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from sessionsched.doors.native import agent_api, api, overview_api, upload_api
from sessionsched.intake import new_apps
from sessionsched.server.app import asgi
from sessionsched.spark.submit_args import (
    OPTION_PROPERTIES,
    SPARK_SUBMIT_OPTIONS,
    SPARK_SUBMIT_SWITCHES,
)
from tests.support.server_helpers import make_config, rows

# Words of Python's own exceptions: a refusal quoting one has not named the problem.
JARGON = ("invalid literal", "NoneType", "object has no attribute", "unhashable", "subscriptable",
          "Traceback", "internal error")


def refusal_names_the_problem(message: object) -> None:
    assert isinstance(message, str) and message.strip(), f"refusal without a message: {message!r}"
    assert "\n" not in message, f"refusal of more than one line: {message!r}"
    assert not any(j in message for j in JARGON), f"refusal in Python's words: {message!r}"


def clear_refusal(ctx, response, case) -> None:
    """A custom check: a 4xx says what was wrong, in one line of our own words — the native
    API's ``detail``, Spark's ``message`` (its ``success: false`` answers too)."""
    if not 400 <= response.status_code < 500:
        if "/v1/submissions/" in case.path and response.json().get("success") is False:
            refusal_names_the_problem(response.json().get("message"))
        return
    answer = response.json()
    refusal_names_the_problem(answer.get("detail", answer.get("message")))


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, negative_data_rejection, clear_refusal]
EXAMPLES = 12  # per operation and generation mode (schema-valid, schema-invalid)
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                           HealthCheck.data_too_large],
)

# The native API's operations, as FastAPI publishes them (checked against the served spec).
NATIVE = sorted(
    f"{method} {route.path}"
    for route in [*api.router.routes, *agent_api.router.routes, *upload_api.router.routes,
                  *overview_api.router.routes]
    if isinstance(route, APIRoute) and route.include_in_schema
    for method in route.methods
)

# --- Spark's REST protocol, described for the fuzzer -----------------------------------------

# Read by no one (a master takes any JSON value here too): nothing to refuse.
_IGNORED = {"description": "the client's Spark version, ignored"}
# null is taken as not given, as the Spark master's JSON reader does.
_STR_MAP = {"type": ["object", "null"], "additionalProperties": {"type": "string"}}
# A string: what ``parse_priority`` reads as a number (around it, what str.strip() takes off),
# the range aside; the server refuses more than the spec does, never less.
_PRIORITY = {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 10000},
                       {"type": "string",
                        "pattern": r"^[\s\x1c-\x1f\x85]*-?[0-9]+[\s\x1c-\x1f\x85]*$"}]}


def _answer(action: str, *required: str, **props: Any) -> dict:
    return {"type": "object",
            "required": ["action", "serverSparkVersion", *required],
            "properties": {"action": {"const": action}, "serverSparkVersion": {"type": "string"},
                           "message": {"type": "string"}, "submissionId": {"type": "string"},
                           "success": {"type": "boolean"}, **props}}


def _json(schema: dict, description: str = "answer") -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_ERROR = _json(_answer("ErrorResponse", "message"), "ErrorResponse naming the problem")
_SID = [{"name": "sid", "in": "path", "required": True, "schema": {"type": "string",
                                                                     "pattern": "^[^/]+$"}}]

SPARK_REST_SPEC = {
    "openapi": "3.1.0",
    "info": {"title": "Spark standalone REST submission protocol (+ Conductor update)",
             "version": "v1"},
    "paths": {
        "/v1/submissions/create": {"post": {
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object",
                "required": ["action", "appResource", "mainClass"],
                "properties": {
                    "action": {"const": "CreateSubmissionRequest"},
                    "appResource": {"type": "string", "minLength": 1, "pattern": r"\S"},
                    "mainClass": {"type": "string", "minLength": 1, "pattern": r"\S"},
                    "appArgs": {"type": ["array", "null"], "items": {"type": "string"}},
                    "clientSparkVersion": _IGNORED,
                    "environmentVariables": _STR_MAP,
                    "sparkProperties": _STR_MAP,
                    "priority": {"anyOf": [_PRIORITY, {"type": "null"}]},
                },
            }}}},
            "responses": {
                "200": _json(_answer("CreateSubmissionResponse", "submissionId", "success",
                                     unknownFields={"type": "array",
                                                    "items": {"type": "string"}})),
                "400": _ERROR,
            },
        }},
        "/v1/submissions/status/{sid}": {"get": {
            "parameters": _SID,
            "responses": {"200": _json(_answer(
                "SubmissionStatusResponse", "submissionId", "success",
                driverState={"type": "string"}, schedulerState={"type": "string"},
                queue={"type": "string"}, priority={"type": "integer"},
                position={"type": ["integer", "null"]}, schedulerReason={"type": "string"},
                schedulerReasonCode={"type": "string"}))},
        }},
        "/v1/submissions/kill/{sid}": {"post": {
            "parameters": _SID,
            "responses": {"200": _json(_answer("KillSubmissionResponse", "submissionId",
                                               "success", "message"))},
        }},
        "/v1/submissions/update/{sid}": {"post": {
            "parameters": _SID,
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object",
                "required": ["action", "priority"],
                "properties": {"action": {"const": "UpdateSubmissionRequest"},
                               "clientSparkVersion": _IGNORED,
                               "priority": _PRIORITY},
            }}}},
            "responses": {
                "200": _json(_answer("UpdateSubmissionResponse", "submissionId", "success",
                                     "message")),
                "400": _ERROR,
            },
        }},
        "/v1/submissions/readyz": {"get": {
            "responses": {"200": _json(_answer("ReadyzResponse", "success", "message"))},
        }},
    },
}
SPARK_REST = sorted(f"{m.upper()} {p}" for p, ops in SPARK_REST_SPEC["paths"].items()
                    for m in ops)

# What ``Fuzz.aim`` puts into submissions: the options and properties the server reads, with
# values that are awkward for them.
# (--master and spark.master are always refused: tests/doors/native/test_api.py has those rows.)
OPTIONS = sorted((SPARK_SUBMIT_OPTIONS | SPARK_SUBMIT_SWITCHES) - {"--master"})
PROPERTY_KEYS = sorted({*OPTION_PROPERTIES.values(), "spark.ego.priority", "spark.ego.slots.max",
                        "spark.ego.app.schedule.policy", "spark.sessionsched.queue",
                        "spark.sessionsched.user", "spark.dynamicAllocation.enabled",
                        "spark.dynamicAllocation.minExecutors",
                        "spark.dynamicAllocation.maxExecutors",
                        "spark.dynamicAllocation.initialExecutors",
                        "spark.dynamicAllocation.executorIdleTimeout"})
NUMBERISH = st.sampled_from(["0", "1", "-1", "--1", "+1", "1.5", "1e3", "²", "٣", " 7 ", "10001",
                             "99999999999999999999"])
WORDISH = st.sampled_from(["", " ", "true", "FALSE", "512m", "2g", "1.5g", "0m", "٣g", "cluster",
                           "client", "etl", "root", "root.etl.", "fifo", "nope", "a=b", "\x00"])
AWKWARD = NUMBERISH | WORDISH | st.text(max_size=6)
SANE = {"spark.executor.memory": "2g", "spark.executor.cores": "2", "spark.ego.priority": "7000",
        "spark.dynamicAllocation.maxExecutors": "4", "spark.sessionsched.queue": "etl"}
PROPERTIES = st.dictionaries(st.sampled_from(PROPERTY_KEYS), AWKWARD, max_size=4)
SANE_PROPERTIES = st.dictionaries(st.sampled_from(sorted(SANE)), st.just(""), max_size=3).map(
    lambda keys: {k: SANE[k] for k in keys})  # submissions that pass, to be queued and ended
ARGV_OPTIONS = st.lists(  # flattened: ["--executor-cores", "²", "--conf", "spark.x=y", ...]
    st.tuples(st.sampled_from(OPTIONS), AWKWARD)
    | st.tuples(st.just("--conf"), st.builds("{}={}".format, st.sampled_from(PROPERTY_KEYS),
                                             AWKWARD)),
    max_size=3,
).map(lambda pairs: [x for pair in pairs for x in pair])
QUEUE = st.sampled_from([None, "etl", "root.default", "root", "root.etl.x", ""])
PRIORITY = st.sampled_from([None, 1, 10000, "7000", " 9000 ", 0, -1, 10001, 1.5, True, "²",
                            "--5", []])

# Where a create's answer names the new app.
CREATES = {"POST /api/v1/apps", "POST /api/v1/sessions", "POST /v1/submissions/create"}


# --- the harness ------------------------------------------------------------------------------


@dataclass
class Fuzz:
    """One app in-process, the specs loaded from it, and the ledger of acknowledged apps."""

    client: TestClient
    db: Path
    app_file: Path
    native: Any
    spark_rest: Any
    acknowledged: dict[str, str] = field(default_factory=dict)  # id -> the create that did it

    def operation(self, label: str):
        method, path = label.split(" ", 1)
        schema = self.spark_rest if label in SPARK_REST else self.native
        return schema[path][method]

    def send(self, case) -> httpx.Response:
        kw = case.as_transport_kwargs(base_url="http://testserver")
        if "data" in kw:
            kw["content"] = kw.pop("data")
        kw.pop("cookies", None)
        return self.client.request(**kw)

    def aim(self, case, data) -> None:
        """Point a schema-valid request at the apps that exist, and give submissions the
        options and properties the server reads, with awkward values (some of the time):
        random ids, paths and property names would only ever meet 404s and 400s."""
        known = sorted(self.acknowledged)

        def a_known_app() -> str:
            # An index drawn independently of how many apps there are by now: hypothesis
            # needs the same draws for the same choices, while the server's apps accumulate.
            return known[data.draw(st.integers(0, 255), label="a known app") % len(known)]

        params = case.path_parameters or {}
        for key in ("app_id", "sid"):
            if key in params and data.draw(st.booleans(), label=f"aim {key} at a known app"):
                params[key] = a_known_app()
        body = case.body
        if not isinstance(body, dict) or not data.draw(st.booleans(), label="aim the body"):
            return
        label = case.operation.label
        if label.startswith("POST /api/v1/agent/"):
            body["app_id"] = a_known_app()
            if label == "POST /api/v1/agent/watch":
                # Not held up to the keep-alive: a held watch is test_agent_api's to check.
                body["wait_s"] = 0
        elif label == "POST /api/v1/apps/{app_id}/priority":
            body["priority"] = data.draw(PRIORITY, label="priority")
        elif label in CREATES:
            sane = data.draw(st.booleans(), label="a submission that passes")
            props = data.draw(SANE_PROPERTIES if sane else PROPERTIES, label="properties")
            body["priority"] = data.draw(st.none() if sane else PRIORITY, label="priority")
            if label == "POST /v1/submissions/create":
                body["sparkProperties"] = props
                return
            body["conf"] = props
            body["queue"] = data.draw(st.sampled_from([None, "etl"]) if sane else QUEUE)
            if label == "POST /api/v1/apps":
                options = [] if sane else data.draw(ARGV_OPTIONS, label="spark-submit options")
                app = data.draw(st.sampled_from([self.app_file.name, "hdfs:/jobs/app.jar"]))
                body["cwd"] = str(self.app_file.parent)
                body["argv"] = [*options, app, *body["argv"]]  # the rest: the app's arguments

    def exchange(self, case) -> None:
        """Send the request, check the answer against the spec, note what it acknowledged."""
        response = self.send(case)
        case.validate_response(response, checks=CHECKS)
        self.record(case, response)

    def record(self, case, response: httpx.Response) -> None:
        label = case.operation.label
        if label not in CREATES or not 200 <= response.status_code < 300:
            return
        answer = response.json()
        if label == "POST /v1/submissions/create":
            if answer.get("success"):
                self.acknowledged[answer["submissionId"]] = label
        else:
            self.acknowledged[answer["id"]] = label

    def check_nothing_lost(self) -> None:
        """Every acknowledged app is readable and listed, the store holds exactly those, and
        the server still answers its health and metrics."""
        lost = {}
        for app_id, how in self.acknowledged.items():
            r = self.client.get(f"/api/v1/apps/{app_id}")
            if r.status_code != 200 or r.json()["id"] != app_id:
                lost[app_id] = f"{how} acknowledged it; GET answers {r.status_code} {r.text}"
        assert not lost, f"acknowledged apps lost: {lost}"
        listed = {a["id"] for a in self.client.get("/api/v1/apps").json()}
        assert listed == set(self.acknowledged), (
            f"not listed: {sorted(set(self.acknowledged) - listed)}; "
            f"listed, never acknowledged: {sorted(listed - set(self.acknowledged))}")
        stored = {row[0] for row in rows(self.db, "select id from apps")}
        assert stored == set(self.acknowledged), (
            f"store holds apps never acknowledged: {sorted(stored - set(self.acknowledged))}; "
            f"acknowledged but not stored: {sorted(set(self.acknowledged) - stored)}")
        for path in ("/api/v1/health", "/metrics"):
            assert self.client.get(path).status_code == 200, path


@pytest.fixture
def fuzz(offline_app, app_file, db):
    app = offline_app()
    with TestClient(asgi(app)) as client:
        native = schemathesis.openapi.from_dict(client.get("/openapi.json").json())
        spark_rest = schemathesis.openapi.from_dict(SPARK_REST_SPEC)
        f = Fuzz(client, db, app_file, native, spark_rest)
        for seed in (  # one app of each kind, for the operations on existing apps
            ("POST", "/api/v1/apps", {"argv": [app_file.name], "cwd": str(app_file.parent)}),
            ("POST", "/api/v1/sessions", {"name": "notebook", "queue": "etl"}),
            ("POST", "/v1/submissions/create", {
                "action": "CreateSubmissionRequest", "appResource": "hdfs:/jobs/app.jar",
                "mainClass": "com.example.Main", "sparkProperties": {}}),
        ):
            method, path, body = seed
            r = client.request(method, path, json=body)
            assert r.status_code in (200, 201), r.text
            answer = r.json()
            f.acknowledged[answer.get("id") or answer["submissionId"]] = f"{method} {path}"
        yield f


def test_every_served_operation_is_fuzzed(fuzz):
    served = sorted(op.ok().label for op in fuzz.native.get_all_operations())
    assert served == NATIVE


def modes(operation) -> list[GenerationMode]:
    """Schema-invalid requests exist only for a body or query, header or cookie parameters:
    a path parameter of free text has no invalid value that still reaches the operation."""
    negatable = "requestBody" in operation.definition.raw or any(
        p.location.value != "path" for p in operation.iter_parameters())
    return [GenerationMode.POSITIVE, *([GenerationMode.NEGATIVE] if negatable else [])]


@pytest.mark.parametrize("label", NATIVE + SPARK_REST)
def test_operation_survives_fuzzing(fuzz, label):
    operation = fuzz.operation(label)
    for mode in modes(operation):
        aimed = mode is GenerationMode.POSITIVE

        @FUZZ_SETTINGS
        @given(case=operation.as_strategy(generation_mode=mode), data=st.data())
        def run(case, data):
            if aimed:  # noqa: B023 - run() is called right here, in this iteration
                fuzz.aim(case, data)
            fuzz.exchange(case)

        run()
    fuzz.check_nothing_lost()


def interleave(fuzz, examples: int = 4 * EXAMPLES) -> None:
    """Valid requests of every operation against one server, a few at a time in the order
    drawn, each aimed at apps the server knows and checked as it comes back."""
    def one_of(labels):
        return st.one_of([
            fuzz.operation(label).as_strategy(generation_mode=GenerationMode.POSITIVE)
            for label in labels])

    any_operation, a_create = one_of(NATIVE + SPARK_REST), one_of(sorted(CREATES))

    @settings(FUZZ_SETTINGS, max_examples=examples)
    @given(data=st.data())
    def run(data):
        for _ in range(data.draw(st.integers(1, 4), label="requests")):
            # A quarter of the requests create apps: drawn as one operation of forty, so few
            # creates got through that kills, stops and priority changes met few live apps,
            # and whether any did at all turned on the spec's smallest change.
            create = data.draw(st.integers(0, 3), label="a create") == 0
            case = data.draw(a_create if create else any_operation, label="request")
            fuzz.aim(case, data)
            fuzz.exchange(case)

    run()


def test_operations_interleaved_lose_nothing(fuzz):
    """Every operation against one server, a few at a time in the order drawn: kills, stops,
    priority changes and agent reports meet apps that other requests created or ended."""
    interleave(fuzz)
    fuzz.check_nothing_lost()


# --- the submission checks alone: many more examples, no HTTP ---------------------------------

DEFAULTS = new_apps.Defaults(root=make_config(Path("unused")).queue_tree(), queue="root.default")
PARSER_SETTINGS = settings(FUZZ_SETTINGS, max_examples=400,
                           suppress_health_check=[HealthCheck.function_scoped_fixture])


@PARSER_SETTINGS
@given(options=ARGV_OPTIONS, app=st.sampled_from(["job.py", "hdfs:/a.jar"]),
       args=st.lists(AWKWARD, max_size=2), conf=PROPERTIES, env=PROPERTIES, queue=QUEUE,
       priority=PRIORITY, name=st.none() | AWKWARD)
def test_native_submission_is_accepted_or_refused_by_name(app_file, options, app, args, conf,
                                                         env, queue, priority, name):
    """Whatever the arguments, ``from_argv`` gives an app or a SubmissionError (a 400 naming
    the problem) — never another exception (a 500)."""
    try:
        new_apps.from_argv([*options, app, *args], str(app_file.parent), conf, env, queue,
                              priority, name, DEFAULTS)
    except new_apps.SubmissionError as e:
        refusal_names_the_problem(str(e))


@PARSER_SETTINGS
@given(props=PROPERTIES, env=PROPERTIES | st.dictionaries(AWKWARD, st.integers(), max_size=1),
       app_args=st.none() | st.lists(AWKWARD | st.integers(), max_size=2),
       priority=PRIORITY, main=st.sampled_from(["com.example.Main", "", " ", None, 1]))
def test_rest_submission_is_accepted_or_refused_by_name(props, env, app_args, priority, main):
    body = {"action": "CreateSubmissionRequest", "appResource": "hdfs:/a.jar", "mainClass": main,
            "sparkProperties": props, "environmentVariables": env, "appArgs": app_args,
            "priority": priority}
    try:
        app, _ = new_apps.from_rest(body, DEFAULTS)
    except new_apps.SubmissionError as e:
        refusal_names_the_problem(str(e))
        return
    assert all(isinstance(v, str) for v in env.values())  # forwarded to the master as given
    assert all(isinstance(a, str) for a in app_args or [])


@PARSER_SETTINGS
@given(conf=PROPERTIES, queue=QUEUE, priority=PRIORITY, name=st.none() | AWKWARD)
def test_session_is_accepted_or_refused_by_name(conf, queue, priority, name):
    try:
        new_apps.from_session(name, queue, priority, conf, DEFAULTS)
    except new_apps.SubmissionError as e:
        refusal_names_the_problem(str(e))


# --- what the fuzzing found: one named test per bug ------------------------------------------


@pytest.fixture
def front(offline_app):
    """The app as ``sessionsched serve`` runs it (Spark's protocol answered in front)."""
    with TestClient(asgi(offline_app())) as c:
        yield c


def _no_apps_stored(front, db) -> None:
    assert front.get("/api/v1/apps").json() == []
    assert rows(db, "select count(*) from apps") == [(0,)]


def test_openapi_declares_the_error_shape_it_serves(front):
    """Found: every refusal (400, 404, 409, 503) was undeclared, and the declared 422 was
    FastAPI's list of errors while the server answers ``{"detail": "one line"}``."""
    spec = front.get("/openapi.json").json()
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    error = {"$ref": "#/components/schemas/ErrorOut"}
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            for status, answer in op["responses"].items():
                if status.startswith(("4", "5")):
                    assert answer["content"] == {"application/json": {"schema": error}}, (
                        method, path, status)
    assert set(spec["paths"]["/api/v1/apps/{app_id}/priority"]["post"]["responses"]) == {
        "200", "400", "404", "409", "422", "503"}


# Found: str.isdigit() takes "²" (int() refuses it: a 500) and lstrip("-") let "--1" through.
DIGIT_LOOKALIKES = [
    ("superscript-executor-cores", {"spark.executor.cores": "²"},
     "spark.executor.cores='²' (from conf): expected a whole number >= 1"),
    ("double-minus-max-executors", {"spark.dynamicAllocation.maxExecutors": "--1"},
     "spark.dynamicAllocation.maxExecutors='--1' (from conf): expected a whole number >= 0"),
    ("superscript-executor-instances", {"spark.dynamicAllocation.enabled": "false",
                                        "spark.executor.instances": "²"},
     "spark.executor.instances='²' (from conf): expected a whole number >= 0"),
    ("arabic-indic-memory", {"spark.executor.memory": "٣g"},
     "spark.executor.memory='٣g' (from conf): expected a size like 512m or 2g"),
    ("superscript-priority", {"spark.ego.priority": "²"},
     "spark.ego.priority='²' (from conf): priority '²' is not a whole number from 1 to 10000"),
    ("double-minus-priority", {"spark.ego.priority": "--5"},
     "spark.ego.priority='--5' (from conf): priority '--5' is not a whole number from 1 to "
     "10000"),
]


@pytest.mark.parametrize("conf,detail", [c[1:] for c in DIGIT_LOOKALIKES],
                         ids=[c[0] for c in DIGIT_LOOKALIKES])
def test_digit_lookalikes_in_a_property_are_refused_by_name(front, app_file, db, conf, detail):
    r = front.post("/api/v1/apps", json={"argv": [app_file.name], "cwd": str(app_file.parent),
                                         "conf": conf})
    assert (r.status_code, r.json()) == (400, {"detail": detail})
    r = front.post("/api/v1/sessions", json={"conf": conf})
    assert (r.status_code, r.json()) == (400, {"detail": detail})
    _no_apps_stored(front, db)


def test_digit_lookalike_priority_in_a_rest_create_is_refused_by_name(front, db):
    r = front.post("/v1/submissions/create", json={
        "action": "CreateSubmissionRequest", "appResource": "hdfs:/a.jar", "mainClass": "M",
        "sparkProperties": {}, "priority": "²"})
    assert r.status_code == 400
    assert r.json()["message"] == (
        "Malformed request: priority '²' is not a whole number from 1 to 10000")
    _no_apps_stored(front, db)


UNREADABLE_BODIES = [
    ("not-utf8", b'{"argv": ["\xff"]}',
     "request body is not valid JSON: not UTF-8 (byte 0xff at position 11)"),
    ("nested-too-deeply", b"[" * 100_000 + b"]" * 100_000,
     "request body is not valid JSON: nested too deeply"),
]


@pytest.mark.parametrize("raw,detail", [c[1:] for c in UNREADABLE_BODIES],
                         ids=[c[0] for c in UNREADABLE_BODIES])
@pytest.mark.parametrize("path", ["/api/v1/apps", "/api/v1/sessions", "/api/v1/agent/heartbeat"])
def test_unreadable_body_is_a_422_naming_it(front, db, path, raw, detail):
    """Found: FastAPI's own 400 "There was an error parsing the body" (undeclared, and
    naming nothing)."""
    r = front.post(path, content=raw, headers={"content-type": "application/json"})
    assert (r.status_code, r.json()) == (422, {"detail": detail})
    _no_apps_stored(front, db)


@pytest.mark.parametrize("path", ["/v1/submissions/create", "/v1/submissions/update/x"])
def test_deeply_nested_spark_rest_body_is_an_error_response(front, db, path):
    """Found: a RecursionError out of the JSON parser, a 500 with an empty body."""
    r = front.post(path, content=b"[" * 100_000 + b"]" * 100_000,
                   headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["message"] == "Malformed request: not JSON: nested too deeply"
    _no_apps_stored(front, db)


@pytest.mark.parametrize("changes,message", [
    ({"environmentVariables": {"HOME": 1}}, "environmentVariables values must be strings: HOME"),
    ({"appArgs": ["a", 2]}, "appArgs must be strings: appArgs[1]"),
], ids=["env-value-a-number", "app-arg-a-number"])
def test_rest_create_with_values_that_are_not_strings_is_refused(front, db, changes, message):
    """Found: accepted, stored and forwarded to the master as given."""
    r = front.post("/v1/submissions/create", json={
        "action": "CreateSubmissionRequest", "appResource": "hdfs:/a.jar", "mainClass": "M",
        **changes})
    assert r.status_code == 400
    assert r.json()["message"] == (
        f"Malformed request: Validation of message CreateSubmissionRequest failed! {message}")
    _no_apps_stored(front, db)


def test_unknown_field_with_a_newline_in_its_name_is_named_on_one_line(front, db):
    """Found: the field name was echoed raw, so the one-line detail had two lines."""
    r = front.post("/api/v1/sessions", json={"a\nb": 1})
    assert (r.status_code, r.json()) == (
        422, {"detail": "'a\\nb': Extra inputs are not permitted"})
    _no_apps_stored(front, db)


def test_a_file_name_with_a_newline_is_refused_in_one_line(front, tmp_path, db):
    """Found: ``application file \\n not found`` — the quoted name broke the one-line detail."""
    r = front.post("/api/v1/apps", json={"argv": ["bad\nname.py"], "cwd": str(tmp_path)})
    assert (r.status_code, r.json()) == (
        400, {"detail": f"application file bad\\nname.py not found (looked in {tmp_path})"})
    r = front.post("/v1/submissions/create", json={
        "action": "CreateSubmissionRequest", "appResource": "hdfs:/a.jar", "mainClass": "M",
        "appArgs": [], "sparkProperties": {"spark.ego.priority": "x\ny"},
        "environmentVariables": {}, "clientSparkVersion": "4.0.1"})
    assert r.status_code == 400 and "\n" not in r.json()["message"]
    assert "'x\\ny'" in r.json()["message"]
    _no_apps_stored(front, db)


# --- with auth mode tokens: every operation as alice, bob, the admin, nobody or a wrong token ---

TEAM_TOKENS = ("alice", "bob", "root", None, "ss_wrong")


def _with_auth_refusals(spec: dict) -> dict:
    """Spark's protocol as served with tokens on: any operation may also be refused (401/403,
    429) with an ErrorResponse."""
    out = copy.deepcopy(spec)
    for operations in out["paths"].values():
        for operation in operations.values():
            for code in ("401", "403", "429"):
                operation.setdefault("responses", {})[code] = _ERROR
    return out


@dataclass
class TeamFuzz(Fuzz):
    tokens: dict[str, str] = field(default_factory=dict)

    def aim(self, case, data) -> None:
        super().aim(case, data)
        who = data.draw(st.sampled_from(TEAM_TOKENS), label="who asks")
        if who is not None:
            token = self.tokens.get(who, who)
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}

    def check_nothing_lost(self) -> None:
        self.client.headers["Authorization"] = f"Bearer {self.tokens['root']}"
        try:
            super().check_nothing_lost()
        finally:
            del self.client.headers["Authorization"]


def test_team_operations_interleaved_no_5xx_and_refusals_store_nothing(offline_app, app_file,
                                                                       db, tmp_path):
    from sessionsched.config import tokens_file as tokens

    path = tmp_path / "tokens.json"
    made = {name: tokens.create(path, name, role)
            for name, role in (("alice", "user"), ("bob", "user"), ("root", "admin"))}
    app = offline_app(auth={"mode": "tokens", "tokens_file": str(path), "run_as_root": True,
                            "submissions_per_minute": 0})
    with TestClient(asgi(app)) as client:
        native = schemathesis.openapi.from_dict(client.get("/openapi.json").json())
        spark_rest = schemathesis.openapi.from_dict(_with_auth_refusals(SPARK_REST_SPEC))
        fuzz = TeamFuzz(client, db, app_file, native, spark_rest, tokens=made)
        r = client.post("/api/v1/apps", headers={"Authorization": f"Bearer {made['alice']}"},
                        json={"argv": [app_file.name], "cwd": str(app_file.parent)})
        assert r.status_code == 201, r.text
        fuzz.acknowledged[r.json()["id"]] = "POST /api/v1/apps"
        interleave(fuzz)
        assert len(fuzz.acknowledged) > 1, "no fuzzed submission got through with a token"
        fuzz.check_nothing_lost()

"""The checks and limits every submission meets at the port, whichever door it came through
(spark-submit arguments from the native API or a Livy batch, Spark's CreateSubmissionRequest,
a session): the intake's checks (invalid), the hostile-input limits and the rate limit
(refused, with the HTTP status each names); nothing refused is stored."""

from __future__ import annotations

import pytest

from sessionsched.operations.outcomes import Kind

LIMITS = {"max_string": 200, "allowed_paths": None}


def rest_body(**extra):
    return {"action": "CreateSubmissionRequest", "appResource": "file:/x.jar",
            "mainClass": "Main", "sparkProperties": {}, **extra}


INVALID = {
    "a relative cwd": ({"cwd": "rel"}, "cwd 'rel' is not an absolute path"),
    "the master chosen by the client": ({"argv": ["--master", "local", "job.py"]},
                                        "--master is chosen by the scheduler; drop it from argv"),
    "an unknown queue": ({"queue": "nope"},
                         "unknown queue 'nope'; known queues: root.default, root.etl"),
    "no application file": ({"argv": ["--class", "A"]},
                            "no application file in argv (options, then app.py or app.jar)"),
}


@pytest.mark.parametrize("body,message", INVALID.values(), ids=INVALID.keys())
def test_a_submission_that_does_not_check_out_is_invalid(port, body, message):
    with port() as p:
        out = p.submit(**body)
        assert out.kind is Kind.INVALID
        assert message in out.message
        assert p.ops.apps() == []


REFUSED = {
    "an environment variable outside env_allow": (
        {"env": {"LD_PRELOAD": "/tmp/evil.so"}}, 400,
        "environment variable LD_PRELOAD may not be passed to a driver "
        "(auth.env_allow: PYSPARK_PYTHON, SPARK_*, TZ, LANG, LC_*)"),
    "a string over max_string": (
        {"name": "x" * 300}, 400,
        "name: a value of 300 characters, at most 200 (it starts 'xxxxxxxxxxxxxxxxxxxxxxxx"
        "xxxxxxxxxxxxxxxx')"),
    # was stored on SQLite, and on PostgreSQL answered 503 quoting the INSERT that failed
    "a user name past the store's 128 characters": (
        {"conf": {"spark.sessionsched.user": "u" * 129}}, 400,
        "user: a name of 129 characters, at most 128 (it starts 'uuuuuuuuuuuuuuuuuuuuuuuu"
        "uuuuuuuuuuuuuuuu')"),
    # was stored, and written into the audit log's lines as it came
    "a user name with a newline": (
        {"conf": {"spark.sessionsched.user": "bob\nINFO audit: alice killed"}}, 400,
        "user: a name with a control character ('bob\\nINFO audit: alice killed')"),
}


@pytest.mark.parametrize("body,status,message", REFUSED.values(), ids=REFUSED.keys())
@pytest.mark.parametrize("mode", ["none", "tokens"])
def test_hostile_input_is_refused_whoever_asks(port, mode, body, status, message):
    with port(auth={"mode": mode, "max_string": 200}) as p:
        out = p.submit("alice" if mode == "tokens" else None, **body)
        assert (out.kind, out.status, out.message) == (Kind.REFUSED, status, message)
        assert p.ops.apps() == []


def test_every_way_in_meets_the_same_limits(port):
    with port(auth={"max_string": 200}) as p:
        alice = p.caller("alice")
        rest = p.run(p.ops.submit_rest(alice, "t", rest_body(
            environmentVariables={"LD_PRELOAD": "/x.so"})))
        session = p.run(p.ops.submit_session(alice, "t", "y" * 300, None, None, {}))
        assert (rest.kind, rest.status) == (Kind.REFUSED, 400)
        assert rest.message.startswith("environment variable LD_PRELOAD")
        assert (session.kind, session.message[:40]) == (
            Kind.REFUSED, "name: a value of 300 characters, at most")
        assert p.ops.apps() == []


def test_allowed_paths_are_403(port, tmp_path):
    with port(auth={"allowed_paths": [str(tmp_path / "elsewhere")]}) as p:
        out = p.submit("alice")
        assert (out.kind, out.status, out.message) == (Kind.REFUSED, 403, (
            f"application file {tmp_path}/job.py is outside auth.allowed_paths "
            f"({tmp_path}/elsewhere)"))


def test_the_rate_limit_is_per_user_and_says_when_to_retry(port):
    with port(auth={"submissions_per_minute": 3}) as p:
        for _ in range(3):
            assert p.submit("alice").ok
        out = p.submit("alice")
        assert (out.kind, out.status) == (Kind.REFUSED, 429)
        assert out.message.startswith("user alice submitted 3 apps in the last minute")
        assert 1 <= out.retry_after <= 60
        assert p.submit("bob").ok  # per user
        assert len(p.ops.apps()) == 4


def test_a_remote_submissions_unknown_upload_is_refused(port):
    with port() as p:
        out = p.submit(argv=["job.py"], uploads={"job.py": "0" * 64})
        assert (out.kind, out.status) == (Kind.REFUSED, 400)
        assert p.ops.apps() == []


def test_spark_rest_answers_its_unknown_fields_with_the_stored_app(port):
    with port() as p:
        out = p.run(p.ops.submit_rest(p.caller(None), "t", rest_body(extra=1)))
        stored, unknown = out.value
        assert (stored.kind, unknown) == ("rest", ["extra"])

"""Our Spark REST answers held against a real Spark 4.0.1 master's, request by request: the same
HTTP status and content type, the master's keys in the master's order (ours may add keys),
the same JSON types, and the same layout line by line (Jackson's pretty printer), since
clients such as Airflow's Spark provider read the answers as lines, not as JSON."""

from __future__ import annotations

import json
import re

import pytest

from tests.doors.spark_rest.test_spark_rest import create_body
from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster

# One "key" : value per line, two spaces in; arrays on the line: [ "a", "b" ].
LINE = re.compile(r'^  "(?P<key>[A-Za-z]+)" : (?P<value>.+?)(?P<comma>,?)$')


def layout(raw: bytes) -> list[str]:
    """The keys of a master-style answer, in order; fails unless every line has the layout."""
    lines = raw.decode().split("\n")
    assert lines[0] == "{" and lines[-1] == "}", raw
    keys = []
    for i, line in enumerate(lines[1:-1], start=1):
        m = LINE.match(line)
        assert m, f"line {i} is not Jackson's layout: {line!r}"
        assert (m["comma"] == ",") == (i < len(lines) - 2), f"comma on line {i}: {line!r}"
        if m["value"].startswith("["):
            assert re.fullmatch(r"\[ .+ \]|\[ \]", m["value"]), line
        keys.append(m["key"])
    json.loads(raw)  # and it is JSON
    return keys


def unknown_fields_body() -> dict:
    """A valid create with two fields a master does not know. Its jar does not exist, so the
    master's worker fails the driver at once, before any JVM starts."""
    return create_body(appResource="file:/nonexistent/sessionsched-layout.jar", foo=1,
                       bar=["x"])


REQUESTS = [
    ("readyz", "GET", "/v1/submissions/readyz", None),
    ("status-unknown", "GET", "/v1/submissions/status/driver-20000101000000-9999", None),
    ("kill-unknown", "POST", "/v1/submissions/kill/driver-20000101000000-9999", None),
    ("create-no-action", "POST", "/v1/submissions/create", b"{}"),
    ("create-no-main-class", "POST", "/v1/submissions/create", create_body(mainClass=None)),
    ("wrong-version", "GET", "/v2/submissions/status/driver-1", None),
    ("create-unknown-fields", "POST", "/v1/submissions/create", "unknown"),
]


@pytest.mark.parametrize("method,path,body", [r[1:] for r in REQUESTS],
                         ids=[r[0] for r in REQUESTS])
def test_answers_are_laid_out_as_the_masters(spark_cluster, client, method, path, body):
    if body == "unknown":
        body = unknown_fields_body()
    kwargs = ({"content": body, "headers": {"content-type": "application/json"}}
              if isinstance(body, bytes) else {"json": body} if body is not None else {})
    theirs = HTTP.request(method, spark_cluster.rest_url + path, timeout=30, **kwargs)
    ours = client.request(method, path, **kwargs)
    assert (ours.status_code, ours.headers["content-type"]) == (
        theirs.status_code, theirs.headers["content-type"])
    their_keys, our_keys = layout(theirs.content), layout(ours.content)
    assert set(their_keys) <= set(our_keys), (their_keys, our_keys)
    assert [k for k in our_keys if k in their_keys] == their_keys  # the master's order
    their_body, our_body = theirs.json(), ours.json()
    for key in their_keys:
        assert type(our_body[key]) is type(their_body[key]), key
    for key in ("action", "success", "serverSparkVersion", "highestProtocolVersion",
                "unknownFields"):
        assert our_body.get(key) == their_body.get(key), key

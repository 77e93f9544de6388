"""Jackson's default pretty printer, as a Spark master's REST answers are written (the bytes
of a real master's answers are checked in test_spark_rest_layout)."""

from __future__ import annotations

import json

import pytest

from sessionsched.doors.spark_rest.jackson import dumps

CASES = [
    ("keys-sorted", {"success": True, "action": "A"},
     '{\n  "action" : "A",\n  "success" : true\n}'),
    ("array-on-one-line", {"unknownFields": ["foo", "bar"]},
     '{\n  "unknownFields" : [ "foo", "bar" ]\n}'),
    ("empty-containers", {"a": [], "b": {}}, '{\n  "a" : [ ],\n  "b" : { }\n}'),
    ("nested-object", {"o": {"k": 1, "n": None}},
     '{\n  "o" : {\n    "k" : 1,\n    "n" : null\n  }\n}'),
    ("control-characters-upper-hex", {"m": "a\x1fb\nc"}, '{\n  "m" : "a\\u001Fb\\nc"\n}'),
    ("utf8-not-escaped", {"m": "café"}, '{\n  "m" : "café"\n}'),
]


@pytest.mark.parametrize("body,text", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_layout(body, text):
    assert dumps(body) == text.encode()
    assert json.loads(dumps(body)) == body


def test_not_json_data_is_refused():
    with pytest.raises(TypeError, match="not JSON data: set"):
        dumps({"a": {1}})

"""Groups for submit permissions: a configuration naming what does not exist is refused at load
with the queue and the group named. Who may submit where (``auth.groups``, queues'
``submit_groups``) is the port's rule: tests/operations/test_rules.py::test_who_may_submit."""

from __future__ import annotations

import pytest

from sessionsched.config import ConfigError, ServerConfig, parse_model

BAD = {
    "an unknown group": (
        {"auth": {"groups": {"etl": ["alice"]}}, "defaults": {"queue": "root.a.b"},
         "queues": [{"name": "root", "queues": [{"name": "a", "queues": [
             {"name": "b", "submit_groups": ["etl", "ops"]}]}]}]},
        "queue root.a.b: submit_groups names 'ops', which is not a group of auth.groups"),
    "a bad group name": (
        {"auth": {"groups": {"e tl": ["alice"]}}},
        "auth.groups: group name 'e tl' must be 1-64 letters, digits or ._-"),
    "a bad user name": (
        {"auth": {"groups": {"etl": ["al ice"]}}},
        "auth.groups: group etl: user name 'al ice' must be 1-64 letters, digits or ._@- "
        "(starting with a letter or digit)"),
    "not a list of users": (
        {"auth": {"groups": {"etl": "alice"}}}, "auth.groups.etl: Input should be a valid list"),
}


@pytest.mark.parametrize("data,message", BAD.values(), ids=BAD.keys())
def test_bad_groups_are_refused_at_load(data, message):
    with pytest.raises(ConfigError) as err:
        parse_model(ServerConfig, data, "server.yaml")
    assert str(err.value) == f"server.yaml: {message}"

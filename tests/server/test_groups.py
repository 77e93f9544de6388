"""Groups for submit permissions: ``auth.groups`` and queues' ``submit_groups`` (with tokens),
checked in-process on the offline cluster; a configuration naming what does not exist is
refused at load with the queue and the group named."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from server_helpers import make_config

from sessionsched import tokens
from sessionsched.config import ConfigError, ServerConfig, parse_model
from sessionsched.server.app import create_app

GROUPS = {"etl": ["alice"], "analysts": ["carol"]}
QUEUES = [{"name": "root", "queues": [
    {"name": "default"},
    {"name": "etl", "submit_groups": ["etl"], "submit_users": ["bob"]},
    {"name": "lab", "submit_groups": ["analysts"], "queues": [
        {"name": "small"},  # sets neither list: its parent's apply
        {"name": "open", "submit_users": ["dave"], "submit_groups": ["etl", "analysts"]},
    ]},
]}]

WHO_MAY = {
    "a group member": ("alice", "etl", 201, None),
    "a listed user beside the groups": ("bob", "etl", 201, None),
    "in no group and not listed": (
        "carol", "etl", 403,
        "user carol may not submit to queue root.etl (submit_users: bob; submit_groups: etl)"),
    "a parent's group applies below it": ("carol", "lab.small", 201, None),
    "a parent's group only": (
        "alice", "lab.small", 403,
        "user alice may not submit to queue root.lab.small (submit_groups: analysts)"),
    "the child's own lists": ("alice", "lab.open", 201, None),
    "no lists: everyone": ("dave", "default", 201, None),
    "an admin anywhere": ("root", "lab.small", 201, None),
}


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    path = tmp_path_factory.mktemp("team") / "tokens.json"
    made = {u: tokens.create(path, u, "admin" if u == "root" else "user")
            for u in ("alice", "bob", "carol", "dave", "root")}
    return path, made


@pytest.mark.parametrize("user,queue,status,detail", WHO_MAY.values(), ids=WHO_MAY.keys())
def test_who_may_submit(tmp_path, offline_cluster, team, user, queue, status, detail):
    path, made = team
    app = tmp_path / "job.py"
    app.write_text("print('hi')\n")
    config = make_config(tmp_path / "state", cluster=offline_cluster, queues=QUEUES,
                         auth={"mode": "tokens", "tokens_file": str(path), "run_as_root": True,
                               "groups": GROUPS})
    with TestClient(create_app(config)) as client:
        r = client.post("/api/v1/apps", headers={"Authorization": f"Bearer {made[user]}"},
                        json={"argv": [str(app)], "cwd": str(tmp_path), "queue": queue})
        assert r.status_code == status, r.text
        if detail is not None:
            assert r.json()["detail"] == detail
            assert client.get("/api/v1/apps", headers={
                "Authorization": f"Bearer {made['root']}"}).json() == []


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

"""``server.retained_ended_apps``: only the most recently ended apps stay in memory and in the
list; older ones are forgotten by the engine and the service, and still answered by id from the
store (native reads, Spark REST status), with their real final state. In-process, on a cluster
that cannot be reached: apps queue, and killing them ends them."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.support.server_helpers import wait_until

RETAINED = 2


def submit(client, app_file) -> str:
    r = client.post("/api/v1/apps", json={"argv": [app_file.name], "cwd": str(app_file.parent)})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def listed(client) -> dict[str, str]:
    return {a["id"]: a["state"] for a in client.get("/api/v1/apps").json()}


def service_of(client):
    return client.app.state.service


def end_four(client, app_file) -> tuple[list[str], str]:
    """Submit 5 apps, kill the first 4 in order (they end oldest first); the 5th stays queued."""
    ids = [submit(client, app_file) for _ in range(5)]
    for app_id in ids[:4]:
        r = client.post(f"/api/v1/apps/{app_id}/kill")
        assert (r.status_code, r.json()["state"]) == (200, "KILLED"), r.text
    return ids[:4], ids[4]


def forgotten(client, ids: list[str]) -> bool:
    """The engine (its published view) and the service's registry both let go of these apps."""
    view = service_of(client).view
    return all(i not in view.submissions and i not in view.engine.apps and i not in view.final
               for i in ids)


def check_forgotten_still_answer(client, old: list[str]) -> None:
    for app_id in old:
        r = client.get(f"/api/v1/apps/{app_id}")
        assert r.status_code == 200, r.text
        app = r.json()
        assert (app["state"], app["position"]) == ("KILLED", None)
        assert app["finished_at"] is not None and app["submitted_at"] is not None
        kinds = [e["kind"] for e in client.get(f"/api/v1/apps/{app_id}/events").json()]
        assert kinds == ["submitted", "kill", "state"]
        status = client.get(f"/v1/submissions/status/{app_id}").json()
        assert (status["success"], status["driverState"], status["schedulerState"]) == (
            True, "KILLED", "KILLED")
        r = client.post(f"/api/v1/apps/{app_id}/kill")
        ended = {"detail": f"{app_id} has already ended (KILLED)"}
        assert (r.status_code, r.json()) == (409, ended)
        r = client.post(f"/api/v1/apps/{app_id}/priority", json={"priority": 9000})
        assert r.status_code == 409, r.text
        spark_kill = client.post(f"/v1/submissions/kill/{app_id}").json()
        assert spark_kill["success"] is False
    r = client.get(f"/api/v1/apps/{old[0]}/log")
    assert r.status_code == 404 and "no driver log" in r.json()["detail"]


def test_only_the_most_recently_ended_apps_stay_in_memory(offline_app, app_file):
    with TestClient(offline_app(server={"retained_ended_apps": RETAINED})) as client:
        ended, live = end_four(client, app_file)
        old, recent = ended[:2], ended[2:]
        wait_until(lambda: forgotten(client, old), timeout_s=10, what="the oldest to be forgotten")
        assert listed(client) == {live: "ACCEPTED", recent[0]: "KILLED", recent[1]: "KILLED"}
        assert service_of(client).retention.ended_ids() == recent
        assert service_of(client).engine.check() == []
        check_forgotten_still_answer(client, old)
        unknown = client.get("/v1/submissions/status/driver-nope").json()
        assert unknown["success"] is False


def test_a_restart_loads_only_the_retained_ended_apps(offline_app, app_file):
    with TestClient(offline_app(server={"retained_ended_apps": RETAINED})) as client:
        ended, live = end_four(client, app_file)
        wait_until(lambda: forgotten(client, ended[:2]), timeout_s=10, what="forgetting")
    with TestClient(offline_app(server={"retained_ended_apps": RETAINED})) as client:
        assert listed(client) == {live: "ACCEPTED", ended[2]: "KILLED", ended[3]: "KILLED"}
        assert service_of(client).retention.ended_ids() == ended[2:]
        check_forgotten_still_answer(client, ended[:2])
    # A smaller limit at the next start: fewer loaded; zero: no ended app in memory at all.
    with TestClient(offline_app(server={"retained_ended_apps": 0})) as client:
        assert listed(client) == {live: "ACCEPTED"}
        check_forgotten_still_answer(client, ended)
        r = client.post(f"/api/v1/apps/{live}/kill")
        assert r.status_code == 200, r.text
        wait_until(lambda: forgotten(client, [live]), timeout_s=10, what=f"{live} forgotten")
        assert listed(client) == {}
        assert client.get(f"/api/v1/apps/{live}").json()["state"] == "KILLED"

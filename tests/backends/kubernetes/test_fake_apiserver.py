"""The fake API server's own behaviour, through the official ``kubernetes`` client (and a
plain WebSocket client for WebSocket watches): what the backend and real Spark rely on."""

from __future__ import annotations

import json
import threading

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException
from websockets.sync.client import connect

NS = "team"


def pod(name: str, labels: dict | None = None, owner: dict | None = None) -> dict:
    meta: dict = {"name": name, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "img"}]}}


def test_create_assigns_identity_and_refuses_duplicates(core):
    made = core.create_namespaced_pod(NS, pod("a"))
    assert made.metadata.uid and made.metadata.creation_timestamp is not None
    assert int(made.metadata.resource_version) > 0
    assert made.status.phase == "Pending"
    again = core.read_namespaced_pod("a", NS)
    assert again.metadata.uid == made.metadata.uid
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod(NS, pod("a"))
    assert e.value.status == 409 and json.loads(e.value.body)["reason"] == "AlreadyExists"
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod("missing", NS)
    assert e.value.status == 404
    named = core.create_namespaced_pod(NS, {"metadata": {"generateName": "exec-"},
                                            "spec": {"containers": []}})
    assert named.metadata.name.startswith("exec-") and len(named.metadata.name) > 5


def test_replace_with_stale_resource_version_conflicts(core):
    made = core.create_namespaced_config_map(NS, {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    fresh = core.replace_namespaced_config_map(
        "cm", NS, {"metadata": {"name": "cm", "resourceVersion": made.metadata.resource_version},
                   "data": {"a": "2"}})
    assert fresh.data == {"a": "2"}
    assert int(fresh.metadata.resource_version) > int(made.metadata.resource_version)
    with pytest.raises(ApiException) as e:
        core.replace_namespaced_config_map(
            "cm", NS, {"metadata": {"name": "cm",
                                    "resourceVersion": made.metadata.resource_version},
                       "data": {"a": "3"}})
    assert e.value.status == 409


def test_label_and_field_selectors(core, fake):
    core.create_namespaced_pod(NS, pod("d", {"spark-role": "driver", "app": "x"}))
    core.create_namespaced_pod(NS, pod("e1", {"spark-role": "executor", "app": "x"}))
    core.create_namespaced_pod(NS, pod("e2", {"spark-role": "executor", "app": "y",
                                              "spark-exec-inactive": "true"}))
    core.create_namespaced_pod("other", pod("f", {"app": "x"}))
    fake.set_pod_phase(NS, "e1", "Running")

    def names(**kw):
        return sorted(p.metadata.name for p in core.list_namespaced_pod(NS, **kw).items)

    assert names(label_selector="spark-role=executor") == ["e1", "e2"]
    assert names(label_selector="spark-role=executor,spark-exec-inactive!=true") == ["e1"]
    assert names(label_selector="app in (x, y),spark-role!=driver") == ["e1", "e2"]
    assert names(label_selector="!spark-exec-inactive") == ["d", "e1"]
    assert names(field_selector="status.phase=Running") == ["e1"]
    assert names(field_selector="metadata.name!=d,status.phase!=Running") == ["e2"]
    everywhere = core.list_pod_for_all_namespaces(label_selector="app=x").items
    assert sorted(p.metadata.name for p in everywhere) == ["d", "e1", "f"]
    with pytest.raises(ApiException) as e:
        core.list_namespaced_pod(NS, field_selector="spec.containers=x")
    assert e.value.status == 400


def test_server_side_apply_creates_then_merges(core):
    api = core.api_client
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {k: v1}\n"

    def apply(text, manager="fabric8"):
        q = f"?fieldManager={manager}&force=true" if manager else ""
        return api.rest_client.request(
            "PATCH", f"{api.configuration.host}/api/v1/namespaces/{NS}/configmaps/conf{q}",
            headers={"Content-Type": "application/apply-patch+yaml"}, body=text)

    created = apply(body)
    assert created.status == 201
    assert core.read_namespaced_config_map("conf", NS).data == {"k": "v1"}
    updated = apply(body.replace("{k: v1}", "{k: v2, j: w}"))
    assert updated.status == 200
    assert core.read_namespaced_config_map("conf", NS).data == {"k": "v2", "j": "w"}
    assert apply(body, manager=None).status == 400
    merged = core.patch_namespaced_config_map("conf", NS, {"data": {"j": None}})
    assert merged.data == {"k": "v2"}


def test_immutable_configmap_refuses_changes(core):
    core.create_namespaced_config_map(NS, {"metadata": {"name": "im"}, "immutable": True,
                                           "data": {"a": "1"}})
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_config_map("im", NS, {"data": {"a": "2"}})
    assert e.value.status == 422


def test_delete_cascades_to_owned_objects_and_orphan_keeps_them(core):
    owner = core.create_namespaced_pod(NS, pod("driver"))
    ref = {"apiVersion": "v1", "kind": "Pod", "name": "driver", "uid": owner.metadata.uid}
    core.create_namespaced_service(NS, {"metadata": {"name": "svc", "ownerReferences": [ref]},
                                        "spec": {"clusterIP": "None"}})
    core.create_namespaced_config_map(NS, {"metadata": {"name": "cm", "ownerReferences": [ref]}})
    core.delete_namespaced_pod("driver", NS, body=client.V1DeleteOptions(
        propagation_policy="Background"))
    assert core.list_namespaced_service(NS).items == []
    assert core.list_namespaced_config_map(NS).items == []

    owner = core.create_namespaced_pod(NS, pod("driver2"))
    ref = {**ref, "name": "driver2", "uid": owner.metadata.uid}
    core.create_namespaced_config_map(NS, {"metadata": {"name": "kept",
                                                        "ownerReferences": [ref]}})
    core.delete_namespaced_pod("driver2", NS, propagation_policy="Orphan")
    kept = core.read_namespaced_config_map("kept", NS)
    assert not kept.metadata.owner_references


def test_delete_collection_by_label_selector(core):
    for name, role in (("e1", "executor"), ("e2", "executor"), ("d", "driver")):
        core.create_namespaced_pod(NS, pod(name, {"spark-role": role}))
    core.delete_collection_namespaced_pod(NS, label_selector="spark-role=executor")
    assert [p.metadata.name for p in core.list_namespaced_pod(NS).items] == ["d"]


def test_phase_hook_sets_container_exit_code(core, fake):
    core.create_namespaced_pod(NS, pod("p"))
    fake.set_pod_phase(NS, "p", "Failed", exit_code=3)
    got = core.read_namespaced_pod("p", NS)
    assert got.status.phase == "Failed"
    assert got.status.container_statuses[0].state.terminated.exit_code == 3


def test_http_watch_from_now_then_resumes_and_honours_timeout(core, fake):
    core.create_namespaced_pod(NS, pod("old", {"r": "x"}))
    listed = core.list_namespaced_pod(NS)
    rv = listed.metadata.resource_version
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    def follow():
        w = watch.Watch()
        for ev in w.stream(core.list_namespaced_pod, NS, resource_version=rv,
                           label_selector="r=x", timeout_seconds=3):
            seen.append((ev["type"], ev["object"].metadata.name))
        done.set()

    t = threading.Thread(target=follow)
    t.start()
    from tests.sparkcluster import wait_until

    wait_until(lambda: fake.state.watchers, 5, "the watch to open")
    core.create_namespaced_pod(NS, pod("new", {"r": "x"}))
    core.create_namespaced_pod(NS, pod("ignored", {"r": "y"}))
    fake.set_pod_phase(NS, "new", "Running")
    core.patch_namespaced_pod("new", NS, {"metadata": {"labels": {"r": "z"}}})
    assert done.wait(10), "timeoutSeconds=3 did not end the watch"
    t.join()
    assert seen == [("ADDED", "new"), ("MODIFIED", "new"), ("DELETED", "new")]


def test_watch_from_a_compacted_version_gets_410(core, fake):
    core.create_namespaced_pod(NS, pod("a"))
    rv = core.list_namespaced_pod(NS).metadata.resource_version
    fake.end_watches(compact=True)
    w = watch.Watch()
    with pytest.raises(ApiException) as e:
        for _ in w.stream(core.list_namespaced_pod, NS, resource_version=rv, timeout_seconds=2):
            pass
    assert e.value.status == 410
    fake.fail(410, r"/pods$", "GET", watch=True)
    with pytest.raises(ApiException) as e:
        for _ in w.stream(core.list_namespaced_pod, NS, timeout_seconds=2):
            pass
    assert e.value.status == 410


def test_injected_errors_hit_matching_requests_only(core, fake):
    fake.fail(500, r"/pods$", "POST", times=1)
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod(NS, pod("a"))
    assert e.value.status == 500
    core.create_namespaced_pod(NS, pod("a"))  # the fault was used up
    fake.fail(404, r"/nodes", "GET")
    with pytest.raises(ApiException) as e:
        core.list_node()
    assert e.value.status == 404
    assert core.list_node().items == []


def test_websocket_watch_sends_one_event_per_message(core, fake):
    fake.add_node("n1", cpu="8", memory="16Gi")
    core.create_namespaced_pod(NS, pod("d", {"spark-role": "driver"}))
    url = fake.url.replace("http://", "ws://") + (
        f"/api/v1/namespaces/{NS}/pods?fieldSelector=metadata.name%3Dd"
        "&allowWatchBookmarks=true&watch=true&timeoutSeconds=5")
    with connect(url, open_timeout=5) as ws:
        first = json.loads(ws.recv(timeout=5))
        assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "d")
        fake.set_pod_phase(NS, "d", "Failed", exit_code=1)
        changed = json.loads(ws.recv(timeout=5))
        assert changed["type"] == "MODIFIED"
        assert changed["object"]["status"]["phase"] == "Failed"


def test_seeded_nodes_and_foreign_pods(core, fake):
    fake.add_node("n1", cpu="4", memory="8Gi", labels={"pool": "spark"})
    fake.add_pod("other", "db", cpu="500m", memory="1Gi", node="n1")
    nodes = core.list_node(label_selector="pool=spark").items
    assert [n.metadata.name for n in nodes] == ["n1"]
    assert nodes[0].status.allocatable == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    db = core.read_namespaced_pod("db", "other")
    assert db.spec.node_name == "n1" and db.status.phase == "Running"
